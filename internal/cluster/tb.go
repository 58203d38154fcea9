package cluster

import (
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// ProgramTB lets code written for tests (the apiserver's test server) run in a
// program such as the demo: logs go to klog, failures are recorded and
// cleanups run on Close.
type ProgramTB struct {
	name     string
	mu       sync.Mutex
	cleanups []func()
	failed   bool
	tempDirs []string
}

// NewProgramTB returns a TB named name.
func NewProgramTB(name string) *ProgramTB { return &ProgramTB{name: name} }

func (t *ProgramTB) Attr(key, value string) {}
func (t *ProgramTB) Chdir(dir string) {
	if err := os.Chdir(dir); err != nil {
		t.Fatalf("chdir %s: %v", dir, err)
	}
}
func (t *ProgramTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *ProgramTB) Error(args ...any)                 { t.Log(args...); t.Fail() }
func (t *ProgramTB) Errorf(format string, args ...any) { t.Logf(format, args...); t.Fail() }
func (t *ProgramTB) Fail()                             { t.mu.Lock(); t.failed = true; t.mu.Unlock() }
func (t *ProgramTB) FailNow()                          { t.Fail(); panic(fmt.Sprintf("%s: FailNow", t.name)) }
func (t *ProgramTB) Failed() bool                      { t.mu.Lock(); defer t.mu.Unlock(); return t.failed }
func (t *ProgramTB) Fatal(args ...any)                 { t.Log(args...); t.FailNow() }
func (t *ProgramTB) Fatalf(format string, args ...any) { t.Logf(format, args...); t.FailNow() }
func (t *ProgramTB) Helper()                           {}
func (t *ProgramTB) Log(args ...any)                   { klog.InfoDepth(1, fmt.Sprint(args...)) }
func (t *ProgramTB) Logf(format string, args ...any)   { klog.InfoDepth(1, fmt.Sprintf(format, args...)) }
func (t *ProgramTB) Name() string                      { return t.name }
func (t *ProgramTB) Setenv(key, value string)          { _ = os.Setenv(key, value) }
func (t *ProgramTB) Skip(args ...any)                  { t.Log(args...); t.SkipNow() }
func (t *ProgramTB) Skipf(format string, args ...any)  { t.Logf(format, args...); t.SkipNow() }
func (t *ProgramTB) SkipNow()                          { panic(fmt.Sprintf("%s: SkipNow", t.name)) }
func (t *ProgramTB) Skipped() bool                     { return false }
func (t *ProgramTB) TempDir() string {
	d, err := os.MkdirTemp("", "hetsev-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.mu.Lock()
	t.tempDirs = append(t.tempDirs, d)
	t.mu.Unlock()
	return d
}

// Close runs cleanups in reverse order and removes temp dirs.
func (t *ProgramTB) Close() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	dirs := t.tempDirs
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}
