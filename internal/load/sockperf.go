package load

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// SockperfDefaultPort is the port sockperf uses when none is given.
const SockperfDefaultPort = 11111

// sockperfMinMsgSize is sockperf 3.7's smallest message ("-m": min 14).
const sockperfMinMsgSize = 14

// SockperfServer describes a TCP sockperf server. It never exits on its
// own: the caller stops it after the client is done.
type SockperfServer struct {
	Addr netip.Addr // -i, required: sockperf 3.7 takes IPv4 only
	Port int        // -p, 0 is SockperfDefaultPort
}

// Validate reports whether s can be turned into a correct argv.
func (s SockperfServer) Validate() error {
	if err := sockperfAddr(s.Addr); err != nil {
		return fmt.Errorf("sockperf server: %w", err)
	}
	if err := validPort(s.Port); err != nil {
		return fmt.Errorf("sockperf server: %w", err)
	}
	return nil
}

// Args returns the server argv, e.g.
//
//	sockperf server -i 198.18.0.2 -p 11111 --tcp
func (s SockperfServer) Args() []string {
	return []string{"sockperf", "server", "-i", s.Addr.Unmap().String(),
		"-p", strconv.Itoa(portOr(s.Port, SockperfDefaultPort)), "--tcp"}
}

// SockperfClient describes a TCP ping-pong run: one request in flight at a
// time, as fast as replies come back (--mps max), round-trip times reported
// in full (--full-rtt) rather than halved.
//
// sockperf spends the first 400 ms warming up and drops them and the last
// few milliseconds from its statistics, so a 2 s run yields about 1.5 s of
// samples. FullLog, when set, is the file sockperf writes one line per
// request to (--full-log) for ParseSockperf. Do not pass --no-rdtsc: with
// it sockperf 3.7 discards every sample on this project's machines (see
// testdata/sockperf_pp_no_rdtsc.txt).
type SockperfClient struct {
	Server   netip.Addr    // -i, IPv4 only in sockperf 3.7
	Port     int           // -p, 0 is SockperfDefaultPort
	Duration time.Duration // -t, whole seconds, at least 1
	MsgSize  int           // -m, bytes; 0 is sockperf's 14
	FullLog  string        // --full-log FILE, optional
}

// Validate reports whether c can be turned into a correct argv.
func (c SockperfClient) Validate() error {
	if err := sockperfAddr(c.Server); err != nil {
		return fmt.Errorf("sockperf client: %w", err)
	}
	if err := validPort(c.Port); err != nil {
		return fmt.Errorf("sockperf client: %w", err)
	}
	if c.Duration < time.Second {
		return fmt.Errorf("sockperf client: duration %s is shorter than 1s", c.Duration)
	}
	if err := wholeSeconds("duration", c.Duration); err != nil {
		return fmt.Errorf("sockperf client: %w", err)
	}
	if c.MsgSize != 0 && c.MsgSize < sockperfMinMsgSize {
		return fmt.Errorf("sockperf client: message size %d is below sockperf's minimum %d", c.MsgSize, sockperfMinMsgSize)
	}
	return nil
}

// Args returns the client argv, e.g.
//
//	sockperf ping-pong -i 198.18.0.2 -p 11111 --tcp -t 2 --mps max --full-rtt --full-log /tmp/x.csv
//
// Call Validate first: Args does not check its input.
func (c SockperfClient) Args() []string {
	args := []string{"sockperf", "ping-pong", "-i", c.Server.Unmap().String(),
		"-p", strconv.Itoa(portOr(c.Port, SockperfDefaultPort)), "--tcp",
		"-t", seconds(c.Duration), "--mps", "max", "--full-rtt"}
	if c.MsgSize > 0 {
		args = append(args, "-m", strconv.Itoa(c.MsgSize))
	}
	if c.FullLog != "" {
		args = append(args, "--full-log", c.FullLog)
	}
	return args
}

func sockperfAddr(a netip.Addr) error {
	a = a.Unmap()
	switch {
	case !a.IsValid() || a.IsUnspecified():
		return fmt.Errorf("address %q is not a host address", a)
	case !a.Is4():
		return fmt.Errorf("address %s: sockperf 3.7 has no IPv6: %w", a, ErrNotSupported)
	}
	return nil
}
