package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// childEnv makes the test binary run as pause itself (TestMain), so the
// process tests signal the real signal handling.
const childEnv = "HETSEV_PAUSE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		sigs := notify()
		// The handler is installed: tell the parent it may signal.
		fmt.Println("ready")
		os.Exit(pause(sigs, reapChildren))
	}
	os.Exit(m.Run())
}

// startPause runs the test binary as pause and waits for its "ready" line.
func startPause(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("pause did not report ready: %q, %v", line, err)
	}
	return cmd
}

func TestPauseExitsZeroOnStopSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := startPause(t)
			// A SIGCHLD first: pause must keep running through it.
			if err := cmd.Process.Signal(syscall.SIGCHLD); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("pause after %v: %v (status %v), want exit status 0", sig, err, exit.Sys())
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPauseReapsOnSIGCHLDAndKeepsWaiting(t *testing.T) {
	sigs := make(chan os.Signal, 4)
	sigs <- syscall.SIGCHLD
	sigs <- syscall.SIGHUP
	sigs <- syscall.SIGCHLD
	sigs <- syscall.SIGTERM
	reaped := 0
	if code := pause(sigs, func() { reaped++ }); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	if reaped != 2 {
		t.Errorf("reaped %d times, want 2 (once per SIGCHLD)", reaped)
	}
	if len(sigs) != 0 {
		t.Errorf("%d signals left unread: pause returned before SIGTERM", len(sigs))
	}
}
