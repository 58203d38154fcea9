// Command pause is the sandbox ("infra") container of every pod on the
// e2e nodes: containerd's CRI plugin starts it first in each pod and keeps
// the pod's network, IPC and (with shareProcessNamespace) PID namespaces
// alive through it. It does nothing but wait: SIGINT or SIGTERM ends it
// with exit status 0, as the kubelet expects when it stops a pod, and
// SIGCHLD reaps exited children, its duty as PID 1 of a shared PID
// namespace. Built static and packed into an image by hack/images
// (internal/imagebuild's NodePrograms), so the CRI sandbox image is a
// locally built one and no image is pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(pause(notify(), reapChildren))
}

// notify subscribes to the signals pause handles; a signal sent after it
// returns is delivered to the channel rather than killing the process.
func notify() <-chan os.Signal {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	return sigs
}

// pause blocks until sigs delivers SIGINT or SIGTERM and returns the exit
// status 0; each SIGCHLD calls reap. A closed channel also returns 0.
func pause(sigs <-chan os.Signal, reap func()) int {
	for sig := range sigs {
		switch sig {
		case syscall.SIGINT, syscall.SIGTERM:
			return 0
		case syscall.SIGCHLD:
			reap()
		}
	}
	return 0
}

// reapChildren waits for every exited child without blocking, so no
// zombie outlives its process in a shared PID namespace.
func reapChildren() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
