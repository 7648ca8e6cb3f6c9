package load

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// RRDefaultPort is the port of tunbench's own request/response tool
// (netserver's 12865 plus one, so both can run side by side).
const RRDefaultPort = 12866

// rrMaxMessageSize is the tool's largest request or response (package rr).
const rrMaxMessageSize = 1 << 20

// RRServer describes the server of tunbench's request/response tool
// ("tunbench rr server", package rr). It is one-shot, like iperf3 -1: it
// serves one client and exits when that client closes the connection. An
// invalid Bind listens on every IPv4 and IPv6 address; Port 0 is
// RRDefaultPort. Exe is the path of the tunbench binary (os.Executable);
// "" is "tunbench", left to the caller to resolve.
type RRServer struct {
	Bind netip.Addr
	Port int
	Exe  string
	// Congestion is the TCP congestion control of the accepted
	// connections ("" for the namespace's default).
	Congestion string
}

// Validate reports whether s can be turned into a correct argv.
func (s RRServer) Validate() error {
	if err := validPort(s.Port); err != nil {
		return fmt.Errorf("tunbench-rr server: %w", err)
	}
	if s.Congestion != "" && !CongestionName(s.Congestion) {
		return fmt.Errorf("tunbench-rr server: congestion control %q is not an algorithm name", s.Congestion)
	}
	return nil
}

// Args returns the server argv, e.g.
//
//	/usr/bin/tunbench rr server --addr 198.18.0.2 --port 12866 --once
func (s RRServer) Args() []string {
	args := []string{exeOr(s.Exe), "rr", "server"}
	if s.Bind.IsValid() {
		args = append(args, "--addr", s.Bind.Unmap().String())
	}
	args = append(args, "--port", strconv.Itoa(portOr(s.Port, RRDefaultPort)), "--once")
	if s.Congestion != "" {
		args = append(args, "--cc", s.Congestion)
	}
	return args
}

// RRClient describes one run of tunbench's request/response tool, with
// netperf TCP_RR semantics: one connection, one transaction in flight,
// back to back, each timed. It works over IPv4 and IPv6 and starts
// measuring at once (after Warmup, excluded from the figures).
//
// Zero values: Port 0 is RRDefaultPort; Warmup 0 is the tool's 200 ms, a
// negative Warmup none; RequestSize and ResponseSize 0 are 1 byte, as in
// netperf. Duration is required and, unlike for the other tools, need not
// be a whole number of seconds. Every value is written out in the argv.
type RRClient struct {
	Server                    netip.Addr
	Port                      int
	Duration, Warmup          time.Duration
	RequestSize, ResponseSize int
	Exe                       string // as in RRServer
	// Congestion is the connection's TCP congestion control ("" for the
	// namespace's default); the report says what it used.
	Congestion string
}

// rrDefaultWarmup is the tool's default warm-up (rr.DefaultWarmup).
const rrDefaultWarmup = 200 * time.Millisecond

// Validate reports whether c can be turned into a correct argv.
func (c RRClient) Validate() error {
	if !c.Server.IsValid() || c.Server.IsUnspecified() {
		return fmt.Errorf("tunbench-rr client: server address %q is not a host address", c.Server)
	}
	if err := validPort(c.Port); err != nil {
		return fmt.Errorf("tunbench-rr client: %w", err)
	}
	if c.Duration <= 0 {
		return fmt.Errorf("tunbench-rr client: duration %s is not positive", c.Duration)
	}
	if c.Congestion != "" && !CongestionName(c.Congestion) {
		return fmt.Errorf("tunbench-rr client: congestion control %q is not an algorithm name", c.Congestion)
	}
	for _, s := range []struct {
		what string
		n    int
	}{{"request", c.RequestSize}, {"response", c.ResponseSize}} {
		if s.n < 0 || s.n > rrMaxMessageSize {
			return fmt.Errorf("tunbench-rr client: %s size %d outside 0..%d", s.what, s.n, rrMaxMessageSize)
		}
	}
	return nil
}

// Args returns the client argv, e.g.
//
//	/usr/bin/tunbench rr client --addr 2001:2::2 --port 12866 --duration 3s --warmup 200ms --request 1 --response 1
//
// Call Validate first: Args does not check its input.
func (c RRClient) Args() []string {
	warmup := c.Warmup
	switch {
	case warmup == 0:
		warmup = rrDefaultWarmup
	case warmup < 0:
		warmup = 0
	}
	args := []string{exeOr(c.Exe), "rr", "client",
		"--addr", c.Server.Unmap().String(),
		"--port", strconv.Itoa(portOr(c.Port, RRDefaultPort)),
		"--duration", c.Duration.String(),
		"--warmup", warmup.String(),
		"--request", strconv.Itoa(max(c.RequestSize, 1)),
		"--response", strconv.Itoa(max(c.ResponseSize, 1))}
	if c.Congestion != "" {
		args = append(args, "--cc", c.Congestion)
	}
	return args
}

func exeOr(exe string) string {
	if exe == "" {
		return "tunbench"
	}
	return exe
}
