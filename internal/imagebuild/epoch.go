package imagebuild

import (
	"fmt"
	"strconv"
	"time"
)

// ParseSourceDateEpoch reads SOURCE_DATE_EPOCH
// (https://reproducible-builds.org/specs/source-date-epoch/): seconds since
// 1970, the time every release artifact records; empty is 0. Errors: not
// a non-negative integer.
func ParseSourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want a non-negative integer of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
