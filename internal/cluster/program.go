package cluster

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"
)

// Program is what the demo and bench commands set up before they run: a
// work directory, klog writing only to <dir>/<name>.log (stdout is the
// report, so not even errors go to stderr), a context cancelled on SIGINT or
// SIGTERM, and a ProgramTB for the test server code they run.
type Program struct {
	Dir string
	Ctx context.Context
	TB  *ProgramTB

	cancel context.CancelFunc
	log    *os.File
}

// StartProgram sets up name in workdir, or in a new temporary directory
// (kept, for its logs) when workdir is empty.
func StartProgram(name, workdir string) (*Program, error) {
	dir := workdir
	if dir == "" {
		d, err := os.MkdirTemp("", name+"-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := kfs.Set(k, v); err != nil {
			return nil, fmt.Errorf("klog flag %s: %w", k, err)
		}
	}
	klog.SetOutput(logf)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	return &Program{Dir: dir, Ctx: ctx, TB: NewProgramTB(name), cancel: cancel, log: logf}, nil
}

// Close runs the TB's cleanups, stops listening for signals and closes the
// log.
func (p *Program) Close() {
	p.TB.Close()
	p.cancel()
	klog.Flush()
	_ = p.log.Close()
}

// BenchReport is what a bench command prints: a table, then its RESULT line.
type BenchReport interface {
	WriteTable(w io.Writer) error
	ResultLine() string
}

// RunBench is the body of a bench command's main: it sets up name in
// workdir (see StartProgram), runs run with progress lines on stdout,
// prints the report's table and RESULT line, and exits 1 with the error on
// stderr if any step fails.
func RunBench(name, workdir string, run func(p *Program, say func(string, ...any)) (BenchReport, error)) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	p, err := StartProgram(name, workdir)
	if err != nil {
		fail(err)
	}
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	rep, err := run(p, say)
	if err == nil {
		err = rep.WriteTable(os.Stdout)
	}
	p.Close()
	if err != nil {
		fail(err)
	}
	fmt.Println(rep.ResultLine())
}
