package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hetsev/hetsev/data/traces"
)

// timestampLayouts are the request-timestamp formats ReadTimestamps
// accepts: RFC 3339 (with or without fractional seconds) and the Azure LLM
// inference traces' "2023-11-16 18:17:03.9799600" (UTC, no zone).
var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

func parseTimestamp(s string) (time.Time, bool) {
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ReadTimestamps reads one request per line, its arrival time in the first
// comma-separated field (so a CSV such as the Azure traces, whose first
// column is TIMESTAMP, reads as is; a header line whose first field is not a
// timestamp is skipped). It returns requests per second, from the second of
// the first request to that of the last. Timestamps must not decrease; an
// unparseable or earlier timestamp is an error with the line number. file
// names the input in errors.
func ReadTimestamps(r io.Reader, file string) (Rates, error) {
	sc := bufio.NewScanner(r)
	var out Rates
	var first, prev time.Time
	line, n := 0, 0
	for sc.Scan() {
		line++
		field, _, _ := strings.Cut(sc.Text(), ",")
		field = strings.TrimSpace(field)
		t, ok := parseTimestamp(field)
		if !ok {
			if line == 1 && n == 0 {
				continue // a header
			}
			return nil, fmt.Errorf("%s:%d: want a timestamp (RFC 3339 or 2006-01-02 15:04:05.999), got %s", file, line, Quote(field))
		}
		if n == 0 {
			first = t.Truncate(time.Second)
		} else if t.Before(prev) {
			return nil, fmt.Errorf("%s:%d: timestamps out of order: %s is before the previous line's %s", file, line, Quote(field), prev.Format(time.RFC3339Nano))
		}
		sec := int(t.Sub(first) / time.Second)
		for len(out) <= sec {
			out = append(out, 0)
		}
		out[sec]++
		prev, n = t, n+1
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: empty trace (no timestamps)", file)
	}
	return out, nil
}

// Read reads a trace in either format, told apart by its first line that is
// not blank: an integer means per-second counts (ReadCounts), a timestamp
// (or a header followed by timestamps) means one request per line
// (ReadTimestamps). Anything else is an error naming line 1.
func Read(r io.Reader, file string) (Rates, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	firstLine, rest, _ := bytes.Cut(raw, []byte("\n"))
	head := strings.TrimSpace(string(firstLine))
	switch {
	case head == "" && len(bytes.TrimSpace(rest)) == 0:
		return nil, fmt.Errorf("%s: empty trace", file)
	case isCount(head):
		return ReadCounts(bytes.NewReader(raw), file)
	default:
		field, _, _ := strings.Cut(head, ",")
		if _, ok := parseTimestamp(strings.TrimSpace(field)); ok {
			return ReadTimestamps(bytes.NewReader(raw), file)
		}
		second, _, _ := bytes.Cut(rest, []byte("\n"))
		field, _, _ = strings.Cut(strings.TrimSpace(string(second)), ",")
		if _, ok := parseTimestamp(strings.TrimSpace(field)); ok {
			return ReadTimestamps(bytes.NewReader(raw), file) // header, then timestamps
		}
		return nil, fmt.Errorf("%s:1: unknown trace format: want one request count per line (per-second counts) or one timestamp per line (RFC 3339 or 2006-01-02 15:04:05.999), got %s", file, Quote(head))
	}
}

func isCount(s string) bool {
	v, err := strconv.ParseInt(s, 10, 64)
	return err == nil && v >= 0 && v < math.MaxInt32
}

// AzureCode returns the embedded Azure LLM inference code trace as
// requests per second (8,819 requests over about 57 minutes; provenance in
// data/README.md).
func AzureCode() (Rates, error) {
	f, err := traces.Open(traces.AzureCodeTrace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTimestamps(f, traces.AzureCodeTrace)
}
