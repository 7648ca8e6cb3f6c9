package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
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
	msg := fmt.Sprintf("sshhost: host %s: %s: %s", e.Host, displayArgv(e.Argv), how)
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

// killWait bounds how long a cancelled command's session waits for the
// remote exit after the KILL signal before it is closed.
var killWait = 2 * time.Second

// Run runs argv on the host and returns its stdout and stderr. A non-zero
// exit is an *ExitError. When ctx is done the remote command's process
// group is sent SIGKILL (OpenSSH delivers the "signal" request with
// killpg) and the session is closed.
func (h *Host) Run(ctx context.Context, argv ...string) (stdout, stderr []byte, err error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return nil, nil, fmt.Errorf("sshhost: host %s: %w", h.cfg.Name, err)
	}
	return h.run(ctx, argv, cmd, nil)
}

// run runs the shell command line cmd, with stdin as its standard input
// (nil: empty); argv names it in errors.
func (h *Host) run(ctx context.Context, argv []string, cmd string, stdin io.Reader) ([]byte, []byte, error) {
	if err := h.Err(); err != nil {
		return nil, nil, err
	}
	s, err := h.client.NewSession()
	if err != nil {
		return nil, nil, h.sessionErr(argv, err)
	}
	defer s.Close()
	var out bytes.Buffer
	errb := &tailBuffer{limit: stderrLimit}
	s.Stdout, s.Stderr, s.Stdin = &out, errb, stdin
	if err := s.Start(cmd); err != nil {
		return nil, nil, h.sessionErr(argv, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		h.kill(s, waited)
		return nil, errb.Bytes(), fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), context.Cause(ctx))
	case <-h.done:
		return nil, errb.Bytes(), fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), h.err)
	}
	return out.Bytes(), errb.Bytes(), h.exitErr(argv, err, errb.Bytes())
}

// kill sends KILL to a session's command, waits a little for its exit to
// be reported, and closes the session.
func (h *Host) kill(s *ssh.Session, waited <-chan error) {
	_ = s.Signal(ssh.SIGKILL)
	select {
	case <-waited:
	case <-time.After(killWait):
	case <-h.done:
	}
	s.Close()
}

// sessionErr words an error opening or starting a session.
func (h *Host) sessionErr(argv []string, err error) error {
	if lost := h.Err(); lost != nil {
		return fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), lost)
	}
	return fmt.Errorf("sshhost: host %s: %s: open session: %w (OpenSSH allows MaxSessions, 10 by default, at once per connection)", h.cfg.Name, displayArgv(argv), err)
}

// exitErr turns the error of ssh.Session.Wait into this package's.
func (h *Host) exitErr(argv []string, err error, stderr []byte) error {
	if err == nil {
		return nil
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		e := &ExitError{Host: h.cfg.Name, Argv: argv, Status: ee.ExitStatus(), Stderr: bytes.Clone(stderr)}
		if sig := ee.Signal(); sig != "" {
			e.Status, e.Signal = -1, sig
		}
		return e
	}
	var missing *ssh.ExitMissingError
	if errors.As(err, &missing) {
		// The channel closed without an exit status: the connection (or
		// the remote sshd) went away.
		select {
		case <-h.done:
			return fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), h.err)
		case <-time.After(KeepaliveInterval * time.Duration(KeepaliveMissed+1)):
		}
		return fmt.Errorf("sshhost: host %s: %s: session ended without an exit status (was sshd's session process killed?)", h.cfg.Name, displayArgv(argv))
	}
	return fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), err)
}

// Session is a long-running remote command started by Start: its stdin
// and stdout are pipes (the agent's RPC rides on them), its stderr is kept
// (the last 64 KiB) for messages.
type Session struct {
	// Stdin is the command's standard input; closing it sends EOF.
	Stdin io.WriteCloser
	// Stdout is the command's standard output. Read it steadily: the
	// remote command blocks once the channel's window is full.
	Stdout io.Reader

	h      *Host
	argv   []string
	s      *ssh.Session
	stderr *tailBuffer
	waited chan struct{}
	err    error // set before waited is closed
	stop   func() bool
	once   sync.Once
}

// Start starts argv on the host and returns at once. When ctx is done the
// command is killed as in Run; Wait reports how it ended.
func (h *Host) Start(ctx context.Context, argv ...string) (*Session, error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return nil, fmt.Errorf("sshhost: host %s: %w", h.cfg.Name, err)
	}
	if err := h.Err(); err != nil {
		return nil, err
	}
	s, err := h.client.NewSession()
	if err != nil {
		return nil, h.sessionErr(argv, err)
	}
	ss := &Session{h: h, argv: argv, s: s, stderr: &tailBuffer{limit: stderrLimit}, waited: make(chan struct{})}
	if ss.Stdin, err = s.StdinPipe(); err == nil {
		ss.Stdout, err = s.StdoutPipe()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), err)
	}
	s.Stderr = ss.stderr
	if err := s.Start(cmd); err != nil {
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
			err = fmt.Errorf("sshhost: host %s: %s: %w", h.cfg.Name, displayArgv(argv), h.err)
		}
		ss.err = err
		close(ss.waited)
	}()
	ss.stop = context.AfterFunc(ctx, func() {
		_ = s.Signal(ssh.SIGKILL)
		select {
		case <-ss.waited:
		case <-time.After(killWait):
		}
		s.Close()
	})
	return ss, nil
}

// Wait waits for the command to end and returns nil, an *ExitError, or an
// error wrapping ErrConnectionLost.
func (s *Session) Wait() error {
	<-s.waited
	s.stop()
	return s.err
}

// Stderr returns what the command has written to stderr so far (the last
// 64 KiB).
func (s *Session) Stderr() []byte { return s.stderr.Bytes() }

// Close kills the command (SIGKILL to its process group), closes the
// session and waits (briefly) for it to end. It returns nil; Wait tells
// how the command ended.
func (s *Session) Close() error {
	s.once.Do(func() {
		s.stop()
		select {
		case <-s.waited:
		default:
			_ = s.s.Signal(ssh.SIGKILL)
			select {
			case <-s.waited:
			case <-time.After(killWait):
			}
		}
		s.s.Close()
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
