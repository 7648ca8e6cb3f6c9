package remotehost

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ExitError is the error of a remote command that ran and failed: it
// exited with a non-zero status or was killed by a signal.
type ExitError struct {
	Host   string
	Argv   []string
	Status int    // exit status; -1 when killed by a signal
	Signal string // the signal's name without "SIG" ("KILL"), or ""
	Stderr []byte // what the command wrote to stderr (the last 64 KiB)
}

func (e *ExitError) Error() string {
	how := fmt.Sprintf("exit status %d", e.Status)
	if e.Signal != "" {
		how = "killed by signal " + e.Signal
	}
	msg := fmt.Sprintf("remotehost: host %s: %s: %s", e.Host, displayArgv(e.Argv), how)
	if s := strings.TrimSpace(string(e.Stderr)); s != "" {
		msg += ": " + s
	}
	return msg
}

// displayArgv is argv as the remote shell receives it, for messages.
func displayArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// stderrLimit bounds the stderr kept for errors.
const stderrLimit = 64 << 10

// killWait bounds each step of killing a cancelled command: learning its
// process group, the kill itself, and waiting for its exit.
var killWait = 2 * time.Second

// Every command runs as "echo $$; exec CMD" (or "echo $$; SCRIPT"): the
// first line of stdout is the pid of the shell sshd started, which leads
// the command's process group (sshd calls setsid for each session), and
// is taken off before the caller sees stdout (other transports must start
// the shell as a process group leader too). Cancelling kills that group
// from a second session with kill(1): OpenSSH refuses the protocol's
// "signal" request for root logins ("session signalling requires privilege
// separation"), and without a pty it sends no SIGHUP when a session closes.
func wrapExec(cmd string) string   { return "echo $$; exec " + cmd }
func wrapScript(cmd string) string { return "echo $$; " + cmd }

// Run runs argv on the host and returns its stdout and stderr. argv[0] is
// a program, exec'd by the login shell (not a shell builtin). A non-zero
// exit is an *ExitError. When ctx is done the command's process group is
// killed (SIGKILL) and Run returns at once.
func (h *Host) Run(ctx context.Context, argv ...string) (stdout, stderr []byte, err error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return nil, nil, fmt.Errorf("remotehost: host %s: %w", h.cfg.Name, err)
	}
	return h.run(ctx, argv, wrapExec(cmd), nil)
}

// run runs the shell command line cmd (wrapped by wrapExec or wrapScript),
// with stdin as its standard input (nil: empty); argv names it in errors.
func (h *Host) run(ctx context.Context, argv []string, cmd string, stdin io.Reader) ([]byte, []byte, error) {
	if err := h.Err(); err != nil {
		return nil, nil, err
	}
	s, err := h.tr.NewSession()
	if err != nil {
		return nil, nil, h.sessionErr(argv, err)
	}
	defer s.Close()
	var out bytes.Buffer
	hw := &headerWriter{w: &out, pid: make(chan int, 1)}
	errb := &tailBuffer{limit: stderrLimit}
	if err := s.Start(cmd, stdin, hw, errb); err != nil {
		return nil, nil, h.sessionErr(argv, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		h.kill(s, hw.pid, waited)
		return nil, errb.Bytes(), fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), context.Cause(ctx))
	case <-h.done:
		return nil, errb.Bytes(), fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), h.err)
	}
	if hw.bad {
		return nil, errb.Bytes(), noisyShellErr(h.cfg.Name, argv, string(hw.line))
	}
	return out.Bytes(), errb.Bytes(), h.exitErr(argv, err, errb.Bytes())
}

// kill kills a session's command: it waits (briefly) to learn its process
// group, kills the group from a second session, waits (briefly) for the
// exit, and closes the session.
func (h *Host) kill(s TransportSession, pid <-chan int, waited <-chan error) {
	select {
	case p := <-pid:
		h.killGroup(p)
		select {
		case <-waited:
		case <-time.After(killWait):
		case <-h.done:
		}
	case <-waited:
	case <-time.After(killWait):
	case <-h.done:
	}
	s.Close()
}

// killGroup sends SIGKILL to process group pgid on the host.
func (h *Host) killGroup(pgid int) {
	s, err := h.tr.NewSession()
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{})
	go func() {
		// Not "kill -KILL -- -PGID": dash's and busybox's kill builtins
		// refuse "--", and every shell reads "-PGID" after the signal.
		if s.Start(fmt.Sprintf("kill -KILL -%d", pgid), nil, nil, nil) == nil {
			_ = s.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(killWait):
	case <-h.done:
	}
}

// headerWriter takes the first line written to it (the remote shell's
// pid) off the stream, sends it on pid, and passes the rest to w.
type headerWriter struct {
	w    io.Writer
	pid  chan int
	line []byte
	done bool
	bad  bool // the first line was not a pid
}

// errNoisyShell is a first line of stdout that is not the shell's pid.
type errNoisyShell struct{ line string }

func (e errNoisyShell) Error() string { return "not a pid: " + e.line }

// noisyShellErr says what to do when the login shell printed something
// before the command's output.
func noisyShellErr(name string, argv []string, line string) error {
	return fmt.Errorf("remotehost: host %s: %s: the login shell printed %q before the command ran, which would corrupt its output: make the remote user's shell startup files (~/.bashrc) quiet for non-interactive shells", name, displayArgv(argv), firstLine(line))
}

func (hw *headerWriter) Write(p []byte) (int, error) {
	n := len(p)
	if !hw.done {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			hw.line = append(hw.line, p...)
			return n, nil
		}
		hw.line = append(hw.line, p[:i]...)
		hw.done = true
		if pid, err := strconv.Atoi(string(hw.line)); err == nil && pid > 1 {
			hw.pid <- pid
		} else {
			hw.bad = true
		}
		p = p[i+1:]
	}
	if len(p) > 0 {
		if _, err := hw.w.Write(p); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// sessionErr words an error opening or starting a session.
func (h *Host) sessionErr(argv []string, err error) error {
	if lost := h.Err(); lost != nil {
		return fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), lost)
	}
	if !h.ssh {
		return fmt.Errorf("remotehost: host %s: %s: open session: %w", h.cfg.Name, displayArgv(argv), err)
	}
	return fmt.Errorf("remotehost: host %s: %s: open session: %w (OpenSSH allows MaxSessions, 10 by default, at once per connection)", h.cfg.Name, displayArgv(argv), err)
}

// exitErr turns the error of TransportSession.Wait into this package's.
func (h *Host) exitErr(argv []string, err error, stderr []byte) error {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		e := &ExitError{Host: h.cfg.Name, Argv: argv, Status: se.Status, Stderr: bytes.Clone(stderr)}
		if se.Signal != "" {
			e.Status, e.Signal = -1, se.Signal
		}
		return e
	}
	if errors.Is(err, ErrNoExitStatus) {
		// The channel closed without an exit status: the connection (or
		// the remote sshd) went away.
		select {
		case <-h.done:
			return fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), h.err)
		case <-time.After(KeepaliveInterval * time.Duration(KeepaliveMissed+1)):
		}
		if !h.ssh {
			return fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), err)
		}
		return fmt.Errorf("remotehost: host %s: %s: session ended without an exit status (was sshd's session process killed?)", h.cfg.Name, displayArgv(argv))
	}
	if lost := h.Err(); lost != nil {
		return fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), lost)
	}
	return fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), err)
}

// Session is a long-running remote command started by Start: its stdin
// and stdout are pipes (the agent's RPC rides on them), its stderr is kept
// (the last 64 KiB) for messages.
//
// OpenSSH does not kill a command without a pty when its session or
// connection ends: it only closes the command's stdin and stdout. A
// command meant to end with its session must exit on EOF of stdin; Close
// and a done ctx kill its process group explicitly.
type Session struct {
	// Stdin is the command's standard input; closing it sends EOF.
	Stdin io.WriteCloser
	// Stdout is the command's standard output. Read it steadily: the
	// remote command blocks once the channel's window is full.
	Stdout io.Reader
	// Pid is the remote pid of the command, which leads its process
	// group.
	Pid int

	h      *Host
	argv   []string
	s      TransportSession
	stderr *tailBuffer
	waited chan struct{}
	err    error // set before waited is closed
	stop   func() bool
	once   sync.Once
}

// Start starts argv on the host (argv[0] a program, exec'd) and returns
// once it runs. When ctx is done the command's process group is killed;
// Wait reports how it ended.
func (h *Host) Start(ctx context.Context, argv ...string) (*Session, error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return nil, fmt.Errorf("remotehost: host %s: %w", h.cfg.Name, err)
	}
	if err := h.Err(); err != nil {
		return nil, err
	}
	s, err := h.tr.NewSession()
	if err != nil {
		return nil, h.sessionErr(argv, err)
	}
	ss := &Session{h: h, argv: argv, s: s, stderr: &tailBuffer{limit: stderrLimit}, waited: make(chan struct{})}
	var stdout io.Reader
	if ss.Stdin, err = s.StdinPipe(); err == nil {
		stdout, err = s.StdoutPipe()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), err)
	}
	if err := s.Start(wrapExec(cmd), nil, nil, ss.stderr); err != nil {
		s.Close()
		return nil, h.sessionErr(argv, err)
	}
	raw := make(chan error, 1)
	go func() { raw <- s.Wait() }()
	go func() {
		var err error
		select {
		case err = <-raw:
			err = h.exitErr(argv, err, ss.stderr.Bytes())
		case <-h.done:
			s.Close()
			err = fmt.Errorf("remotehost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), h.err)
		}
		ss.err = err
		close(ss.waited)
	}()

	// The first line of stdout is the pid.
	br := bufio.NewReader(stdout)
	header := make(chan error, 1)
	go func() {
		line, err := br.ReadString('\n')
		if err == nil {
			var perr error
			if ss.Pid, perr = strconv.Atoi(strings.TrimSuffix(line, "\n")); perr != nil {
				err = errNoisyShell{line}
			}
		}
		header <- err
	}()
	select {
	case err = <-header:
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-h.done:
		err = h.err
	}
	if err != nil {
		s.Close()
		select {
		case <-ss.waited:
			if ss.err != nil {
				err = ss.err
			}
		case <-time.After(killWait):
		}
		var noisy errNoisyShell
		if errors.As(err, &noisy) {
			return nil, noisyShellErr(h.cfg.Name, argv, noisy.line)
		}
		return nil, fmt.Errorf("remotehost: host %s: start %s: %w", h.cfg.Name, displayArgv(argv), err)
	}
	ss.Stdout = br
	ss.stop = context.AfterFunc(ctx, ss.kill)
	return ss, nil
}

// kill kills the command's process group and waits (briefly) for its end.
func (ss *Session) kill() {
	select {
	case <-ss.waited:
		return
	default:
	}
	ss.h.killGroup(ss.Pid)
	select {
	case <-ss.waited:
	case <-time.After(killWait):
	}
}

// Wait waits for the command to end and returns nil, an *ExitError, or an
// error wrapping ErrConnectionLost.
func (ss *Session) Wait() error {
	<-ss.waited
	ss.stop()
	return ss.err
}

// Stderr returns what the command has written to stderr so far (the last
// 64 KiB).
func (ss *Session) Stderr() []byte { return ss.stderr.Bytes() }

// Close kills the command (SIGKILL to its process group) unless it has
// ended, and closes the session. It returns nil; Wait tells how the
// command ended.
func (ss *Session) Close() error {
	ss.once.Do(func() {
		ss.stop()
		ss.kill()
		ss.s.Close()
	})
	return nil
}

// tailBuffer keeps the last limit bytes written to it; it is safe for
// concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}
