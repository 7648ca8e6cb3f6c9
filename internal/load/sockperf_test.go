package load

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The flags used here are those sockperf 3.7 lists in "sockperf pp --help"
// and "sockperf sr --help"; the "capture" cases are the argv
// testdata/capture.sh ran.
func TestSockperfArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{{
		name: "capture server",
		args: SockperfServer{Addr: v4Server, Port: 11111}.Args(),
		want: "sockperf server -i 198.18.0.2 -p 11111 --tcp",
	}, {
		name: "server, default port",
		args: SockperfServer{Addr: v4Server}.Args(),
		want: "sockperf server -i 198.18.0.2 -p 11111 --tcp",
	}, {
		name: "capture client with full log",
		args: SockperfClient{Server: v4Server, Port: 11111, Duration: 2 * time.Second, FullLog: "sockperf_pp_tcp_rtt.csv.tmp"}.Args(),
		want: "sockperf ping-pong -i 198.18.0.2 -p 11111 --tcp -t 2 --mps max --full-rtt --full-log sockperf_pp_tcp_rtt.csv.tmp",
	}, {
		name: "client with message size, no full log",
		args: SockperfClient{Server: v4Server, Port: 12000, Duration: 5 * time.Second, MsgSize: 64}.Args(),
		want: "sockperf ping-pong -i 198.18.0.2 -p 12000 --tcp -t 5 --mps max --full-rtt -m 64",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(strings.Fields(tc.want), tc.args); diff != "" {
				t.Errorf("Args() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSockperfValidate(t *testing.T) {
	ok := SockperfClient{Server: v4Server, Duration: 2 * time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", ok, err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*SockperfClient)
		wantErr string
	}{
		{"no server", func(c *SockperfClient) { c.Server = netip.Addr{} }, "not a host address"},
		{"too short", func(c *SockperfClient) { c.Duration = 500 * time.Millisecond }, "shorter than 1s"},
		{"fractional", func(c *SockperfClient) { c.Duration = 1500 * time.Millisecond }, "whole number of seconds"},
		{"message too small", func(c *SockperfClient) { c.MsgSize = 1 }, "minimum 14"},
		{"port", func(c *SockperfClient) { c.Port = 65536 }, "port 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
	// sockperf 3.7 answers "'-i' Invalid address: 2001:2::2" (see
	// testdata/sockperf_pp_ipv6.txt): refuse IPv6 up front.
	c := ok
	c.Server = v6Server
	if err := c.Validate(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("IPv6 client: Validate() = %v, want ErrNotSupported", err)
	}
	if err := (SockperfServer{Addr: v6Server}).Validate(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("IPv6 server: Validate() = %v, want ErrNotSupported", err)
	}
	if err := (SockperfServer{Addr: v4Server}).Validate(); err != nil {
		t.Errorf("IPv4 server: %v", err)
	}
}
