package remotehost

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Transport carries a Host's commands, one TransportSession each: an SSH
// connection (Dial), or another channel to a POSIX shell on the host, such
// as the exec subresource of a Kubernetes pod (NewHost).
type Transport interface {
	// NewSession opens a session for one command.
	NewSession() (TransportSession, error)
	// Wait blocks until the transport is lost or closed and says why
	// ("closed by the peer", "no reply to 3 keepalives in 3s", "pod X on
	// node Y was deleted"); the Host wraps it in ErrConnectionLost.
	Wait() error
	// Close closes the transport; Wait then returns.
	Close() error
}

// TransportSession runs one shell command line. Before Start, the
// command's stdin and stdout may be taken as pipes; Start gives the
// streams not taken as pipes.
type TransportSession interface {
	// StdinPipe returns a pipe to the command's stdin; closing it sends
	// EOF.
	StdinPipe() (io.WriteCloser, error)
	// StdoutPipe returns a pipe from the command's stdout.
	StdoutPipe() (io.Reader, error)
	// Start starts cmd, a command line for a POSIX shell. stdin (nil:
	// empty) and stdout are ignored when the pipe was taken; stderr may
	// be nil.
	Start(cmd string, stdin io.Reader, stdout, stderr io.Writer) error
	// Wait waits for the command to end and its output to be copied. It
	// returns nil after a zero exit, a *StatusError after a non-zero exit
	// or a signal, an error wrapping ErrNoExitStatus when the session ended
	// without either, or another error.
	Wait() error
	// Close ends the session; it need not kill the command.
	Close() error
}

// StatusError is what TransportSession.Wait returns for a command that
// exited non-zero or was killed by a signal.
type StatusError struct {
	Status int    // exit status (ignored when Signal is set)
	Signal string // the signal's name without "SIG" ("KILL"), or ""
}

func (e *StatusError) Error() string {
	if e.Signal != "" {
		return "killed by signal " + e.Signal
	}
	return fmt.Sprintf("exit status %d", e.Status)
}

// ErrNoExitStatus is wrapped by TransportSession.Wait when a session
// ended without an exit status (the channel closed under the command).
var ErrNoExitStatus = errors.New("session ended without an exit status")

// NewHost makes a Host whose commands run over tr. cfg.Name is what
// messages call the host; its other fields are not used. The Host owns tr:
// Close closes it, and Done is closed when tr.Wait returns.
func NewHost(cfg Config, tr Transport) *Host {
	if cfg.Name == "" {
		cfg.Name = "(unnamed)"
	}
	return newHost(cfg, tr, cfg.Name, false)
}

func newHost(cfg Config, tr Transport, where string, isSSH bool) *Host {
	h := &Host{cfg: cfg, tr: tr, ssh: isSSH, done: make(chan struct{})}
	go func() {
		err := tr.Wait()
		h.fail(fmt.Errorf("remotehost: host %s: %w: %v", where, ErrConnectionLost, errOrEOF(err)))
	}()
	return h
}

// sshTransport is an SSH connection, kept alive with keepalive@openssh.com
// requests.
type sshTransport struct {
	client *ssh.Client

	done     chan struct{}
	failOnce sync.Once
	err      error // set before done is closed
}

func newSSHTransport(client *ssh.Client) *sshTransport {
	t := &sshTransport{client: client, done: make(chan struct{})}
	go func() { t.fail(errOrEOF(client.Wait())) }()
	go t.keepalive()
	return t
}

func (t *sshTransport) fail(err error) {
	t.failOnce.Do(func() {
		t.err = err
		close(t.done)
		t.client.Close()
	})
}

func (t *sshTransport) NewSession() (TransportSession, error) {
	s, err := t.client.NewSession()
	if err != nil {
		return nil, err
	}
	return &sshSession{s: s}, nil
}

func (t *sshTransport) Wait() error {
	<-t.done
	return t.err
}

func (t *sshTransport) Close() error {
	err := t.client.Close()
	t.fail(errors.New("closed"))
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// keepalive sends a keepalive@openssh.com request every interval and
// fails the connection after KeepaliveMissed intervals without a reply.
// OpenSSH answers it with a failure reply, which counts: any reply proves
// the peer alive.
func (t *sshTransport) keepalive() {
	tick := time.NewTicker(KeepaliveInterval)
	defer tick.Stop()
	replies := make(chan struct{}, 1)
	inFlight, missed := false, 0
	for {
		select {
		case <-t.done:
			return
		case <-replies:
			inFlight, missed = false, 0
		case <-tick.C:
			if inFlight {
				missed++
				if missed >= KeepaliveMissed {
					t.fail(fmt.Errorf("no reply to %d keepalives in %s", missed, time.Duration(missed)*KeepaliveInterval))
					return
				}
				continue
			}
			inFlight = true
			go func() {
				if _, _, err := t.client.SendRequest("keepalive@openssh.com", true, nil); err == nil {
					replies <- struct{}{}
				}
			}()
		}
	}
}

// sshSession is one SSH session.
type sshSession struct{ s *ssh.Session }

func (s *sshSession) StdinPipe() (io.WriteCloser, error) { return s.s.StdinPipe() }
func (s *sshSession) StdoutPipe() (io.Reader, error)     { return s.s.StdoutPipe() }
func (s *sshSession) Close() error                       { return s.s.Close() }

func (s *sshSession) Start(cmd string, stdin io.Reader, stdout, stderr io.Writer) error {
	if s.s.Stdin == nil && stdin != nil {
		s.s.Stdin = stdin
	}
	if s.s.Stdout == nil && stdout != nil {
		s.s.Stdout = stdout
	}
	if stderr != nil {
		s.s.Stderr = stderr
	}
	return s.s.Start(cmd)
}

func (s *sshSession) Wait() error {
	err := s.s.Wait()
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		return &StatusError{Status: ee.ExitStatus(), Signal: ee.Signal()}
	}
	var missing *ssh.ExitMissingError
	if errors.As(err, &missing) {
		return fmt.Errorf("%w: %v", ErrNoExitStatus, err)
	}
	return err
}
