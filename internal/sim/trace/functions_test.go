package trace

import (
	"strings"
	"testing"
)

// TestReadFunctions: ids, trigger, counts and first minute of each row; a
// display name that is the hash's first 8 characters, longer where two
// hashes share them; per-second rates of count/60 for each second of the
// minute.
func TestReadFunctions(t *testing.T) {
	in := "HashOwner,HashApp,HashFunction,Trigger,480,481,482\n" +
		"o1,a1,abcdef0123456789,http,60,0,120\n" +
		"o2,a2,abcdef0199999999,timer,1,2,3\n" +
		"\n" + // blank lines are skipped
		"o3,a3,ffff,queue,0,0,6\n"
	fs, err := ReadFunctions(strings.NewReader(in), "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	if fs.FirstMinute != 480 || fs.Minutes != 3 || len(fs.Functions) != 3 {
		t.Fatalf("first minute %d, %d minutes, %d functions; want 480, 3, 3", fs.FirstMinute, fs.Minutes, len(fs.Functions))
	}
	f := fs.Functions[0]
	if f.Owner != "o1" || f.App != "a1" || f.Hash != "abcdef0123456789" || f.Trigger != "http" || f.Line != 2 || f.Total() != 180 {
		t.Errorf("first function %+v", f)
	}
	for i, want := range []string{"abcdef012", "abcdef019", "ffff"} {
		if got := fs.Functions[i].Name; got != want {
			t.Errorf("function %d named %q, want %q", i, got, want)
		}
	}
	if fs.Functions[2].Line != 5 {
		t.Errorf("third function on line %d, want 5", fs.Functions[2].Line)
	}
	r := f.Rates()
	if len(r) != 180 {
		t.Fatalf("%d seconds of rates, want 3 minutes", len(r))
	}
	for sec, want := range map[int]float64{0: 1, 59: 1, 60: 0, 119: 0, 120: 2, 179: 2} {
		if r[sec] != want {
			t.Errorf("second %d: rate %v, want %v", sec, r[sec], want)
		}
	}
	if got := fs.Functions[1].Rates().Mean() * 180; got < 6-1e-9 || got > 6+1e-9 {
		t.Errorf("rates of counts 1, 2, 3 add up to %v requests, want 6", got)
	}
}

// TestReadFunctionsRejectsBadInput: file:line and the reason for each kind
// of bad input.
func TestReadFunctionsRejectsBadInput(t *testing.T) {
	const h = "HashOwner,HashApp,HashFunction,Trigger,1,2\n"
	for name, c := range map[string]struct{ in, want string }{
		"empty":              {"", "f.csv: empty trace"},
		"no minute columns":  {"HashOwner,HashApp,HashFunction,Trigger\no,a,f,http\n", "f.csv:1: no minute columns"},
		"not consecutive":    {"HashOwner,HashApp,HashFunction,Trigger,1,2,4\n", "f.csv:1: minute columns not consecutive: column 7 is minute 4, want 3"},
		"minute not integer": {"HashOwner,HashApp,HashFunction,Trigger,1,x\n", `f.csv:1: column 6 of the header is "x", want a minute number`},
		"wrong id columns":   {"Owner,App,Function,Trigger,1\n", `f.csv:1: not a per-function trace: column 1 of the header is "Owner", want HashOwner`},
		"no rows":            {h, "f.csv: no functions"},
		"too few columns":    {h + "o,a,f,http,1,2\no,a,g,http,1\n", "f.csv:3: malformed row: want 6 columns (HashOwner, HashApp, HashFunction, Trigger and 2 minutes), got 5"},
		"too many columns":   {h + "o,a,f,http,1,2,3\n", "f.csv:2: malformed row: want 6 columns"},
		"not an integer":     {h + "o,a,f,http,1,2\no,a,g,http,1.5,2\n", `f.csv:3: malformed row: minute 1 (column 5): want an invocation count, got "1.5"`},
		"negative":           {h + "o,a,f,http,1,-3\n", "f.csv:2: minute 2 (column 6): negative invocation count -3"},
		"empty hash":         {h + "o,a,,http,1,2\n", "f.csv:2: malformed row: HashFunction is empty"},
		"repeated function":  {h + "o,a,f,http,1,2\no,a,f,http,1,2\n", `f.csv:3: function "f" repeated (first on line 2)`},
		"bad quoting":        {h + "o,a,\"f,http,1,2\n", "f.csv:2: malformed row: "},
	} {
		_, err := ReadFunctions(strings.NewReader(c.in), "f.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

// TestReadFunctionsQuotesAtMost80: a 2,000-character count is quoted by
// its first 80 characters.
func TestReadFunctionsQuotesAtMost80(t *testing.T) {
	long := strings.Repeat("7x", 1000)
	_, err := ReadFunctions(strings.NewReader("HashOwner,HashApp,HashFunction,Trigger,1\no,a,f,http,"+long+"\n"), "f.csv")
	if err == nil {
		t.Fatal("a 2,000-character count was accepted")
	}
	want := "got " + `"` + long[:80] + `"... (2000 bytes)`
	if !strings.HasSuffix(err.Error(), want) || len(err.Error()) > 300 {
		t.Errorf("err = %v (%d characters), want it to end %s", err, len(err.Error()), want)
	}
}

// TestAzureFunctionsEmbedded: the shipped file's 500 functions over 480
// minutes from minute 480, with the README's totals (3,037,902
// invocations; the busiest 1,915,521, an event function).
func TestAzureFunctionsEmbedded(t *testing.T) {
	fs, err := AzureFunctions()
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.Functions) != 500 || fs.Minutes != 480 || fs.FirstMinute != 480 {
		t.Fatalf("%d functions, %d minutes from %d; want 500, 480 from 480", len(fs.Functions), fs.Minutes, fs.FirstMinute)
	}
	var total, busiest int64
	trigger := ""
	names := map[string]bool{}
	for _, f := range fs.Functions {
		total += f.Total()
		if f.Total() > busiest {
			busiest, trigger = f.Total(), f.Trigger
		}
		if names[f.Name] || len(f.Name) < 8 {
			t.Errorf("display name %q repeated or short", f.Name)
		}
		names[f.Name] = true
	}
	if total != 3037902 || busiest != 1915521 || trigger != "event" {
		t.Errorf("%d invocations, busiest %d (%s); want 3037902, 1915521 (event)", total, busiest, trigger)
	}
}
