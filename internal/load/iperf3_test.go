package load

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	v4Server = netip.MustParseAddr("198.18.0.2")
	v4Client = netip.MustParseAddr("198.18.0.1")
	v6Server = netip.MustParseAddr("2001:2::2")
)

// The "capture" cases are the exact argv testdata/capture.sh runs, so the
// parsers are tested on the output of the argv these builders produce.
func TestIperf3ClientArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Iperf3Client
		want string
	}{{
		name: "capture tcp4_omit",
		c:    Iperf3Client{Server: v4Server, Port: 5201, Duration: 3 * time.Second, Omit: time.Second},
		want: "iperf3 -c 198.18.0.2 -p 5201 -t 3 -O 1 -i 1 -J -4",
	}, {
		name: "capture tcp4_p4",
		c:    Iperf3Client{Server: v4Server, Duration: 2 * time.Second, Omit: time.Second, Streams: 4},
		want: "iperf3 -c 198.18.0.2 -p 5201 -t 2 -O 1 -P 4 -i 1 -J -4",
	}, {
		name: "capture tcp6",
		c:    Iperf3Client{Server: v6Server, Duration: 2 * time.Second, Streams: 1},
		want: "iperf3 -c 2001:2::2 -p 5201 -t 2 -i 1 -J -6",
	}, {
		name: "capture tcp4_bidir_mss1220",
		c:    Iperf3Client{Server: v4Server, Duration: 2 * time.Second, Bidir: true, MSS: 1220},
		want: "iperf3 -c 198.18.0.2 -p 5201 -t 2 -i 1 -J -4 --bidir -M 1220",
	}, {
		name: "capture tcp4_reverse",
		c:    Iperf3Client{Server: v4Server, Duration: 2 * time.Second, Reverse: true},
		want: "iperf3 -c 198.18.0.2 -p 5201 -t 2 -i 1 -J -4 -R",
	}, {
		name: "capture udp4",
		c:    Iperf3Client{Server: v4Server, Duration: 2 * time.Second, UDP: true, Bitrate: "200M"},
		want: "iperf3 -c 198.18.0.2 -p 5201 -t 2 -i 1 -J -4 -u -b 200M",
	}, {
		name: "bind, custom port, tool default duration",
		c:    Iperf3Client{Server: v4Server, Port: 5301, Bind: v4Client},
		want: "iperf3 -c 198.18.0.2 -p 5301 -i 1 -J -4 -B 198.18.0.1",
	}, {
		name: "v4-mapped address is written as IPv4",
		c:    Iperf3Client{Server: netip.MustParseAddr("::ffff:198.18.0.2"), Duration: time.Second},
		want: "iperf3 -c 198.18.0.2 -p 5201 -t 1 -i 1 -J -4",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(strings.Fields(tc.want), tc.c.Args()); diff != "" {
				t.Errorf("Args() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIperf3ServerArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Iperf3Server
		want string
	}{
		{"capture v4", Iperf3Server{Bind: v4Server, Port: 5201}, "iperf3 -s -1 -B 198.18.0.2 -p 5201 -J"},
		{"capture v6, default port", Iperf3Server{Bind: v6Server}, "iperf3 -s -1 -B 2001:2::2 -p 5201 -J"},
		{"all addresses", Iperf3Server{Port: 5301}, "iperf3 -s -1 -p 5301 -J"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.s.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(strings.Fields(tc.want), tc.s.Args()); diff != "" {
				t.Errorf("Args() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIperf3Validate(t *testing.T) {
	ok := Iperf3Client{Server: v4Server, Duration: 3 * time.Second}
	for _, tc := range []struct {
		name    string
		edit    func(*Iperf3Client)
		wantErr string
	}{
		{"no server", func(c *Iperf3Client) { c.Server = netip.Addr{} }, "not a host address"},
		{"unspecified server", func(c *Iperf3Client) { c.Server = netip.IPv4Unspecified() }, "not a host address"},
		// iperf3 3.12 runs "-t 1.5" as 1 s without a word: refuse it.
		{"fractional duration", func(c *Iperf3Client) { c.Duration = 1500 * time.Millisecond }, "whole number of seconds"},
		{"fractional omit", func(c *Iperf3Client) { c.Omit = 500 * time.Millisecond }, "whole number of seconds"},
		{"negative duration", func(c *Iperf3Client) { c.Duration = -time.Second }, "negative"},
		{"port too big", func(c *Iperf3Client) { c.Port = 70000 }, "port 70000"},
		{"too many streams", func(c *Iperf3Client) { c.Streams = 129 }, "streams 129"},
		{"bad bitrate", func(c *Iperf3Client) { c.Bitrate = "fast" }, "bitrate"},
		{"bind of other family", func(c *Iperf3Client) { c.Bind = v6Server }, "different families"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "iperf3 client: ") {
				t.Errorf("error %q does not name its context", err)
			}
		})
	}
	for _, rate := range []string{"200M", "1G", "10M/100", "1.5g", "500000"} {
		c := ok
		c.Bitrate = rate
		if err := c.Validate(); err != nil {
			t.Errorf("bitrate %q: %v", rate, err)
		}
	}
	if err := (Iperf3Server{Port: -1}).Validate(); err == nil {
		t.Error("server with port -1 validated")
	}
}
