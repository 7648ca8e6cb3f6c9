package rr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// Protocol constants.
const (
	helloMagic = "TBR1" // protocol version 1
	helloOK    = "TBOK"
	helloSize  = 12 // magic, request size, response size
)

// errTimeout is returned by readFull when SO_RCVTIMEO expires.
var errTimeout = errors.New("timed out")

// sockaddr converts ap to the form the socket calls take, with the address
// family to create the socket in.
func sockaddr(ap netip.AddrPort) (unix.Sockaddr, int, error) {
	a := ap.Addr()
	if !a.IsValid() {
		return nil, 0, fmt.Errorf("address %q is not valid", ap)
	}
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}, unix.AF_INET, nil
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	if z := a.Zone(); z != "" {
		ifi, err := net.InterfaceByName(z)
		if err != nil {
			return nil, 0, fmt.Errorf("address %s: zone: %w", ap, err)
		}
		sa.ZoneId = uint32(ifi.Index)
	}
	return sa, unix.AF_INET6, nil
}

// setTimeout sets SO_RCVTIMEO and SO_SNDTIMEO (which also bounds a blocking
// connect) on fd.
func setTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("set SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("set SO_SNDTIMEO: %w", err)
	}
	return nil
}

func setNoDelay(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return fmt.Errorf("set TCP_NODELAY: %w", err)
	}
	return nil
}

// readFull reads exactly len(p) bytes from the blocking socket fd. It
// returns io.EOF if the peer closed the connection before the first byte,
// io.ErrUnexpectedEOF if it closed in the middle, and errTimeout when
// SO_RCVTIMEO expired. It does not allocate unless it fails.
func readFull(fd int, p []byte) error {
	for got := 0; got < len(p); {
		n, err := unix.Read(fd, p[got:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return errTimeout
		case err != nil:
			return err
		case n == 0 && got == 0:
			return io.EOF
		case n == 0:
			return io.ErrUnexpectedEOF
		}
		got += n
	}
	return nil
}

// writeFull writes all of p to the blocking socket fd.
func writeFull(fd int, p []byte) error {
	for sent := 0; sent < len(p); {
		n, err := unix.Write(fd, p[sent:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return errTimeout
		case err != nil:
			return err
		}
		sent += n
	}
	return nil
}

func encodeHello(req, resp int) []byte {
	b := make([]byte, helloSize)
	copy(b, helloMagic)
	binary.BigEndian.PutUint32(b[4:], uint32(req))
	binary.BigEndian.PutUint32(b[8:], uint32(resp))
	return b
}

// decodeHello returns the sizes a client asked for.
func decodeHello(b []byte) (req, resp int, err error) {
	if len(b) != helloSize || string(b[:4]) != helloMagic {
		return 0, 0, fmt.Errorf("bad hello %q: not a tunbench rr client of protocol %s", b, helloMagic)
	}
	req = int(binary.BigEndian.Uint32(b[4:]))
	resp = int(binary.BigEndian.Uint32(b[8:]))
	if err := checkSizes(req, resp); err != nil {
		return 0, 0, fmt.Errorf("bad hello: %w", err)
	}
	return req, resp, nil
}

func checkSizes(req, resp int) error {
	for _, s := range []struct {
		what string
		n    int
	}{{"request", req}, {"response", resp}} {
		if s.n < 1 || s.n > MaxMessageSize {
			return fmt.Errorf("%s size %d outside 1..%d", s.what, s.n, MaxMessageSize)
		}
	}
	return nil
}

// setCongestion sets the TCP congestion control of fd (TCP_CONGESTION);
// "" leaves the namespace's default. A listening socket hands it to the
// connections it accepts.
func setCongestion(fd int, name string) error {
	if name == "" {
		return nil
	}
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil {
		return fmt.Errorf("set TCP_CONGESTION %s: %w", name, err)
	}
	return nil
}

// congestion reads the TCP congestion control fd uses.
func congestion(fd int) (string, error) {
	name, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	if err != nil {
		return "", fmt.Errorf("get TCP_CONGESTION: %w", err)
	}
	return name, nil
}
