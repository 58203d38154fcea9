package integration

import (
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/cluster"
)

// stopOnCleanup stops p when the test ends and, if the test failed, logs the
// tail of p's log so CI output says what the program saw.
func stopOnCleanup(t *testing.T, p *cluster.Process) {
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("--- last lines of %s ---\n%s", p.Name, p.Tail(60))
		}
	})
}
