package trace

import (
	"fmt"
	"slices"
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
		"empty":                              {"", "f.csv: empty trace"},
		"no minute columns":                  {"HashOwner,HashApp,HashFunction,Trigger\no,a,f,http\n", "f.csv:1: no minute columns"},
		"not consecutive":                    {"HashOwner,HashApp,HashFunction,Trigger,1,2,4\n", "f.csv:1: minute columns not consecutive: column 7 is minute 4, want 3"},
		"minute not integer":                 {"HashOwner,HashApp,HashFunction,Trigger,1,x\n", `f.csv:1: column 6 of the header is "x": want HashOwner, HashApp, HashFunction, Trigger or a minute (N or minute_N)`},
		"unknown column":                     {"Owner,App,Function,Trigger,1\n", `f.csv:1: column 1 of the header is "Owner": want HashOwner, HashApp, HashFunction, Trigger or a minute (N or minute_N)`},
		"no rows":                            {h, "f.csv: no functions"},
		"too few columns":                    {h + "o,a,f,http,1,2\no,a,g,http,1\n", "f.csv:3: malformed row: want 6 columns (the header's: HashOwner, HashApp, HashFunction, Trigger and 2 minutes), got 5"},
		"too many columns":                   {h + "o,a,f,http,1,2,3\n", "f.csv:2: malformed row: want 6 columns"},
		"not an integer":                     {h + "o,a,f,http,1,2\no,a,g,http,1.5,2\n", `f.csv:3: malformed row: minute 1 (column 5): want an invocation count, got "1.5"`},
		"negative":                           {h + "o,a,f,http,1,-3\n", "f.csv:2: minute 2 (column 6): negative invocation count -3"},
		"empty hash":                         {h + "o,a,,http,1,2\n", "f.csv:2: malformed row: HashFunction is empty"},
		"repeated function":                  {h + "o,a,f,http,1,2\no,a,f,http,1,2\n", `f.csv:3: function "f" repeated (first on line 2)`},
		"bad quoting":                        {h + "o,a,\"f,http,1,2\n", "f.csv:2: malformed row: "},
		"no HashFunction":                    {"HashOwner,HashApp,Trigger,1,2\no,a,http,1,2\n", `f.csv:1: not a per-function trace: the header has no HashFunction column (header "HashOwner,HashApp,Trigger,1,2")`},
		"repeated column":                    {"HashFunction,HashApp,hashapp,1\nf,a,b,1\n", `f.csv:1: column 3 of the header repeats column 2's name "hashapp"`},
		"repeated minute":                    {"HashFunction,1,2,2\nf,1,2,3\n", `f.csv:1: column 4 of the header repeats column 3's name "2"`},
		"minutes backwards":                  {"HashFunction,minute_3,minute_2\nf,1,2\n", "f.csv:1: minute columns not consecutive: column 3 is minute 2, want 4"},
		"minute gap":                         {"minute_1,HashFunction,minute_3\n1,f,2\n", "f.csv:1: minute columns not consecutive: column 3 is minute 3, want 2"},
		"signed minute":                      {"HashFunction,-1,0\nf,1,2\n", `f.csv:1: column 2 of the header is "-1": want HashOwner`},
		"prefix only":                        {"HashFunction,minute_\nf,1\n", `f.csv:1: column 2 of the header is "minute_": want HashOwner`},
		"blank lines then header, short row": {"\n\nHashFunction,1,2\nf,1\n", "f.csv:4: malformed row: want 3 columns (the header's: HashFunction and 2 minutes), got 2"},
		"unknown after minutes":              {"HashFunction,1,2,Total\nf,1,2,3\n", `f.csv:1: column 4 of the header is "Total": want`},
		"long unknown column":                {"HashFunction,1," + strings.Repeat("y", 500) + "\nf,1,2\n", `f.csv:1: column 3 of the header is "` + strings.Repeat("y", 80) + `"... (500 bytes): want`},
	} {
		_, err := ReadFunctions(strings.NewReader(c.in), "f.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

// TestReadFunctionsByHeaderNames: the id columns in any order, in any
// case, between the minute columns, and the minutes as N or minute_N give
// the same functions as the Azure trace's order; without a Trigger column
// every function's trigger is DefaultTrigger; without HashOwner and HashApp
// those are empty.
func TestReadFunctionsByHeaderNames(t *testing.T) {
	canonical := "HashOwner,HashApp,HashFunction,Trigger,1,2,3\n" +
		"o1,a1,f1,http,5,0,7\n" +
		"o2,a2,f2,timer,0,3,0\n"
	want, err := ReadFunctions(strings.NewReader(canonical), "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]string{
		"reordered ids, minute_N": "HashFunction,HashApp,HashOwner,Trigger,minute_1,minute_2,minute_3\n" +
			"f1,a1,o1,http,5,0,7\nf2,a2,o2,timer,0,3,0\n",
		"reordered ids, N":        "HashFunction,HashApp,HashOwner,Trigger,1,2,3\nf1,a1,o1,http,5,0,7\nf2,a2,o2,timer,0,3,0\n",
		"ids between minutes":     "Minute_1,trigger,MINUTE_2,hashfunction,3,HashOwner,hashApp\n5,http,0,f1,7,o1,a1\n0,timer,3,f2,0,o2,a2\n",
		"byte-order mark, spaces": "\ufeff HashFunction , HashApp,HashOwner, Trigger, 1 ,2,3\nf1,a1,o1,http,5,0,7\nf2,a2,o2,timer,0,3,0\n",
	} {
		got, err := ReadFunctions(strings.NewReader(in), "f.csv")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.FirstMinute != want.FirstMinute || got.Minutes != want.Minutes || len(got.Functions) != len(want.Functions) {
			t.Errorf("%s: first minute %d, %d minutes, %d functions; want %d, %d, %d", name,
				got.FirstMinute, got.Minutes, len(got.Functions), want.FirstMinute, want.Minutes, len(want.Functions))
			continue
		}
		for i, f := range got.Functions {
			w := want.Functions[i]
			if f.Owner != w.Owner || f.App != w.App || f.Hash != w.Hash || f.Name != w.Name || f.Trigger != w.Trigger ||
				!slices.Equal(f.Counts, w.Counts) {
				t.Errorf("%s: function %d = %+v, want %+v", name, i, f, w)
			}
		}
	}

	// A day of 1,440 minutes from minute 1, HashFunction alone.
	var b strings.Builder
	b.WriteString("HashFunction")
	for m := 1; m <= 1440; m++ {
		fmt.Fprintf(&b, ",minute_%d", m)
	}
	b.WriteString("\nf1" + strings.Repeat(",2", 1440) + "\n")
	day, err := ReadFunctions(strings.NewReader(b.String()), "day.csv")
	if err != nil {
		t.Fatal(err)
	}
	f := day.Functions[0]
	if day.FirstMinute != 1 || day.Minutes != 1440 || f.Total() != 2880 || f.Trigger != DefaultTrigger || f.Owner != "" || f.App != "" {
		t.Errorf("a day without Trigger, HashOwner, HashApp: first minute %d, %d minutes, function %s %q %q %q total %d; want 1, 1440, f1 %q \"\" \"\" 2880",
			day.FirstMinute, day.Minutes, f.Hash, f.Trigger, f.Owner, f.App, f.Total(), DefaultTrigger)
	}
}

// FuzzReadFunctions: no input panics, and an accepted trace has at least
// one function, every function a hash and one count per minute.
func FuzzReadFunctions(f *testing.F) {
	for _, s := range []string{
		"HashOwner,HashApp,HashFunction,Trigger,1,2\no,a,f,http,1,2\n",
		"HashFunction,minute_480,Trigger,minute_481\nf,1,timer,2\n",
		"HashFunction,1\nf,1\ng\n",
		"\ufeffhashfunction,0\n\"f\",7\n",
		"HashFunction,1,1\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fs, err := ReadFunctions(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Errorf("error without the file's name: %v", err)
			}
			return
		}
		if len(fs.Functions) == 0 || fs.Minutes < 1 {
			t.Fatalf("accepted %d functions over %d minutes", len(fs.Functions), fs.Minutes)
		}
		for _, fn := range fs.Functions {
			if fn.Hash == "" || len(fn.Counts) != fs.Minutes || fn.Name == "" {
				t.Fatalf("function %+v of a %d-minute trace", fn, fs.Minutes)
			}
		}
	})
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
