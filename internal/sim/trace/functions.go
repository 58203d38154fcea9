package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/data/traces"
)

// functionIDColumns are the columns of a per-function, per-minute trace
// before its minute columns (the Azure Functions Trace 2019's
// invocations_per_function files).
var functionIDColumns = []string{"HashOwner", "HashApp", "HashFunction", "Trigger"}

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
// HashOwner,HashApp,HashFunction,Trigger followed by at least one minute
// column, each the number of the minute (consecutive integers), then one
// row per function with its invocation count in each minute. A row with
// the wrong number of columns, a count that is not an integer or is
// negative, a repeated or empty HashFunction, a header without minute
// columns or with minutes that do not follow each other, and a file
// without functions are refused with file:line and the reason; an error
// quotes at most 80 characters of the input (Quote). file names the input
// in errors.
func ReadFunctions(r io.Reader, file string) (Functions, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, to say what a row should hold
	cr.ReuseRecord = true
	out := Functions{File: file}
	header, err := cr.Read()
	if err == io.EOF {
		return Functions{}, fmt.Errorf("%s: empty trace (want a header %s,<minute>,...)", file, strings.Join(functionIDColumns, ","))
	}
	if err != nil {
		return Functions{}, csvError(file, err)
	}
	if err := out.readHeader(header); err != nil {
		return Functions{}, err
	}
	width := len(functionIDColumns) + out.Minutes
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
			return Functions{}, fmt.Errorf("%s:%d: malformed row: want %d columns (%s and %d minutes), got %d",
				file, line, width, strings.Join(functionIDColumns, ", "), out.Minutes, len(rec))
		}
		f := Function{Owner: rec[0], App: rec[1], Hash: strings.TrimSpace(rec[2]), Trigger: strings.TrimSpace(rec[3]), Line: line,
			Counts: make([]int64, out.Minutes)}
		if f.Hash == "" {
			return Functions{}, fmt.Errorf("%s:%d: malformed row: HashFunction is empty", file, line)
		}
		if first, ok := seen[f.Hash]; ok {
			return Functions{}, fmt.Errorf("%s:%d: function %s repeated (first on line %d)", file, line, Quote(f.Hash), first)
		}
		seen[f.Hash] = line
		for i, s := range rec[len(functionIDColumns):] {
			v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			minute := out.FirstMinute + i
			if err != nil {
				return Functions{}, fmt.Errorf("%s:%d: malformed row: minute %d (column %d): want an invocation count, got %s",
					file, line, minute, len(functionIDColumns)+i+1, Quote(s))
			}
			if v < 0 {
				return Functions{}, fmt.Errorf("%s:%d: minute %d (column %d): negative invocation count %d",
					file, line, minute, len(functionIDColumns)+i+1, v)
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

// readHeader checks the id columns and reads the minute columns.
func (fs *Functions) readHeader(h []string) error {
	for i, want := range functionIDColumns {
		if i >= len(h) || strings.TrimSpace(strings.TrimPrefix(h[i], "\ufeff")) != want {
			got := "nothing"
			if i < len(h) {
				got = Quote(h[i])
			}
			return fmt.Errorf("%s:1: not a per-function trace: column %d of the header is %s, want %s (header %s,<minute>,...)",
				fs.File, i+1, got, want, strings.Join(functionIDColumns, ","))
		}
	}
	minutes := h[len(functionIDColumns):]
	if len(minutes) == 0 {
		return fmt.Errorf("%s:1: no minute columns: the header has only %s", fs.File, strings.Join(functionIDColumns, ","))
	}
	for i, s := range minutes {
		col := len(functionIDColumns) + i + 1
		m, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%s:1: column %d of the header is %s, want a minute number", fs.File, col, Quote(s))
		}
		if i == 0 {
			fs.FirstMinute = m
		} else if want := fs.FirstMinute + i; m != want {
			return fmt.Errorf("%s:1: minute columns not consecutive: column %d is minute %d, want %d", fs.File, col, m, want)
		}
	}
	fs.Minutes = len(minutes)
	return nil
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
