package trace

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxQuoted is the most characters of its input an error quotes: a header
// line of thousands of characters in a message says less than its start.
const MaxQuoted = 80

// Quote returns s quoted as %q does when it has at most MaxQuoted
// characters; a longer s is cut to its first MaxQuoted characters, quoted,
// followed by "..." and its length in bytes. Every error of this package
// that quotes input quotes it with Quote.
func Quote(s string) string {
	if utf8.RuneCountInString(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut, n := 0, 0
	for i := range s {
		if n == MaxQuoted {
			cut = i
			break
		}
		n++
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
