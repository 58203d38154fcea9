package trace

import (
	"strconv"
	"strings"
	"testing"
)

func TestReadCountsRejectsBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"":          "empty trace",
		"1\n2\nx\n": "t.txt:3: want a request count",
		"1\n-4\n":   "t.txt:2: negative request count -4",
		"1\n\n2\n":  "t.txt:2: want a request count",
	} {
		_, err := ReadCounts(strings.NewReader(in), "t.txt")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

func TestFillGapsSmoothScale(t *testing.T) {
	r := Rates{0, 4, 0, 0, 8, 2}
	got := r.FillGaps()
	want := Rates{4, 4, 4, 4, 8, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FillGaps = %v, want %v", got, want)
		}
	}
	// window 2, step 2: steps at 0, 2, 4 average the preceding 2 s.
	s := Rates{2, 4, 6, 8, 10, 12}.Smooth(2, 2)
	wantS := Rates{2, 2, 5, 5, 9, 9}
	for i := range wantS {
		if s[i] != wantS[i] {
			t.Fatalf("Smooth = %v, want %v", s, wantS)
		}
	}
	sc, f := Rates{1, 5, 2}.ScaleToPeak(1000)
	if f != 200 || sc[1] != 1000 || sc[2] != 400 {
		t.Fatalf("ScaleToPeak = %v, %v", sc, f)
	}
}

func TestTwitterEmbedded(t *testing.T) {
	r, err := Twitter()
	if err != nil {
		t.Fatal(err)
	}
	if len(r) != 604800 {
		t.Fatalf("len = %d, want 7 days of seconds", len(r))
	}
	// data/README.md: every day has a 1,739 s run of zeros at offset 84,661.
	if r[84661] != 0 || r[84661+1738] != 0 || r.FillGaps()[84661] == 0 {
		t.Fatal("expected the documented gap and its filling")
	}
}

// TestQuote: short input quoted whole; longer input by its first 80
// characters (not bytes), with its length.
func TestQuote(t *testing.T) {
	if got := Quote("a\"b"); got != `"a\"b"` {
		t.Errorf("Quote(a\"b) = %s", got)
	}
	s := strings.Repeat("é", 100) // 2 bytes each
	want := `"` + strings.Repeat("é", 80) + `"... (200 bytes)`
	if got := Quote(s); got != want {
		t.Errorf("Quote of 100 é = %s, want %s", got, want)
	}
	if got := Quote(strings.Repeat("a", 80)); got != `"`+strings.Repeat("a", 80)+`"` {
		t.Errorf("80 characters cut: %s", got)
	}
}

// TestReadUnknownFormatQuotesAtMost80: a 2 kB header line of an unknown
// format (a per-function trace given as --trace) is quoted by its first 80
// characters, not echoed whole.
func TestReadUnknownFormatQuotesAtMost80(t *testing.T) {
	head := "HashOwner,HashApp,HashFunction,Trigger"
	for m := 480; len(head) < 2000; m++ {
		head += "," + strconv.Itoa(m)
	}
	_, err := Read(strings.NewReader(head+"\no,a,f,http,1\n"), "f.csv")
	if err == nil {
		t.Fatal("a per-function trace read as a per-second one")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "f.csv:1: unknown trace format") || !strings.Contains(msg, `"`+head[:80]+`"...`) || len(msg) > 400 {
		t.Errorf("err (%d characters) = %s; want file:1, the reason and the header's first 80 characters", len(msg), msg)
	}
}
