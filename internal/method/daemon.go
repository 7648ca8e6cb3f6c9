package method

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"golang.org/x/sys/unix"
)

// Process is a userspace daemon a method started on one side.
type Process struct {
	Side string
	Role string
	// Log is the file receiving the daemon's stdout and stderr.
	Log string
	cmd *testbed.Cmd
	ep  *testbed.Endpoint
	// exited is closed when the process has been waited for.
	exited chan struct{}
	err    error
}

// PID returns the daemon's process id.
func (p *Process) PID() int { return p.cmd.Pid() }

// Daemon returns the accounting record for the runner.
func (p *Process) Daemon() Daemon {
	return Daemon{Side: p.Side, Role: p.Role, PID: p.PID(), Log: p.Log, Exit: p.Alive}
}

// StartDaemon starts argv on ep (in its namespace, or on its host) with
// stdout and stderr appended to log, a file there (created 0600). The
// daemon outlives the call; stop it with Stop. env adds variables to the
// daemon's environment.
func StartDaemon(ep *testbed.Endpoint, role, log string, env []string, argv ...string) (*Process, error) {
	cmd := ep.Command(context.Background(), argv...)
	cmd.Env = append(cmd.Env, env...)
	cmd.OutputFile = log
	if err := ep.Start(cmd); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", ep.Side, role, err)
	}
	p := &Process{Side: ep.Side, Role: role, Log: log, cmd: cmd, ep: ep, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Done is closed once the daemon has exited and been waited for.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Exited reports whether the daemon has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

// ErrDaemonExited is what errors.Is finds in the error of a step that
// failed because its daemon exited (on its own, or killed) while it was
// expected to run, as opposed to a timeout or a refusal. errors.As with
// an *ExitedError gives the daemon and its exit status; the log tail is
// in the *DaemonError (Failure) around it.
var ErrDaemonExited = errors.New("daemon exited")

// ExitedError is a daemon that exited while it was expected to run.
type ExitedError struct {
	Side, Role string
	PID        int
	// Status is how it exited: a *testbed.ExitError, nil for status 0.
	Status error
}

func (e *ExitedError) Error() string {
	how := "exit status 0"
	if e.Status != nil {
		how = e.Status.Error()
	}
	return fmt.Sprintf("%s exited (pid %d): %s", e.Role, e.PID, how)
}

// Is makes errors.Is(err, ErrDaemonExited) true.
func (e *ExitedError) Is(target error) bool { return target == ErrDaemonExited }

// Unwrap returns the exit status.
func (e *ExitedError) Unwrap() error { return e.Status }

// Alive returns nil while the daemon runs and an *ExitedError once it has
// exited: the check every wait on a daemon makes, so that a daemon that
// died fails the wait at once rather than at its timeout.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return &ExitedError{Side: p.Side, Role: p.Role, PID: p.PID(), Status: p.err}
	default:
		return nil
	}
}

// Stop sends SIGTERM to the daemon's process group, waits up to grace, then
// sends SIGKILL. Stopping a stopped daemon is a no-op.
func (p *Process) Stop(grace time.Duration) error {
	if p == nil || p.cmd == nil || !p.cmd.Started() {
		return nil
	}
	pid := p.cmd.Pid()
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			if err := p.cmd.Kill(); err != nil {
				return fmt.Errorf("%s: kill %s (pid %d): %w", p.Side, p.Role, pid, err)
			}
			<-p.exited
		}
	}
	p.ep.Forget(p.cmd)
	return nil
}

// Failure builds the error for a daemon that failed: which side, what,
// the cause (kept for errors.Is and errors.As) and the last lines of its
// log. It is a *DaemonError.
func (p *Process) Failure(what string, err error) error {
	return &DaemonError{Side: p.Side, Role: p.Role, What: what, Err: err,
		Log: filepath.Base(p.Log), Tail: LogTail(p.ep, p.Log, 15)}
}

// DaemonError is a step on a daemon that failed.
type DaemonError struct {
	Side, Role string
	// What is the step that failed.
	What string
	// Err is the cause, nil when there is none.
	Err error
	// Log is the base name of the daemon's log and Tail its last lines
	// ("" when unreadable).
	Log, Tail string
}

func (e *DaemonError) Error() string {
	msg := fmt.Sprintf("%s: %s: %s", e.Side, e.Role, e.What)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Tail != "" {
		msg += "\n--- last lines of " + e.Log + " (" + e.Side + ") ---\n" + e.Tail
	}
	return msg
}

// Unwrap returns the cause.
func (e *DaemonError) Unwrap() error { return e.Err }

// LogTail returns the last n lines of the file at path on ep's host (""
// when unreadable).
func LogTail(ep *testbed.Endpoint, path string, n int) string {
	data, err := ep.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// DaemonStartTimeout bounds a daemon's start: the wait for its device,
// socket or server, which returns as soon as it is there. A daemon in
// the kernel lab's emulated guest beside a loaded host took more than
// 10 s to bring its device up (nebula, TestKernelLabMeshVPNs).
const DaemonStartTimeout = 30 * time.Second

// WaitFor polls cond every 20 ms until it reports true, returns an error,
// or timeout passes. cond's error is wrapped (a daemon's Alive error stays
// ErrDaemonExited); a timeout, like ctx's deadline, is
// context.DeadlineExceeded to errors.Is.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wait for %s: %w", what, timeoutError{timeout})
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// timeoutError is WaitFor's timeout.
type timeoutError struct{ after time.Duration }

func (e timeoutError) Error() string { return "timed out after " + e.after.String() }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// WriteSecret writes key material with mode 0600 into the run's private
// directory on ep's host. Secrets never go to results, logs or reports;
// the directory is removed at teardown.
func WriteSecret(ep *testbed.Endpoint, path string, data []byte) error {
	if err := ep.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write secret %s: %w", filepath.Base(path), err)
	}
	return nil
}

// SideDir returns (creating it, 0700, on ep's host) a per-side private
// directory for a method's state: <ep.Dir>/<method>-<side>.
func SideDir(env *Env, method string, ep *testbed.Endpoint) (string, error) {
	dir := filepath.Join(SideRoot(env, ep), method+"-"+ep.Side)
	if err := ep.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%s: create %s: %w", ep.Side, dir, err)
	}
	return dir, nil
}

// SideRoot is the run's private directory on ep's host: the endpoint's
// own, or env.Dir where the endpoint has none (tests).
func SideRoot(env *Env, ep *testbed.Endpoint) string {
	if ep.Dir != "" {
		return ep.Dir
	}
	return env.Dir
}

// DialUnix connects to the unix socket at path. A path longer than a
// sockaddr_un holds (107 bytes; test directories can be that deep) is
// reached through /proc/self/fd of its directory.
func DialUnix(path string) (net.Conn, error) {
	if len(path) < 100 {
		return net.DialTimeout("unix", path, 5*time.Second)
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Dir(path), err)
	}
	defer unix.Close(fd)
	return net.DialTimeout("unix", fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path)), 5*time.Second)
}

// socketAccepts reports whether a daemon accepts connections on the unix
// socket at path. The socket file appears at bind(), before the daemon
// listens: a connection in between is refused, which on a loaded machine
// is a window of tens of milliseconds, so waiting for the file alone is
// not enough.
func socketAccepts(path string) bool {
	c, err := DialUnix(path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// opSocketAccepts asks ep's host whether a daemon accepts connections on
// the unix socket at path (socketAccepts).
var opSocketAccepts = testbed.NewOp("unix.accepts", func(_ context.Context, _ *testbed.Endpoint, path string) (bool, error) {
	return socketAccepts(path), nil
})

// SocketAccepts reports whether a daemon accepts connections on the unix
// socket at path on ep's host.
func SocketAccepts(ctx context.Context, ep *testbed.Endpoint, path string) (bool, error) {
	return opSocketAccepts.Call(ctx, ep, path)
}

// HostImplementer is implemented by methods whose Implementation names a
// program's version: ImplementationOn describes the method as it runs on
// ep's host (ProgramVersion.On), which the runner records with each cell
// in place of Implementation, this machine's.
type HostImplementer interface {
	ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string
}
