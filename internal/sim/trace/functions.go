package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/data/traces"
)

// Column names of a per-function, per-minute trace other than its minute
// columns (the Azure Functions Trace 2019's invocations_per_function
// files), matched case-insensitively.
const (
	colOwner    = "HashOwner"
	colApp      = "HashApp"
	colFunction = "HashFunction"
	colTrigger  = "Trigger"
)

// functionIDColumns are the id columns ReadFunctions knows, in the Azure
// trace's order.
var functionIDColumns = []string{colOwner, colApp, colFunction, colTrigger}

// DefaultTrigger is the trigger group of every function of a trace without
// a Trigger column: the Azure trace's group for triggers outside its named
// ones, which keeps the model's base RT_max and SL_min 0.98 (neither the
// http rule's tighter SLO nor the background triggers' looser one).
const DefaultTrigger = "others"

// minutePrefix may start a minute column's name: minute_480 is minute 480.
const minutePrefix = "minute_"

// shortNameLen is the shortest display name of a function: the first this
// many characters of its HashFunction, longer where two functions of a file
// share them.
const shortNameLen = 8

// Function is one row of a per-function, per-minute trace: one function's
// invocations in each minute.
type Function struct {
	// Owner, App and Hash are the row's HashOwner, HashApp and
	// HashFunction (the Azure trace's anonymised hashes; Hash is unique in
	// its file).
	Owner, App, Hash string
	// Name is Hash shortened for display: its shortest prefix of at least
	// 8 characters that no other function of the file shares.
	Name string
	// Trigger is the row's trigger group (the Azure trace's http, timer,
	// queue, event, orchestration, storage or others).
	Trigger string
	// Counts are the invocations in each minute, from the file's first
	// minute column on.
	Counts []int64
	// Line is the row's line in its file.
	Line int
}

// Total is the function's invocations over the whole trace.
func (f Function) Total() int64 {
	var n int64
	for _, c := range f.Counts {
		n += c
	}
	return n
}

// Rates returns the function's arrival rate per trace second, requests/s:
// a minute's count / 60 for each of its 60 seconds. The trace has no finer
// timestamps, so within a minute the rate is flat; a replay draws the
// arrivals of each second from it (internal/sim/replay: a random count
// around the rate, at Poisson times within the second) as it does for
// the other traces.
func (f Function) Rates() Rates {
	out := make(Rates, 0, 60*len(f.Counts))
	for _, c := range f.Counts {
		r := float64(c) / 60
		for range 60 {
			out = append(out, r)
		}
	}
	return out
}

// Functions is a per-function, per-minute trace.
type Functions struct {
	// File names the trace in messages.
	File string
	// FirstMinute is the number in the first minute column's header (the
	// Azure trace numbers the minutes of its day from 1: 480 is 07:59 to
	// 08:00).
	FirstMinute int
	// Minutes is the number of minute columns; every function has as many
	// counts.
	Minutes   int
	Functions []Function
}

// ReadFunctions reads a per-function, per-minute trace: a CSV header
// naming its columns, then one row per function with its invocation count
// in each minute.
//
// The header's columns, in any order: HashFunction (required: it names
// the function and picks its model); HashOwner, HashApp (optional, empty
// where absent: no rule of a replay reads them); Trigger (optional: where
// absent every function's trigger group is DefaultTrigger, "others", whose
// SLO is the model's base RT_max and SL_min 0.98); and at least one minute
// column, named by the minute's number, N or minute_N (the prefix in any
// case). The minute columns, taken in column order, must be consecutive
// integers (480, 481, ...: the Azure trace's numbering, from 1 at
// midnight); id columns may stand between them. Any number of minutes is
// read (a day is 1,440). Names match case-insensitively, with spaces and
// a byte-order mark trimmed.
//
// Refused, with file:line and the reason: an empty file; a header without
// a HashFunction column or without minute columns, with a column name
// repeated, with a name that is neither an id column nor a minute (a
// misspelt Trigger would otherwise give every function the default SLO), or
// with minute columns out of sequence; a row whose number of columns
// differs from the header's; a count that is not an integer or is
// negative; an empty or repeated HashFunction; a file without functions.
// An error quotes at most 80 characters of the input (Quote). file names
// the input in errors.
func ReadFunctions(r io.Reader, file string) (Functions, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, to say what a row should hold
	cr.ReuseRecord = true
	out := Functions{File: file}
	header, err := cr.Read()
	if err == io.EOF {
		return Functions{}, fmt.Errorf("%s: empty trace (want a header such as %s,<minute>,...)", file, strings.Join(functionIDColumns, ","))
	}
	if err != nil {
		return Functions{}, csvError(file, err)
	}
	headerLine, _ := cr.FieldPos(0)
	cols, err := out.readHeader(header, headerLine)
	if err != nil {
		return Functions{}, err
	}
	width := len(header)
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Functions{}, csvError(file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != width {
			return Functions{}, fmt.Errorf("%s:%d: malformed row: want %d columns (the header's: %s and %d minutes), got %d",
				file, line, width, cols.ids(), out.Minutes, len(rec))
		}
		f := Function{Owner: cols.get(rec, colOwner), App: cols.get(rec, colApp), Hash: strings.TrimSpace(cols.get(rec, colFunction)),
			Trigger: strings.TrimSpace(cols.get(rec, colTrigger)), Line: line, Counts: make([]int64, out.Minutes)}
		if cols.id[colTrigger] < 0 {
			f.Trigger = DefaultTrigger
		}
		if f.Hash == "" {
			return Functions{}, fmt.Errorf("%s:%d: malformed row: HashFunction is empty", file, line)
		}
		if first, ok := seen[f.Hash]; ok {
			return Functions{}, fmt.Errorf("%s:%d: function %s repeated (first on line %d)", file, line, Quote(f.Hash), first)
		}
		seen[f.Hash] = line
		for i, c := range cols.minutes {
			s := rec[c]
			v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			minute := out.FirstMinute + i
			if err != nil {
				return Functions{}, fmt.Errorf("%s:%d: malformed row: minute %d (column %d): want an invocation count, got %s",
					file, line, minute, c+1, Quote(s))
			}
			if v < 0 {
				return Functions{}, fmt.Errorf("%s:%d: minute %d (column %d): negative invocation count %d",
					file, line, minute, c+1, v)
			}
			f.Counts[i] = v
		}
		out.Functions = append(out.Functions, f)
	}
	if len(out.Functions) == 0 {
		return Functions{}, fmt.Errorf("%s: no functions (a header and no rows)", file)
	}
	out.name()
	return out, nil
}

// functionColumns is where a per-function trace's header puts each
// column: the index of each id column (-1 where absent) and of each minute
// column, in column order.
type functionColumns struct {
	id      map[string]int
	minutes []int
}

// get is the row's value of id column name, "" where the header has none.
func (c functionColumns) get(rec []string, name string) string {
	if i := c.id[name]; i >= 0 {
		return rec[i]
	}
	return ""
}

// ids lists the header's id columns, in column order.
func (c functionColumns) ids() string {
	var names []string
	for _, n := range functionIDColumns {
		if c.id[n] >= 0 {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return c.id[a] - c.id[b] })
	return strings.Join(names, ", ")
}

// minuteNumber is the minute a header column names (N or minute_N, N
// decimal digits), ok false where the name is not a minute.
func minuteNumber(name string) (int, bool) {
	if len(name) > len(minutePrefix) && strings.EqualFold(name[:len(minutePrefix)], minutePrefix) {
		name = name[len(minutePrefix):]
	}
	if name == "" || len(name) > 9 || strings.TrimLeft(name, "0123456789") != "" {
		return 0, false
	}
	m, err := strconv.Atoi(name)
	return m, err == nil
}

// readHeader finds the id and minute columns of header h, on line line of
// the file, and sets FirstMinute and Minutes.
func (fs *Functions) readHeader(h []string, line int) (functionColumns, error) {
	cols := functionColumns{id: map[string]int{}}
	for _, n := range functionIDColumns {
		cols.id[n] = -1
	}
	named := map[string]int{} // lower-case name: its column, from 1
	for i, raw := range h {
		col := i + 1
		name := strings.TrimSpace(raw)
		if i == 0 {
			name = strings.TrimSpace(strings.TrimPrefix(name, "\ufeff"))
		}
		if first, ok := named[strings.ToLower(name)]; ok {
			return cols, fmt.Errorf("%s:%d: column %d of the header repeats column %d's name %s", fs.File, line, col, first, Quote(raw))
		}
		named[strings.ToLower(name)] = col
		if m, ok := minuteNumber(name); ok {
			if len(cols.minutes) == 0 {
				fs.FirstMinute = m
			} else if want := fs.FirstMinute + len(cols.minutes); m != want {
				return cols, fmt.Errorf("%s:%d: minute columns not consecutive: column %d is minute %d, want %d", fs.File, line, col, m, want)
			}
			cols.minutes = append(cols.minutes, i)
			continue
		}
		known := false
		for _, n := range functionIDColumns {
			if strings.EqualFold(name, n) {
				cols.id[n], known = i, true
			}
		}
		if !known {
			return cols, fmt.Errorf("%s:%d: column %d of the header is %s: want %s or a minute (N or minute_N)",
				fs.File, line, col, Quote(raw), strings.Join(functionIDColumns, ", "))
		}
	}
	if cols.id[colFunction] < 0 {
		return cols, fmt.Errorf("%s:%d: not a per-function trace: the header has no %s column (header %s)", fs.File, line, colFunction, Quote(strings.Join(h, ",")))
	}
	if len(cols.minutes) == 0 {
		return cols, fmt.Errorf("%s:%d: no minute columns: the header has only %s", fs.File, line, cols.ids())
	}
	fs.Minutes = len(cols.minutes)
	return cols, nil
}

// name gives every function its display name: the shortest prefix of its
// hash, at least shortNameLen characters, that no other function's hash
// starts with.
func (fs *Functions) name() {
	for i := range fs.Functions {
		h := fs.Functions[i].Hash
		n := min(shortNameLen, len(h))
		for ; n < len(h); n++ {
			unique := true
			for j := range fs.Functions {
				if j != i && strings.HasPrefix(fs.Functions[j].Hash, h[:n]) {
					unique = false
					break
				}
			}
			if unique {
				break
			}
		}
		fs.Functions[i].Name = h[:n]
	}
}

// csvError turns encoding/csv's error into file:line and the reason.
func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: malformed row: %v", file, pe.Line, pe.Err)
	}
	return fmt.Errorf("%s: %w", file, err)
}

// AzureFunctions returns the embedded per-minute invocations of 500 Azure
// Functions over 8 hours (azure2019_invitro_500func_8h.csv; provenance in
// data/README.md).
func AzureFunctions() (Functions, error) {
	f, err := traces.Open(traces.AzureFunctionsTrace)
	if err != nil {
		return Functions{}, err
	}
	defer f.Close()
	return ReadFunctions(f, traces.AzureFunctionsTrace)
}
