package servingcert

import (
	"errors"
	"fmt"
	"time"
)

// CheckTiming reports settings of a rotating certificate that cannot work,
// naming the flags flagPrefix+"cert-validity", "cert-renew-before" and
// "cert-check-interval" (flagPrefix "" or e.g. "webhook-"): each must be
// positive, a certificate must be renewed before it expires, and checked
// more often than it is renewed, or it may expire between two checks.
func CheckTiming(flagPrefix string, validity, renewBefore, checkInterval time.Duration) error {
	v, r, c := "--"+flagPrefix+"cert-validity", "--"+flagPrefix+"cert-renew-before", "--"+flagPrefix+"cert-check-interval"
	switch {
	case validity <= 0 || renewBefore <= 0 || checkInterval <= 0:
		return errors.New(v + ", " + r + " and " + c + " must be positive")
	case renewBefore >= validity:
		return fmt.Errorf("%s=%s must be shorter than %s=%s", r, renewBefore, v, validity)
	case checkInterval >= renewBefore:
		return fmt.Errorf("%s=%s must be shorter than %s=%s, or a certificate may expire between checks", c, checkInterval, r, renewBefore)
	}
	return nil
}
