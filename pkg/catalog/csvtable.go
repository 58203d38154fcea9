package catalog

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// FieldError reports bad input in one of the CSV files this package loads. It
// names the file, the 1-based line number and, where one is at fault, the
// column, e.g.
//
//	profiles/model_profiles.csv:3: field throughput_rps: must be > 0, got "-1"
type FieldError struct {
	File  string // file name as given to the loader, e.g. "profiles/model_profiles.csv"
	Line  int    // 1-based line number; 0 when the error concerns the whole file
	Field string // column name; empty when no single column is at fault
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// csvTable reads a CSV file with a header row and looks columns up by name.
type csvTable struct {
	file string
	r    *csv.Reader
	cols map[string]int
}

// newCSVTable reads the header row and checks that every required column is
// present. Extra columns are allowed and ignored.
func newCSVTable(r io.Reader, file string, required []string) (*csvTable, error) {
	if r == nil {
		return nil, &FieldError{File: file, Msg: "no input (nil reader)"}
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // rows are checked against the header here, by column name
	t := &csvTable{file: file, r: cr, cols: map[string]int{}}
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &FieldError{File: file, Line: 1, Msg: "empty file, expected a header row"}
	}
	if err != nil {
		return nil, t.readError(err)
	}
	for i, name := range header {
		name = strings.TrimSpace(name)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		if _, dup := t.cols[name]; dup && name != "" {
			return nil, &FieldError{File: file, Line: 1, Field: name, Msg: "duplicate column in header"}
		}
		t.cols[name] = i
	}
	for _, name := range required {
		if _, ok := t.cols[name]; !ok {
			return nil, &FieldError{File: file, Line: 1, Field: name, Msg: "missing column in header"}
		}
	}
	return t, nil
}

func (t *csvTable) readError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FieldError{File: t.file, Line: pe.Line, Msg: fmt.Sprintf("malformed CSV at byte %d of the line: %v", pe.Column, pe.Err)}
	}
	return &FieldError{File: t.file, Msg: fmt.Sprintf("reading: %v", err)}
}

// next returns the next data row; ok is false at the end of the file.
func (t *csvTable) next() (row csvRow, ok bool, err error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return csvRow{}, false, nil
	}
	if err != nil {
		return csvRow{}, false, t.readError(err)
	}
	// Remember where each field starts now: FieldPos only describes the
	// record most recently read.
	lines := make([]int, len(rec))
	for i := range rec {
		lines[i], _ = t.r.FieldPos(i)
	}
	return csvRow{t: t, rec: rec, lines: lines}, true, nil
}

// csvRow is one data row. Its accessors return *FieldError values that name
// the file, the line of the field and the column.
type csvRow struct {
	t     *csvTable
	rec   []string
	lines []int // line each field starts on (a quoted field may span lines)
}

// line returns the line a column's value starts on, or the row's first line.
func (r csvRow) lineOf(field string) int {
	if i, ok := r.t.cols[field]; ok && i < len(r.lines) {
		return r.lines[i]
	}
	if len(r.lines) > 0 {
		return r.lines[0]
	}
	return 0
}

func (r csvRow) errorf(field string, format string, args ...any) error {
	return &FieldError{File: r.t.file, Line: r.lineOf(field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// str returns the trimmed value of a column; a row too short to hold it is an
// error.
func (r csvRow) str(field string) (string, error) {
	i, ok := r.t.cols[field]
	if !ok {
		return "", r.errorf(field, "missing column in header")
	}
	if i >= len(r.rec) {
		return "", r.errorf(field, "missing value (row has %d columns, header has %d)", len(r.rec), len(r.t.cols))
	}
	return strings.TrimSpace(r.rec[i]), nil
}

// nonEmpty returns the value of a column that must not be empty.
func (r csvRow) nonEmpty(field string) (string, error) {
	s, err := r.str(field)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", r.errorf(field, "must not be empty")
	}
	return s, nil
}

// optional returns the value of a column that may be absent from the header
// or empty.
func (r csvRow) optional(field string) string {
	i, ok := r.t.cols[field]
	if !ok || i >= len(r.rec) {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

// float returns a finite number; positive requires > 0, otherwise >= 0.
func (r csvRow) float(field string, positive bool) (float64, error) {
	s, err := r.nonEmpty(field)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseFloat(s, 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errorf(field, "not a finite number: %q", s)
	}
	if positive && v <= 0 {
		return 0, r.errorf(field, "must be > 0, got %q", s)
	}
	if !positive && v < 0 {
		return 0, r.errorf(field, "must be >= 0, got %q", s)
	}
	return v, nil
}

// positiveInt returns a base-10 integer > 0.
func (r csvRow) positiveInt(field string) (int64, error) {
	s, err := r.nonEmpty(field)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil {
		if errors.Is(perr, strconv.ErrRange) {
			return 0, r.errorf(field, "out of range: %q", s)
		}
		return 0, r.errorf(field, "not an integer: %q", s)
	}
	if v <= 0 {
		return 0, r.errorf(field, "must be > 0, got %q", s)
	}
	return v, nil
}
