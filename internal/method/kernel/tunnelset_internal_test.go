package kernel

import (
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// BenchmarkPlanTunnels10000 is tunbench's own cost of planning 10,000
// tunnels of gre (keyed devices) and ipip (routes through a flow-based
// device), both sides: the pure plan, before any host is touched
// (docs/performance.md, "Tunnels dimension: ...").
func BenchmarkPlanTunnels10000(b *testing.B) {
	ea, _ := testbedtest.NewRecordingEndpoint("a", "veth0")
	eb, _ := testbedtest.NewRecordingEndpoint("b", "veth0")
	for _, tt := range []struct {
		name string
		set  tunnelSet
	}{{"gre", greSet()}, {"ipip", ipipSet()}} {
		b.Run(tt.name, func(b *testing.B) {
			env := &method.Env{A: ea, B: eb, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1476,
				Prefix: "tb1a2b3c", Tunnels: 10000}
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				_, tunnels := planTunnels(env, tt.set)
				if len(tunnels[0]) != 10000 {
					b.Fatal(len(tunnels[0]))
				}
			}
			// The machine is shared: CPU time says more than wall time.
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIPEncap: the encapsulation of a flow-based ipip or ip6tnl route is
// the attributes "ip route add ... encap ip id 0 dst D ttl 64" sends,
// each 4-byte aligned, and it reaches a remote agent inside a route
// (gob, as testbed's remote netlink sends it) unchanged.
func TestIPEncap(t *testing.T) {
	for _, tt := range []struct {
		e    ipEncap
		typ  int
		want string
	}{
		// ID (8 bytes of 0), DST, TTL padded to 8 bytes.
		{ipEncap{Dst: netip.MustParseAddr("198.18.0.2"), TTL: 64}, 2,
			"0c000100" + "0000000000000000" + "08000200" + "c6120002" + "05000400" + "40000000"},
		{ipEncap{Dst: netip.MustParseAddr("2001:2::2"), TTL: 64}, 4,
			"0c000100" + "0000000000000000" + "14000200" + "20010002000000000000000000000002" + "05000400" + "40000000"},
	} {
		b, err := tt.e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tt.want || tt.e.Type() != tt.typ {
			t.Errorf("%s: type %d, attributes %s, want %d, %s", tt.e.String(), tt.e.Type(), got, tt.typ, tt.want)
		}
		var back ipEncap
		if err := back.Decode(b); err != nil || back != tt.e {
			t.Errorf("%s decodes as %+v (%v)", tt.e.String(), back, err)
		}
		var buf bytes.Buffer
		in := struct{ R netlink.Route }{netlink.Route{Encap: &tt.e}}
		if err := gob.NewEncoder(&buf).Encode(in); err != nil {
			t.Fatal(err)
		}
		var out struct{ R netlink.Route }
		if err := gob.NewDecoder(&buf).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out.R.Encap == nil || !out.R.Encap.Equal(&tt.e) {
			t.Errorf("%s after gob: %v", tt.e.String(), out.R.Encap)
		}
	}
}
