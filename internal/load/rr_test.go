package load

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/rr"
)

func TestRRArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{{
		name: "server",
		args: RRServer{Bind: v4Server, Exe: "/usr/bin/tunbench"}.Args(),
		want: "/usr/bin/tunbench rr server --addr 198.18.0.2 --port 12866 --once",
	}, {
		name: "server on every address, no Exe",
		args: RRServer{Port: 13000}.Args(),
		want: "tunbench rr server --port 13000 --once",
	}, {
		name: "client, defaults",
		args: RRClient{Server: v6Server, Duration: 3 * time.Second, Exe: "/x/tunbench"}.Args(),
		want: "/x/tunbench rr client --addr 2001:2::2 --port 12866 --duration 3s --warmup 200ms --request 1 --response 1",
	}, {
		name: "client, everything set",
		args: RRClient{Server: netip.MustParseAddr("::ffff:198.18.0.2"), Port: 13000, Duration: 1500 * time.Millisecond,
			Warmup: time.Second, RequestSize: 64, ResponseSize: 1024}.Args(),
		want: "tunbench rr client --addr 198.18.0.2 --port 13000 --duration 1.5s --warmup 1s --request 64 --response 1024",
	}, {
		name: "client, no warm-up",
		args: RRClient{Server: v4Server, Duration: time.Second, Warmup: -1}.Args(),
		want: "tunbench rr client --addr 198.18.0.2 --port 12866 --duration 1s --warmup 0s --request 1 --response 1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(strings.Fields(tc.want), tc.args); diff != "" {
				t.Errorf("Args() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRRValidate(t *testing.T) {
	ok := RRClient{Server: v6Server, Duration: 100 * time.Millisecond}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", ok, err)
	}
	if err := (RRServer{Port: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "port -1") {
		t.Errorf("server with port -1: %v", err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*RRClient)
		wantErr string
	}{
		{"no server", func(c *RRClient) { c.Server = netip.Addr{} }, "not a host address"},
		{"unspecified", func(c *RRClient) { c.Server = netip.IPv6Unspecified() }, "not a host address"},
		{"no duration", func(c *RRClient) { c.Duration = 0 }, "duration 0s is not positive"},
		{"port", func(c *RRClient) { c.Port = 65536 }, "port 65536"},
		{"request", func(c *RRClient) { c.RequestSize = -1 }, "request size -1"},
		{"response", func(c *RRClient) { c.ResponseSize = 1<<20 + 1 }, "response size 1048577"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// The driver repeats a few of package rr's constants rather than import
// it (nothing in load starts or links a tool); they must agree.
func TestRRConstants(t *testing.T) {
	if RRDefaultPort != rr.DefaultPort || rrMaxMessageSize != rr.MaxMessageSize ||
		rrDefaultWarmup != rr.DefaultWarmup || rrTool != rr.Tool {
		t.Errorf("load and rr disagree: port %d/%d, max size %d/%d, warm-up %s/%s, tool %q/%q",
			RRDefaultPort, rr.DefaultPort, rrMaxMessageSize, rr.MaxMessageSize,
			rrDefaultWarmup, rr.DefaultWarmup, rrTool, rr.Tool)
	}
	if diff := cmp.Diff(cdfFractions, rr.CDFFractions); diff != "" {
		t.Errorf("CDF fractions differ (-load +rr):\n%s", diff)
	}
}

// ParseRR reads every figure of rr.Report under the JSON name rr writes.
func TestParseRRReport(t *testing.T) {
	cdf := make([]result.Quantile, len(rr.CDFFractions))
	for i, f := range rr.CDFFractions {
		cdf[i] = result.Quantile{Fraction: f, RTT: 10 + 100*f}
	}
	report := rr.Report{Tool: rr.Tool, Version: rr.Version, Transactions: 1234, Duration: 1,
		Min: 10, Mean: 60, StdDev: 7, P50: 60, P90: 100, P99: 109, Max: 110, CDF: cdf}
	out, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRR(out)
	if err != nil {
		t.Fatal(err)
	}
	want := &result.Latency{Tool: rr.Tool, Version: rr.Version, Samples: 1234,
		Min: 10, Mean: 60, P50: 60, P90: 100, P99: 109, Max: 110, StdDev: 7, CDF: cdf}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseRR mismatch (-want +got):\n%s", diff)
	}
}
