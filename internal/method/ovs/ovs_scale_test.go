package ovs_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/ovs"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// ovsPorts lists the ports of side's bridge br, read back from its
// ovsdb-server.
func ovsPorts(t *testing.T, m *ovs.OVS, env *method.Env, side, br string) []string {
	t.Helper()
	dir := filepath.Join(env.Dir, m.Name()+"-"+side)
	out, err := exec.Command("ovs-vsctl", "--db=unix:"+filepath.Join(dir, "db.sock"), "--timeout=5", "list-ports", br).Output()
	if err != nil {
		t.Fatalf("%s: ovs-vsctl list-ports %s: %v", side, br, err)
	}
	return strings.Fields(string(out))
}

// pingFrom checks that addr answers ICMP echo from ep within 15 s (the
// userspace datapath's first packets of a new flow go through
// ovs-vswitchd's upcalls, slow on a busy machine; Setup waits as long
// for the measured tunnel).
func pingFrom(t *testing.T, ep *testbed.Endpoint, what string, addr string) {
	t.Helper()
	var out []byte
	var err error
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); {
		if out, err = ep.Run(context.Background(), "ping", "-c", "1", "-W", "1", addr); err == nil {
			return
		}
	}
	t.Errorf("ping %s (%s) from %s: %v\n%s", addr, what, ep.Side, err, out)
}

// TestOVSTunnels100 sets ovs-vxlan up on the userspace datapath (the
// host has no openvswitch module) with 100 tunnels in each family: each
// bridge has 100 tunnel ports, a ping crosses the first, the measured and
// the last tunnel, Grow adds tunnel 101 on both sides and a ping crosses
// it, and teardown leaves the links as they were (SetupTunnels) and no
// OVS process behind.
//
// With tunnels=flows (ipv4) the same holds with one key=flow port.
func TestOVSTunnels100(t *testing.T) {
	const n = 100
	m := ovs.NewOVSVXLAN()
	for _, tt := range []struct{ family, mode string }{{method.IPv4, "ports"}, {method.IPv6, "ports"}, {method.IPv4, "flows"}} {
		t.Run(tt.family+"/"+tt.mode, func(t *testing.T) {
			requireOVS(t)
			family := tt.family
			start := time.Now()
			l, env, path := methodtest.SetupTunnels(t, m, family, 1500, n, map[string]string{"datapath": ovs.OVSNetdev, "tunnels": tt.mode})
			t.Logf("set-up of %d tunnels: %v", n, time.Since(start))
			if len(path.Adds) != 2*(n-1) {
				t.Errorf("Path.Adds: %d durations, want one per tunnel port added after the measured one per side (%d)", len(path.Adds), 2*(n-1))
			}
			wantPorts := n
			if tt.mode == "flows" {
				wantPorts = 2 // the measured tunnel's and the key=flow port
			}
			for _, side := range []string{"a", "b"} {
				if ports := ovsPorts(t, m, env, side, env.Prefix+"-ovs"); len(ports) != wantPorts {
					t.Errorf("%s: %d ports on %s-ovs, want %d", side, len(ports), env.Prefix, wantPorts)
				}
			}
			measured := env.Measured()
			for _, i := range []int{0, measured, n - 1} {
				_, b := method.ScaleOverlay(family, i, measured)
				pingFrom(t, l.A, fmt.Sprintf("tunnel %d of %d", i, n), b.Addr().String())
			}
			if _, b := method.ScaleOverlay(family, measured, measured); b.Addr() != path.B {
				t.Errorf("measured tunnel's address %s, want the single tunnel's %s", b.Addr(), path.B)
			}
			how, err := m.Grow(context.Background(), env)
			if err != nil {
				t.Fatalf("Grow: %v", err)
			}
			t.Logf("Grow: %s", how)
			_, b := method.ScaleOverlay(family, n, measured)
			pingFrom(t, l.A, "the grown tunnel", b.Addr().String())
			methodtest.Ping(t, l, path)
			// Tear down now (SetupTunnels's cleanup tears down twice more
			// and compares the links).
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Fatalf("Teardown: %v", err)
			}
			if left := ovsProcessesUsing(env.Dir); len(left) > 0 {
				t.Errorf("processes using %s after Teardown: %v", env.Dir, left)
			}
			for _, ep := range l.Endpoints() {
				ovsCheckUnderlay(t, ep)
			}
		})
	}
}

// BenchmarkOVSSetupTunnels sets ovs-vxlan up on the userspace datapath
// (IPv4) with 1, 100 and 1,000 tunnel ports (tunnels=ports), and 100 and
// 1,000 flow-keyed tunnels (tunnels=flows), and tears it down, b.N times
// each in a fresh testbed. It reports the median Setup and Teardown
// times and the median time of one port's add (Path.Adds, both sides)
// over the first and the last tenth of the adds, which shows how the
// bridge's reconfiguration grows with its ports (maxOVSTunnels). Run it
// with -benchtime 1x (see docs/performance.md).
func BenchmarkOVSSetupTunnels(b *testing.B) {
	for _, bm := range []struct {
		mode string
		n    int
	}{{"ports", 1}, {"ports", 100}, {"ports", 1000}, {"flows", 100}, {"flows", 1000}} {
		n := bm.n
		b.Run(fmt.Sprintf("%s/tunnels=%d", bm.mode, n), func(b *testing.B) {
			for _, r := range ovs.NewOVSVXLAN().Requirements() {
				if _, err := exec.LookPath(r.Program); r.Program != "" && err != nil {
					b.Skipf("%s not installed", r.Program)
				}
			}
			var setups, teardowns, first, last []float64
			for range b.N {
				l := testbedtest.New(b, 1500)
				m := ovs.NewOVSVXLAN()
				env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(method.IPv4), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir,
					Options: map[string]string{"datapath": ovs.OVSNetdev, "tunnels": bm.mode}, Tunnels: n}
				ctx := context.Background()
				start := time.Now()
				path, err := m.Setup(ctx, env)
				setups = append(setups, time.Since(start).Seconds())
				if err != nil {
					_ = m.Teardown(ctx, env)
					b.Fatal(err)
				}
				// Side a's adds, then side b's: each side's first and last tenth.
				for _, side := range [][]time.Duration{path.Adds[:len(path.Adds)/2], path.Adds[len(path.Adds)/2:]} {
					k := max(len(side)/10, 1)
					for i := range min(k, len(side)) {
						first = append(first, side[i].Seconds()*1000)
						last = append(last, side[len(side)-1-i].Seconds()*1000)
					}
				}
				start = time.Now()
				if err := m.Teardown(ctx, env); err != nil {
					b.Fatal(err)
				}
				teardowns = append(teardowns, time.Since(start).Seconds())
			}
			b.ReportMetric(stats.Median(setups), "setup-s")
			b.ReportMetric(stats.Median(teardowns), "teardown-s")
			if len(first) > 0 {
				b.ReportMetric(stats.Median(first), "first-adds-ms")
				b.ReportMetric(stats.Median(last), "last-adds-ms")
			}
		})
	}
}

// TestOVSScaleRefused: a tunnel count above what an ovs method sets up is
// refused by the scenario's validation, before anything is created,
// naming the unit and the bound.
func TestOVSScaleRefused(t *testing.T) {
	cat := method.Catalog{R: method.NewRegistry(ovs.NewOVSVXLAN(), ovs.NewOVSGRE())}
	s := scenario.Default()
	s.Methods, s.Families, s.Tunnels = []string{"ovs-vxlan", "ovs-gre"}, []string{"ipv4", "ipv6"}, []int{1, 100, 1001}
	err := s.Validate(cat)
	for _, want := range []string{
		"tunnels: 1001: ovs-vxlan over ipv4 sets up at most 1000 (one tunnel is one tunnel port; each port is an ovs-vsctl transaction that reconfigures the whole bridge",
		"tunnels: 1001: ovs-gre over ipv6 sets up at most 1000",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ovs at 1001 tunnels: %v, want an error containing %q", err, want)
		}
	}
	s.Tunnels = []int{1, 100, 1000}
	if err := s.Validate(cat); err != nil {
		t.Errorf("ovs at 1, 100, 1000 tunnels refused: %v", err)
	}
	// Flow-keyed tunnels go as far as the address plan.
	s.Options = map[string]map[string]string{"ovs-vxlan": {"tunnels": "flows"}}
	s.Methods, s.Tunnels = []string{"ovs-vxlan"}, []int{16384}
	if err := s.Validate(cat); err != nil {
		t.Errorf("ovs-vxlan tunnels=flows at 16384 refused: %v", err)
	}
	s.Tunnels = []int{16385}
	want := "tunnels: 16385: ovs-vxlan over ipv4 sets up at most 16384 (one tunnel is one flow-keyed tunnel (its own tun_id on one key=flow port); the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs)"
	if err := s.Validate(cat); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ovs-vxlan tunnels=flows at 16385: %v, want an error containing %q", err, want)
	}
}
