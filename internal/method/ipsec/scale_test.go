package ipsec_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// setupTunnels is methodtest.SetupFaults with n tunnels (Env.Tunnels):
// it sets m up on a fresh local testbed and, in t.Cleanup, tears it down
// twice and checks that the links of both namespaces are as before. It
// returns how long Setup took.
func setupTunnels(t testing.TB, m method.Method, family string, n int, opts map[string]string, faults *method.Faults) (*localns.Local, *method.Env, *method.Path, time.Duration) {
	t.Helper()
	l := testbedtest.New(t, 1500)
	env := &method.Env{
		A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
		OverlayMTU: 1500 - m.Overhead(family),
		Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Faults: faults, Tunnels: n,
	}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	ctx := context.Background()
	start := time.Now()
	path, err := m.Setup(ctx, env)
	took := time.Since(start)
	t.Cleanup(func() {
		for range 2 {
			if err := m.Teardown(ctx, env); err != nil {
				t.Errorf("%s Teardown: %v", m.Name(), err)
			}
		}
		after := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("links after %s teardown (-before +after):\n%s", m.Name(), diff)
		}
	})
	if err != nil {
		t.Fatalf("%s Setup of %d tunnels: %v", m.Name(), n, err)
	}
	methodtest.CheckListeners(t, m, env, path, nil)
	return l, env, path, took
}

// pingFrom checks that b answers ICMP echo from a, sent from side a's
// endpoint.
func pingFrom(t *testing.T, l *localns.Local, a, b netip.Addr) {
	t.Helper()
	if out, err := l.A.Run(context.Background(), "ping", "-c", "1", "-W", "3", "-I", a.String(), b.String()); err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", b, a, err, out)
	}
}

// installed maps the INSTALLED CHILD_SAs of side's charon to their
// selectors ("local-ts remote-ts").
func installed(t *testing.T, ep *testbed.Endpoint, env *method.Env) map[string]string {
	t.Helper()
	children, err := ipsec.IPsecSAs(context.Background(), ep, filepath.Join(env.Dir, "ipsec-"+ep.Side))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range children {
		if c.State != "INSTALLED" {
			continue
		}
		if _, dup := got[c.Name]; dup {
			t.Errorf("%s: CHILD_SA %s twice", ep.Side, c.Name)
		}
		got[c.Name] = strings.Join(c.LocalTS, ",") + " " + strings.Join(c.RemoteTS, ",")
	}
	return got
}

// percentile is the p-th percentile (0-100, nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

// TestIPsecTunnels sets ipsec up with 100 CHILD_SAs under one IKE_SA
// (kernel-libipsec here: the host kernel has no ESP): both charons list
// all of them INSTALLED with the selectors of the address plan, a ping
// crosses the first, the measured and the last CHILD_SA, Grow adds a
// 101st that a ping crosses too, and teardown leaves the namespaces as
// they were.
func TestIPsecTunnels(t *testing.T) {
	ipsecRequireSwan(t)
	faults := ipsecWithoutESP(t)
	const n = 100
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			m := ipsec.NewIPsec()
			l, env, path, took := setupTunnels(t, m, family, n, nil, faults)
			if len(path.Adds) != n {
				t.Errorf("Path.Adds has %d adds, want one per CHILD_SA (%d)", len(path.Adds), n)
			}
			if len(path.Daemons) != 2 {
				t.Errorf("daemons %v, want one charon per side for all CHILD_SAs", path.Daemons)
			}
			t.Logf("%s: %d CHILD_SAs set up in %v; per CHILD_SA p50 %v, p99 %v", path.Variant, n, took.Round(time.Millisecond),
				percentile(path.Adds, 50).Round(10*time.Microsecond), percentile(path.Adds, 99).Round(10*time.Microsecond))
			measured := env.Measured()
			oa, ob := method.Overlay(family)
			if path.A != oa.Addr() || path.B != ob.Addr() {
				t.Errorf("path %s -> %s, want the single tunnel's %s -> %s", path.A, path.B, oa.Addr(), ob.Addr())
			}
			for _, ep := range l.Endpoints() {
				got := installed(t, ep, env)
				if len(got) != n {
					t.Errorf("%s: %d CHILD_SAs INSTALLED, want %d", ep.Side, len(got), n)
				}
				for _, i := range []int{0, measured, n - 1} {
					a, b := method.ScaleOverlay(family, i, measured)
					name := "t" + fmt.Sprint(i)
					if i == measured {
						name = "tunbench"
					}
					want := method.HostPrefix(a.Addr()).String() + " " + method.HostPrefix(b.Addr()).String()
					if ep.Side == "b" {
						want = method.HostPrefix(b.Addr()).String() + " " + method.HostPrefix(a.Addr()).String()
					}
					if got[name] != want {
						t.Errorf("%s: CHILD_SA %s selects %q, want %q", ep.Side, name, got[name], want)
					}
				}
			}
			for _, i := range []int{0, measured, n - 1} {
				a, b := method.ScaleOverlay(family, i, measured)
				pingFrom(t, l, a.Addr(), b.Addr())
			}
			methodtest.Ping(t, l, path)

			how, err := m.Grow(context.Background(), env)
			if err != nil {
				t.Fatalf("Grow: %v", err)
			}
			t.Logf("grow: %s", how)
			a, b := method.ScaleOverlay(family, n, measured)
			if !strings.Contains(how, "t100") || !strings.Contains(how, a.Addr().String()) {
				t.Errorf("Grow says %q, want the CHILD_SA t100 and its addresses", how)
			}
			pingFrom(t, l, a.Addr(), b.Addr())
			methodtest.Ping(t, l, path)
			for _, ep := range l.Endpoints() {
				if got := installed(t, ep, env); len(got) != n+1 {
					t.Errorf("%s: %d CHILD_SAs INSTALLED after Grow, want %d", ep.Side, len(got), n+1)
				}
			}

			if err := m.Teardown(context.Background(), env); err != nil {
				t.Fatalf("Teardown: %v", err)
			}
			for _, ep := range l.Endpoints() {
				ipsecCheckClean(t, ep)
			}
		})
	}
}

// TestIPsecTunnelsRefused: the tunnels dimension above what ipsec and
// ipsec-ecmp set up reaches the user as a scenario error, naming what one
// tunnel is and why, before anything is created; within it, the scenario
// passes.
func TestIPsecTunnelsRefused(t *testing.T) {
	t.Parallel()
	c := method.Catalog{R: method.NewRegistry(ipsec.NewIPsec(), ipsec.NewIPsecECMP())}
	for _, tt := range []struct {
		name, doc string
		want      []string
	}{
		{"ipsec within", "methods: [ipsec]\nfamilies: [ipv4, ipv6]\ntunnels: [1, 100, 1000]\n", nil},
		{"ipsec above", "methods: [ipsec]\nfamilies: [ipv6]\ntunnels: [1, 2000]\n", []string{
			fmt.Sprintf("tunnels: 2000: ipsec over ipv6 sets up at most %d (one tunnel is one CHILD_SA; strongSwan's vici messages hold at most 512 KiB", ipsec.MaxChildren),
			fmt.Sprintf("lower tunnels to %d or drop ipsec", ipsec.MaxChildren)}},
		{"ipsec transport", "methods: [ipsec]\nfamilies: [ipv4]\ntunnels: [10]\noptions: {ipsec: {mode: transport}}\n", []string{
			"tunnels: [10]: ipsec over ipv4 sets up one tunnel only (transport mode protects the traffic between the two underlay addresses"}},
		{"ipsec-ecmp", "methods: [ipsec-ecmp]\nfamilies: [ipv4]\ntunnels: [10]\n", []string{
			"tunnels: [10]: ipsec-ecmp over ipv4 sets up one tunnel only (ipsec-ecmp's tunnels are its own option tunnels (1-8)"}},
		{"ipsec-ecmp in a sweep with 1 runs at 1 only", "methods: [ipsec-ecmp]\nfamilies: [ipv4]\ntunnels: [1, 10]\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate(c)
			if tt.want == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}
