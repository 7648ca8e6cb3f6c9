package method

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Where a declared listener is bound (Listen.Addr).
const (
	// ListenUnderlay is the endpoint's underlay (test) address of the
	// run's underlay family: on a real host, the site's address.
	ListenUnderlay = "underlay"
	// ListenOverlay is the endpoint's overlay address (Path.A or Path.B):
	// reachable only through the tunnel.
	ListenOverlay = "overlay"
	// ListenLoopback is 127.0.0.1 or ::1: reachable from the endpoint
	// itself only.
	ListenLoopback = "loopback"
	// ListenWildcard is 0.0.0.0 or ::, every address of the endpoint,
	// for a program that cannot bind one (Listen.Why says why).
	ListenWildcard = "wildcard"
)

// Listen is one socket a method opens for the length of a run: a TCP
// socket in state LISTEN or an unconnected UDP socket, either of which
// answers whoever reaches its address.
type Listen struct {
	// Side is "a", "b", or "" for both.
	Side string
	// Proto is "tcp" or "udp".
	Proto string
	// Port is the port; 0 is one the kernel picks.
	Port int
	// PortOption names the method option that sets Port, if one does.
	PortOption string
	// Addr is ListenUnderlay, ListenOverlay, ListenLoopback or
	// ListenWildcard.
	Addr string
	// Families, for a wildcard socket, is how many families it is opened
	// in: "run" (the run's family only) or "both" (0.0.0.0 and ::
	// whatever the run's family).
	Families string
	// Program is the program that opens it, e.g. "openvpn (server)".
	Program string
	// Why says, for a wildcard or loopback socket, why it is not bound to
	// the underlay address.
	Why string
}

// Listener is implemented by methods that open sockets others could
// reach: Listens returns every one, for the option values opts and the
// measured family. A method without it opens none (kernel devices and
// routes only), or has not declared its sockets (ListensOf says which).
type Listener interface {
	Listens(opts Values, family string) []Listen
}

// ListensOf returns the sockets m declares with opts for family, and
// whether m declares its sockets at all.
func ListensOf(m Method, opts Values, family string) ([]Listen, bool) {
	l, ok := m.(Listener)
	if !ok {
		return nil, false
	}
	return l.Listens(opts, family), true
}

// OnSide reports whether l is opened on side ("a" or "b").
func (l Listen) OnSide(side string) bool { return l.Side == "" || l.Side == side }

// Socket is one listening socket read from /proc/net/{tcp,tcp6,udp,udp6}.
type Socket struct {
	Proto string // "tcp" or "udp"
	Local netip.AddrPort
}

// String is e.g. "udp 198.18.0.2:1194".
func (s Socket) String() string { return s.Proto + " " + s.Local.String() }

// ParseSockets returns the listening sockets of one of /proc/net/tcp,
// tcp6, udp or udp6 (proto "tcp" or "udp"): TCP sockets in state LISTEN
// and UDP sockets with no remote address (connected UDP sockets answer
// their peer only and are left out).
func ParseSockets(data []byte, proto string) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		local, err := parseProcAddr(f[1])
		if err != nil {
			return nil, fmt.Errorf("parse %s socket %q: %w", proto, sc.Text(), err)
		}
		remote, err := parseProcAddr(f[2])
		if err != nil {
			return nil, fmt.Errorf("parse %s socket %q: %w", proto, sc.Text(), err)
		}
		switch proto {
		case "tcp":
			if f[3] != "0A" {
				continue
			}
		default:
			if !remote.Addr().IsUnspecified() || remote.Port() != 0 {
				continue
			}
		}
		out = append(out, Socket{Proto: proto, Local: local})
	}
	return out, sc.Err()
}

// parseProcAddr parses "0100007F:1F90" (IPv4) or the 32-hex-digit IPv6
// form of /proc/net: each 32-bit word in host (little-endian) order.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q has no port", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port of %q: %w", s, err)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q: not 4 or 16 hex bytes", s)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// Matches reports whether socket s is one that l declares on an endpoint
// whose underlay address is under and overlay address is over (either
// may be invalid when unknown).
func (l Listen) Matches(s Socket, under, over netip.Addr) bool {
	if s.Proto != l.Proto || (l.Port != 0 && int(s.Local.Port()) != l.Port) {
		return false
	}
	a := s.Local.Addr()
	switch l.Addr {
	case ListenUnderlay:
		return under.IsValid() && a == under.Unmap()
	case ListenOverlay:
		return over.IsValid() && a == over.Unmap()
	case ListenLoopback:
		return a.IsLoopback()
	case ListenWildcard:
		return a.IsUnspecified()
	}
	return false
}
