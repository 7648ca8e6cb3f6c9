package load

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"time"
)

// Iperf3DefaultPort is the port iperf3 listens on when none is given.
const Iperf3DefaultPort = 5201

// iperf3MaxStreams is iperf3 3.12's limit on -P.
const iperf3MaxStreams = 128

// Iperf3Client describes one iperf3 client run (iperf3 -c).
//
// Zero values leave iperf3's defaults and omit the flag: Duration 0 is
// iperf3's 10 s, Omit 0 no warm-up, Streams 0 or 1 one stream, Bitrate ""
// unlimited for TCP but 1 Mbit/s for UDP, an invalid Bind lets the kernel
// choose. Port 0 means Iperf3DefaultPort, which is always written out.
// iperf3 3.12 reads -t and -O as whole seconds (it silently truncates
// fractions), so Validate rejects fractional durations.
type Iperf3Client struct {
	Server   netip.Addr
	Port     int
	Duration time.Duration // -t, measured time, whole seconds
	Omit     time.Duration // -O, warm-up excluded from the totals, whole seconds
	Streams  int           // -P, parallel streams
	Reverse  bool          // -R, the server sends
	Bidir    bool          // --bidir, both send at once
	MSS      int           // -M, TCP maximum segment size; 0 is the kernel's
	// Congestion is -C, the TCP congestion control of the test's sockets
	// on both ends (iperf3 passes it to the server); "" is the hosts'.
	Congestion string
	UDP        bool       // -u
	Bitrate    string     // -b, iperf3 syntax: "200M", "1G", "10M/100" (rate/burst)
	Bind       netip.Addr // -B, local address (optional)
}

// congestionRe is a TCP congestion control algorithm's name as the kernel
// knows it (TCP_CA_NAME_MAX is 16 bytes with the NUL).
var congestionRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,14}$`)

// CongestionName reports whether name can be a TCP congestion control
// algorithm (cubic, bbr, reno, dctcp, ...).
func CongestionName(name string) bool { return congestionRe.MatchString(name) }

// bitrateRe is iperf3's -b syntax: a number, an optional K/M/G/T suffix and
// an optional /burst packet count.
var bitrateRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[KMGTkmgt]?(/[0-9]+)?$`)

// Validate reports whether c can be turned into a correct argv.
func (c Iperf3Client) Validate() error {
	if !c.Server.IsValid() || c.Server.IsUnspecified() {
		return fmt.Errorf("iperf3 client: server address %q is not a host address", c.Server)
	}
	if err := validPort(c.Port); err != nil {
		return fmt.Errorf("iperf3 client: %w", err)
	}
	if err := wholeSeconds("duration", c.Duration); err != nil {
		return fmt.Errorf("iperf3 client: %w", err)
	}
	if err := wholeSeconds("omit", c.Omit); err != nil {
		return fmt.Errorf("iperf3 client: %w", err)
	}
	if c.Streams < 0 || c.Streams > iperf3MaxStreams {
		return fmt.Errorf("iperf3 client: streams %d outside 0..%d", c.Streams, iperf3MaxStreams)
	}
	if c.Reverse && c.Bidir {
		return errors.New("iperf3 client: reverse and bidir exclude each other")
	}
	if c.MSS < 0 || c.MSS > 65495 || (c.MSS > 0 && c.MSS < 88) {
		return fmt.Errorf("iperf3 client: mss %d outside 88..65495", c.MSS)
	}
	if c.Congestion != "" && !CongestionName(c.Congestion) {
		return fmt.Errorf("iperf3 client: congestion control %q is not an algorithm name", c.Congestion)
	}
	if c.Bitrate != "" && !bitrateRe.MatchString(c.Bitrate) {
		return fmt.Errorf("iperf3 client: bitrate %q is not iperf3 syntax (e.g. 200M, 1G, 10M/100)", c.Bitrate)
	}
	if c.Bind.IsValid() && c.Bind.Unmap().Is4() != c.Server.Unmap().Is4() {
		return fmt.Errorf("iperf3 client: bind address %s and server %s are of different families", c.Bind, c.Server)
	}
	return nil
}

// Args returns the client argv, e.g.
//
//	iperf3 -c 198.18.0.2 -p 5201 -t 3 -O 1 -P 4 -i 1 -J -4
//
// It writes one-second intervals and JSON (-J) for ParseIperf3. Call
// Validate first: Args does not check its input.
func (c Iperf3Client) Args() []string {
	server := c.Server.Unmap()
	args := []string{"iperf3", "-c", server.String(), "-p", strconv.Itoa(portOr(c.Port, Iperf3DefaultPort))}
	if c.Duration > 0 {
		args = append(args, "-t", seconds(c.Duration))
	}
	if c.Omit > 0 {
		args = append(args, "-O", seconds(c.Omit))
	}
	if c.Streams > 1 {
		args = append(args, "-P", strconv.Itoa(c.Streams))
	}
	args = append(args, "-i", "1", "-J", familyFlag(server))
	if c.Reverse {
		args = append(args, "-R")
	}
	if c.Bidir {
		args = append(args, "--bidir")
	}
	if c.MSS > 0 {
		args = append(args, "-M", strconv.Itoa(c.MSS))
	}
	if c.Congestion != "" && !c.UDP {
		args = append(args, "-C", c.Congestion)
	}
	if c.UDP {
		args = append(args, "-u")
	}
	if c.Bitrate != "" {
		args = append(args, "-b", c.Bitrate)
	}
	if c.Bind.IsValid() {
		args = append(args, "-B", c.Bind.Unmap().String())
	}
	return args
}

// Iperf3Server describes a one-off iperf3 server: it serves one test and
// exits (-1), writing its own JSON report (-J) to stdout. An invalid Bind
// listens on all addresses; Port 0 is Iperf3DefaultPort.
type Iperf3Server struct {
	Bind netip.Addr
	Port int
}

// Validate reports whether s can be turned into a correct argv.
func (s Iperf3Server) Validate() error {
	if err := validPort(s.Port); err != nil {
		return fmt.Errorf("iperf3 server: %w", err)
	}
	return nil
}

// Args returns the server argv, e.g.
//
//	iperf3 -s -1 -B 198.18.0.2 -p 5201 -J
func (s Iperf3Server) Args() []string {
	args := []string{"iperf3", "-s", "-1"}
	if s.Bind.IsValid() {
		args = append(args, "-B", s.Bind.Unmap().String())
	}
	return append(args, "-p", strconv.Itoa(portOr(s.Port, Iperf3DefaultPort)), "-J")
}

func validPort(p int) error {
	if p < 0 || p > 65535 {
		return fmt.Errorf("port %d outside 1..65535", p)
	}
	return nil
}

func portOr(p, def int) int {
	if p == 0 {
		return def
	}
	return p
}

func wholeSeconds(what string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s %s is negative", what, d)
	}
	if d%time.Second != 0 {
		return fmt.Errorf("%s %s is not a whole number of seconds (the tool would truncate it)", what, d)
	}
	return nil
}

func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10)
}

func familyFlag(a netip.Addr) string {
	if a.Is4() {
		return "-4"
	}
	return "-6"
}

// SplitStreams spreads streams over as few iperf3 processes as the layout
// allows (at most perProcess streams each, perProcess capped at iperf3's
// 128) and balances them: 130 streams at 128 per process give 65 and 65,
// not 128 and 2, so no single-threaded process carries more than it must.
// The counts are in descending order and sum to streams.
func SplitStreams(streams, perProcess int) []int {
	if streams <= 0 {
		return nil
	}
	perProcess = min(max(perProcess, 1), iperf3MaxStreams)
	n := (streams + perProcess - 1) / perProcess
	out := make([]int, n)
	for i := range out {
		out[i] = streams / n
		if i < streams%n {
			out[i]++
		}
	}
	return out
}
