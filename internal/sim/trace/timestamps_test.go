package trace

import (
	"strings"
	"testing"
)

// TestReadTimestampsBinsPerSecond: three requests in second 0 (one at
// .999), none in second 1, two in second 2, after a header.
func TestReadTimestampsBinsPerSecond(t *testing.T) {
	in := "TIMESTAMP,ContextTokens\n" +
		"2023-11-16 18:17:03.0000000,1\n" +
		"2023-11-16 18:17:03.5000000,1\n" +
		"2023-11-16 18:17:03.9990000,1\n" +
		"2023-11-16T18:17:05Z,1\n" +
		"2023-11-16 18:17:05.2,1\n"
	r, err := ReadTimestamps(strings.NewReader(in), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := Rates{3, 0, 2}
	if len(r) != len(want) {
		t.Fatalf("rates %v, want %v", r, want)
	}
	for i := range want {
		if r[i] != want[i] {
			t.Fatalf("rates %v, want %v", r, want)
		}
	}
}

// TestReadRejectsBadInput: the line number and the reason, for both
// formats and for a format that is neither.
func TestReadRejectsBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"":             "t.txt: empty trace",
		"\n\n":         "t.txt: empty trace",
		"TIMESTAMP\n":  "t.txt:1: unknown trace format",
		"hello\nworld": "t.txt:1: unknown trace format",
		"3\n-1\n":      "t.txt:2: negative request count -1",
		"2023-11-16 18:17:05\n2023-11-16 18:17:04\n":  "t.txt:2: timestamps out of order",
		"TIMESTAMP\n2023-11-16 18:17:05\nyesterday\n": "t.txt:3: want a timestamp",
		"1.5\n": "t.txt:1: unknown trace format",
	} {
		_, err := Read(strings.NewReader(in), "t.txt")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
	// Both formats read through Read.
	if r, err := Read(strings.NewReader("4\n0\n2\n"), "t.txt"); err != nil || len(r) != 3 || r[0] != 4 {
		t.Errorf("counts: %v %v", r, err)
	}
	if r, err := Read(strings.NewReader("2023-11-16T18:17:05Z\n2023-11-16T18:17:06Z\n"), "t.txt"); err != nil || len(r) != 2 || r[1] != 1 {
		t.Errorf("timestamps: %v %v", r, err)
	}
}

// TestAzureCodeEmbedded: every one of the file's 8,819 requests (the last line has no newline) is counted,
// over about 57 minutes (data/README.md).
func TestAzureCodeEmbedded(t *testing.T) {
	r, err := AzureCode()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, v := range r {
		total += v
	}
	if total != 8819 {
		t.Errorf("%v requests, want 8819", total)
	}
	if len(r) < 50*60 || len(r) > 60*60 {
		t.Errorf("%d seconds, want about 57 minutes", len(r))
	}
}
