package remotehost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// ErrConnectionLost is wrapped by Err, and by the errors of commands that
// were running, when the connection to a host is lost: closed by the peer,
// or silent for KeepaliveMissed keepalive intervals.
var ErrConnectionLost = errors.New("connection lost")

// ErrClosed is what Err returns after Close.
var ErrClosed = errors.New("remotehost: connection closed")

// Keepalives: a keepalive@openssh.com request every KeepaliveInterval; the
// connection counts as lost once KeepaliveMissed requests in a row got no
// reply within their interval.
var (
	KeepaliveInterval = time.Second
	KeepaliveMissed   = 3
)

// DialTimeout bounds connecting and the SSH handshake when ctx has no
// earlier deadline.
var DialTimeout = 15 * time.Second

// Host is one connection to a host: an SSH connection (Dial) or another
// Transport (NewHost). Its methods are safe for concurrent use; each
// command runs in its own session (OpenSSH allows MaxSessions, 10 by
// default, at once per connection).
type Host struct {
	cfg Config
	tr  Transport
	ssh bool // tr is an SSH connection: messages may name OpenSSH

	done     chan struct{}
	failOnce sync.Once
	err      error // set before done is closed
}

// Dial connects to the host cfg names, verifies its host key against
// known_hosts and logs in. The connection is kept alive until Close; Done
// is closed when it is lost.
func Dial(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	checker, err := newHostKeyChecker(cfg)
	if err != nil {
		return nil, err
	}
	auth, agentConn, err := authMethods(cfg)
	if err != nil {
		return nil, err
	}
	if agentConn != nil {
		defer agentConn.Close()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DialTimeout)
		defer cancel()
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", cfg.hostPort())
	if err != nil {
		return nil, fmt.Errorf("remotehost: host %s: connect to %s: %w", cfg.Name, cfg.hostPort(), err)
	}
	// The handshake has no context: a deadline on the connection, and
	// closing it on cancel, bound it.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(conn, cfg.hostPort(), &ssh.ClientConfig{
		User:              cfg.User,
		Auth:              auth,
		HostKeyCallback:   checker.check,
		HostKeyAlgorithms: checker.algorithms(conn.RemoteAddr()),
	})
	if !stop() {
		if err == nil {
			sc.Close()
		}
		conn.Close()
		return nil, fmt.Errorf("remotehost: host %s: ssh handshake with %s: %w", cfg.Name, cfg.hostPort(), context.Cause(ctx))
	}
	if err != nil {
		conn.Close()
		if checker.err != nil {
			return nil, checker.err
		}
		return nil, fmt.Errorf("remotehost: host %s: ssh handshake with %s as %s: %w", cfg.Name, cfg.hostPort(), cfg.User, err)
	}
	_ = conn.SetDeadline(time.Time{})
	tr := newSSHTransport(ssh.NewClient(sc, chans, reqs))
	return newHost(cfg, tr, fmt.Sprintf("%s (%s)", cfg.Name, cfg.hostPort()), true), nil
}

func errOrEOF(err error) error {
	if err == nil {
		return errors.New("closed by the peer")
	}
	return err
}

// Config returns the host's configuration, defaults filled in.
func (h *Host) Config() Config { return h.cfg }

// Name is the host's name in errors and reports.
func (h *Host) Name() string { return h.cfg.Name }

// Done is closed when the connection is lost or closed; Err then says why.
func (h *Host) Done() <-chan struct{} { return h.done }

// Err is nil while the connection is up; after Done is closed it wraps
// ErrConnectionLost, or is ErrClosed after Close.
func (h *Host) Err() error {
	select {
	case <-h.done:
		return h.err
	default:
		return nil
	}
}

// Close closes the connection; commands still running on the host lose
// their session (OpenSSH then closes their stdin and stdout).
func (h *Host) Close() error {
	h.fail(ErrClosed)
	return h.tr.Close()
}

// fail records why the connection ended, once, and closes done.
func (h *Host) fail(err error) {
	h.failOnce.Do(func() {
		h.err = err
		close(h.done)
		h.tr.Close()
	})
}
