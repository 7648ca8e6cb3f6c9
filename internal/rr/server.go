package rr

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// MaxMessageSize is the largest request or response, in bytes.
const MaxMessageSize = 1 << 20

// ErrServerClosed is returned by Server.Serve after Close.
var ErrServerClosed = errors.New("rr server closed")

// Server is a listening rr server. It serves one connection at a time, in
// the order they arrive; a second client waits in the listen backlog until
// the first closes. Close may be called from any goroutine; the other
// methods must not be called concurrently.
type Server struct {
	// ConnError, if set, is told about each connection that ended with an
	// error when Serve goes on to the next one (once is false).
	ConnError func(error)

	addr netip.AddrPort

	mu      sync.Mutex
	fd      int // listening socket, or -1 once closed
	serving bool
	closed  bool
	conn    int // connection being served, or -1
}

// Listen opens a listening socket on addr. An invalid address listens on
// every IPv4 and IPv6 address; port 0 picks a free port (see Addr).
func Listen(addr netip.AddrPort) (*Server, error) { return ListenCongestion(addr, "") }

// ListenCongestion is Listen with the TCP congestion control the accepted
// connections use ("" for the namespace's default).
func ListenCongestion(addr netip.AddrPort, cc string) (*Server, error) {
	bind := addr
	if !bind.Addr().IsValid() {
		bind = netip.AddrPortFrom(netip.IPv6Unspecified(), addr.Port())
	}
	sa, family, err := sockaddr(bind)
	if err != nil {
		return nil, fmt.Errorf("rr server: %w", err)
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rr server: socket: %w", err)
	}
	if err := setCongestion(fd, cc); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rr server: %w", err)
	}
	if err := listenOn(fd, family, sa, !addr.Addr().IsValid()); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rr server: listen on %s: %w", bind, err)
	}
	local, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rr server: getsockname: %w", err)
	}
	return &Server{addr: netip.AddrPortFrom(bind.Addr(), uint16(port(local))), fd: fd, conn: -1}, nil
}

func listenOn(fd, family int, sa unix.Sockaddr, dual bool) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("set SO_REUSEADDR: %w", err)
	}
	if family == unix.AF_INET6 {
		v6only := 1
		if dual {
			v6only = 0
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			return fmt.Errorf("set IPV6_V6ONLY: %w", err)
		}
	}
	if err := setNoDelay(fd); err != nil {
		return err
	}
	if err := unix.Bind(fd, sa); err != nil {
		return err
	}
	return unix.Listen(fd, 16)
}

func port(sa unix.Sockaddr) int {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return sa.Port
	case *unix.SockaddrInet6:
		return sa.Port
	}
	return 0
}

// Addr is the address the server listens on, with the port the kernel
// chose if Listen was given port 0.
func (s *Server) Addr() netip.AddrPort { return s.addr }

// Serve accepts connections and serves each until its client closes it.
// With once it returns after the first connection: nil if the client
// completed the handshake and closed the connection cleanly, else the
// error. Without once it goes on with the next connection (reporting
// failed ones to ConnError) until Close, and returns ErrServerClosed. Serve
// closes the listening socket before it returns.
func (s *Server) Serve(once bool) error {
	s.mu.Lock()
	if s.closed || s.serving {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.serving = true
	s.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer s.Close()
	defer s.closeListener()
	buf := make([]byte, MaxMessageSize)
	for {
		fd, _, err := unix.Accept4(s.fd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if s.isClosed() {
			if err == nil {
				unix.Close(fd)
			}
			return ErrServerClosed
		}
		if err != nil {
			return fmt.Errorf("rr server: accept: %w", err)
		}
		err = s.serveConn(fd, buf)
		if once {
			return err
		}
		if err != nil && s.ConnError != nil {
			s.ConnError(err)
		}
	}
}

// serveConn answers the requests of one connection until the client
// closes it, then closes fd.
func (s *Server) serveConn(fd int, buf []byte) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		unix.Close(fd)
		return ErrServerClosed
	}
	s.conn = fd
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.conn = -1
		unix.Close(fd)
		s.mu.Unlock()
	}()
	n, err := echo(fd, buf)
	if err != nil {
		if s.isClosed() {
			return ErrServerClosed
		}
		return fmt.Errorf("rr server: connection: after %d transactions: %w", n, err)
	}
	return nil
}

// echo does the handshake, then reads requests and writes responses until
// the client closes the connection. It returns the transactions done.
func echo(fd int, buf []byte) (int64, error) {
	if err := setNoDelay(fd); err != nil {
		return 0, err
	}
	hello := buf[:helloSize]
	if err := readFull(fd, hello); err != nil {
		return 0, fmt.Errorf("read hello: %w", err)
	}
	reqSize, respSize, err := decodeHello(hello)
	if err != nil {
		return 0, err
	}
	if err := writeFull(fd, []byte(helloOK)); err != nil {
		return 0, fmt.Errorf("write hello: %w", err)
	}
	req, resp := buf[:reqSize], buf[:respSize]
	var n int64
	for ; ; n++ {
		err := readFull(fd, req)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read request: %w", err)
		}
		if err := writeFull(fd, resp); err != nil {
			return n, fmt.Errorf("write response: %w", err)
		}
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops the server: a blocked Serve returns ErrServerClosed, and the
// connection being served, if any, is shut down. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if !s.serving {
		unix.Close(s.fd)
		s.fd = -1
		return nil
	}
	// shutdown(2) wakes a thread blocked in accept or read on these
	// sockets, which close(2) does not; Serve closes them.
	if s.fd >= 0 {
		_ = unix.Shutdown(s.fd, unix.SHUT_RDWR)
	}
	if s.conn >= 0 {
		_ = unix.Shutdown(s.conn, unix.SHUT_RDWR)
	}
	return nil
}

func (s *Server) closeListener() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// Serve listens on addr, calls ready (if not nil) once the socket listens,
// and serves connections one at a time until an error: the server of
// "tunbench rr server". ServeOnce is the one-shot variant.
func Serve(addr netip.AddrPort, ready func()) error {
	return listenAndServe(addr, false, ready)
}

// ServeOnce is Serve for a single connection, like iperf3 -1: it returns
// nil once its one client has closed the connection cleanly.
func ServeOnce(addr netip.AddrPort, ready func()) error {
	return listenAndServe(addr, true, ready)
}

func listenAndServe(addr netip.AddrPort, once bool, ready func()) error {
	s, err := Listen(addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	return s.Serve(once)
}
