package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Cmd is a command to run on an endpoint, in its network namespace or on
// its host. It is the part of exec.Cmd the measuring code needs, so that
// the same code starts a process here or, through the agent, on a remote
// host. Prepare it with Endpoint.Command and start it with Endpoint.Start.
type Cmd struct {
	// Args is the program and its arguments.
	Args []string
	// Env is added to the environment of the host (which always gets
	// LC_ALL=C, so that tool output parses the same everywhere).
	Env []string
	// Stdin, Stdout and Stderr are as in exec.Cmd; nil discards.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// OutputFile, when set, is a file on the endpoint's host (created
	// 0600, appended to) that receives stdout and stderr, in place of
	// Stdout and Stderr: daemons log there.
	OutputFile string
	// WaitDelay bounds how long Wait waits for output to be copied after
	// the process exited; 2 s when zero.
	WaitDelay time.Duration

	ctx  context.Context
	proc Proc
}

// Proc is a started process.
type Proc interface {
	// Pid is the process id on its host.
	Pid() int
	// Wait waits for the process to exit and its output to be copied.
	Wait() error
	// Signal sends sig to the process's process group.
	Signal(sig syscall.Signal) error
}

// StdinPipe returns a pipe connected to the command's standard input once
// it starts; closing it gives the process end of file.
func (c *Cmd) StdinPipe() (io.WriteCloser, error) {
	if c.Stdin != nil {
		return nil, errors.New("testbed: Stdin already set")
	}
	if c.proc != nil {
		return nil, errors.New("testbed: StdinPipe after Start")
	}
	r, w := io.Pipe()
	c.Stdin = r
	return w, nil
}

// Context is the context the command was prepared with (Endpoint.Command):
// its end kills the process. It is never nil.
func (c *Cmd) Context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// Started reports whether Start succeeded.
func (c *Cmd) Started() bool { return c.proc != nil }

// Pid returns the process id on the endpoint's host, 0 before Start.
func (c *Cmd) Pid() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.Pid()
}

// Wait waits for the process to exit. The error is an *ExitError when it
// ran and failed.
func (c *Cmd) Wait() error {
	if c.proc == nil {
		return errors.New("testbed: Wait before Start")
	}
	return c.proc.Wait()
}

// CPUTime is the CPU time the process used over its whole life, in user
// and system mode, from its exit status (wait's rusage, on its host);
// ok is false before Wait returned or when its host does not report it
// (an older agent). A process that exited before anyone could read its
// /proc entry is accounted from this (sample.Sampler.ExitedCPU).
func (c *Cmd) CPUTime() (user, sys time.Duration, ok bool) {
	if t, is := c.proc.(cpuTimer); is {
		return t.CPUTime()
	}
	return 0, 0, false
}

// cpuTimer is a Proc that knows, once it has exited, the CPU time it
// used.
type cpuTimer interface {
	CPUTime() (user, sys time.Duration, ok bool)
}

// Kill sends SIGKILL to the process group.
func (c *Cmd) Kill() error { return c.Signal(syscall.SIGKILL) }

// Signal sends sig to the process group.
func (c *Cmd) Signal(sig syscall.Signal) error {
	if c.proc == nil {
		return errors.New("testbed: Signal before Start")
	}
	return c.proc.Signal(sig)
}

// String is the command line.
func (c *Cmd) String() string { return strings.Join(c.Args, " ") }

// ExitError is a process that exited with a non-zero status or was ended
// by a signal, on any host.
type ExitError struct {
	// Code is the exit status, -1 when a signal ended the process.
	Code int
	// Signal is the signal that ended it, 0 when it exited.
	Signal syscall.Signal
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "signal: " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Signaled reports whether err is the exit of a process ended by a signal
// (killed, crashed) rather than one that exited on its own.
func Signaled(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Signal != 0
}

// exitError converts exec's error for a process that ran.
func exitError(err error) error {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok {
		return err
	}
	if ws.Signaled() {
		return &ExitError{Code: -1, Signal: ws.Signal()}
	}
	return &ExitError{Code: ws.ExitStatus()}
}
