package kernel_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
)

// The tunnels dimension of vxlan (devices and FDB remotes), geneve and
// srv6.

// answerLinkGroup makes r answer the kernel.del-link-group op as "ip
// link del group G" does: every device of the group is gone.
func answerLinkGroup(r *testbedtest.Recorder) {
	testbedtest.AnswerOp(r, "kernel.del-link-group", func(g uint32) (string, struct{}, error) {
		links, _ := r.LinkList()
		for _, l := range links {
			if l.Attrs().Group == g {
				r.Forget(l.Attrs().Name)
			}
		}
		return fmt.Sprintf("ip link del group %d", g), struct{}{}, nil
	})
}

// scaleCases are the set-ups of the tunnels dimension, each with a
// golden file per family: testdata/<name>-<family>-tunnels3.golden.
var scaleCases = []struct {
	name string
	m    method.Method
	opts map[string]string
}{
	{"vxlan", kernel.VXLAN{}, nil},
	{"vxlan-fdb", kernel.VXLAN{}, map[string]string{"scale": "fdb"}},
	{"geneve", kernel.Geneve{}, nil},
	{"srv6", kernel.SRv6{}, nil},
}

// TestScaledPlans sets three tunnels up on two recording endpoints, then
// adds a fourth (Grow) and tears all down, and compares what each did
// with testdata/<name>-<family>-tunnels3.golden (Setup and Teardown,
// methodtest.Record) and <name>-<family>-tunnels3-grow.golden (Setup's
// lines left out; rewrite both with -update). Tunnel 1 is the measured
// one: the single tunnel's device, addresses and SIDs.
func TestScaledPlans(t *testing.T) {
	t.Parallel()
	for _, c := range scaleCases {
		for _, family := range c.m.Families() {
			t.Run(c.name+"-"+family, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(c.m, family, c.opts)
				rec.Env.Tunnels = 3
				answerLinkGroup(rec.A)
				answerLinkGroup(rec.B)
				testbedtest.Golden(t, c.name+"-"+family+"-tunnels3", methodtest.Record(t, c.m, rec), *update)

				rec = methodtest.RecordEnv(c.m, family, c.opts)
				rec.Env.Tunnels = 3
				answerLinkGroup(rec.A)
				answerLinkGroup(rec.B)
				ctx := context.Background()
				path, err := c.m.Setup(ctx, rec.Env)
				if err != nil {
					t.Fatal(err)
				}
				if len(path.Adds) != 6 {
					t.Errorf("Path.Adds has %d durations, want 6 (3 tunnels, 2 sides)", len(path.Adds))
				}
				rec.A.Lines()
				rec.B.Lines()
				how, err := c.m.(method.Grower).Grow(ctx, rec.Env)
				if err != nil {
					t.Fatal(err)
				}
				lines := []string{"# grow: " + how, "# a: grow"}
				lines = append(lines, rec.A.Lines()...)
				lines = append(lines, "# b: grow")
				lines = append(lines, rec.B.Lines()...)
				if err := c.m.Teardown(ctx, rec.Env); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, "# a: teardown")
				lines = append(lines, rec.A.Lines()...)
				lines = append(lines, "# b: teardown")
				lines = append(lines, rec.B.Lines()...)
				testbedtest.Golden(t, c.name+"-"+family+"-tunnels3-grow", lines, *update)
			})
		}
	}
}

// TestScaleRefusals: a tunnel count above what a method sets up is a
// scenario error naming the method, the family, what one tunnel is, what
// bounds it and the fix, before anything is created; and Setup refuses
// it too, should an Env ask.
func TestScaleRefusals(t *testing.T) {
	t.Parallel()
	cat := method.Catalog{R: method.NewRegistry(kernel.VXLAN{}, kernel.Geneve{}, kernel.SRv6{})}
	for _, tt := range []struct {
		yaml string
		want string
	}{
		{"methods: [vxlan]\nfamilies: [ipv4]\ntunnels: [100, 16385]",
			"tunnels: 16385: vxlan over ipv4 sets up at most 16384 (one tunnel is one VXLAN device; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs): lower tunnels to 16384 or drop vxlan"},
		{"methods: [vxlan]\nfamilies: [ipv6]\ntunnels: [1000]\noptions: {vxlan: {vni: \"16777000\"}}",
			"tunnels: 1000: vxlan over ipv6 sets up at most 215 (one tunnel is one VXLAN device; each VXLAN device has its own VNI, from vni 16777000 up to 16777215 (24 bits), one kept for the tunnel a reconfiguration adds): lower tunnels to 215 or drop vxlan"},
		{"methods: [vxlan]\nfamilies: [ipv6]\ntunnels: [40000]\noptions: {vxlan: {scale: fdb}}",
			"tunnels: 40000: vxlan over ipv6 sets up at most 32768 (one tunnel is one FDB remote; the IPv6 address plan 2001:2:0:8000::/49 holds 32768 /64s): lower tunnels to 32768 or drop vxlan"},
		{"methods: [geneve]\nfamilies: [ipv4]\ntunnels: [100]\noptions: {geneve: {vni: \"16777200\"}}",
			"tunnels: 100: geneve over ipv4 sets up at most 15 (one tunnel is one Geneve device; each Geneve device has its own VNI, from vni 16777200 up to 16777215 (24 bits), one kept for the tunnel a reconfiguration adds): lower tunnels to 15 or drop geneve"},
		{"methods: [srv6]\nfamilies: [ipv4]\ntunnels: [20000]",
			"tunnels: 20000: srv6 over ipv4 sets up at most 16384 (one tunnel is one segment; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs): lower tunnels to 16384 or drop srv6"},
	} {
		s, err := scenario.Parse([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		err = s.Validate(cat)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v\nwant one containing %q", tt.yaml, err, tt.want)
		}
	}
	for _, m := range []method.Method{kernel.VXLAN{}, kernel.Geneve{}, kernel.SRv6{}} {
		rec := methodtest.RecordEnv(m, method.IPv4, nil)
		rec.Env.Tunnels = method.MaxScaleTunnels(method.IPv4) + 1
		if _, err := m.Setup(context.Background(), rec.Env); err == nil || !strings.Contains(err.Error(), "tunnels: at most") {
			t.Errorf("%s Setup of %d tunnels: %v, want a refusal", m.Name(), rec.Env.Tunnels, err)
		}
		if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
			t.Errorf("%s: a refused Setup changed the hosts: %q", m.Name(), lines)
		}
	}
}

// setupTunnels is methodtest.Setup with n tunnels: a fresh local
// testbed (underlay MTU 1500), m set up with Env.Tunnels = n, and in t's
// cleanup Teardown twice, after which both namespaces must have the
// links they had before.
func setupTunnels(t *testing.T, m method.Method, family string, opts map[string]string, n int) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	methodtest.RequireTunnelKernel(t, m)
	l := testbedtest.New(t, 1500)
	env := &method.Env{
		A: l.A, B: l.B, Family: family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(family),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Tunnels: n,
	}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	ctx := context.Background()
	path, err := m.Setup(ctx, env)
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
	if len(path.Adds) != 2*n {
		t.Errorf("Path.Adds has %d durations, want %d (each tunnel on each side)", len(path.Adds), 2*n)
	}
	return l, env, path
}

// pingTunnels pings, from a, side b's end of tunnels first, measured and
// last: each crosses its own tunnel (its own device, or its own
// segment).
func pingTunnels(t *testing.T, l *localns.Local, env *method.Env, tunnels ...int) {
	t.Helper()
	for _, i := range tunnels {
		_, b := method.ScaleOverlay(env.Family, i, env.Measured())
		if out, err := l.A.Run(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "3", b.Addr().String()); err != nil {
			t.Errorf("ping %s (tunnel %d of %d) from a: %v\n%s", b.Addr(), i, env.N(), err, out)
		}
	}
}

// TestVXLANDevices100 sets up 100 VXLAN devices per side on the local
// testbed: each its own VNI (vni+i), the measured one the single
// tunnel's device; a ping crosses the first, the measured and the last.
func TestVXLANDevices100(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			const n = 100
			l, env, _ := setupTunnels(t, kernel.VXLAN{}, family, map[string]string{"vni": "1000"}, n)
			for _, ep := range env.Endpoints() {
				links, err := ep.NL.LinkList()
				if err != nil {
					t.Fatal(err)
				}
				var vnis []int
				measured := false
				for _, link := range links {
					if vx, ok := link.(*netlink.Vxlan); ok && strings.HasPrefix(vx.Name, env.Prefix) {
						vnis = append(vnis, vx.VxlanId)
						if vx.Name == env.Prefix+"-vx" {
							measured = vx.VxlanId == 1000+env.Measured()
						}
					}
				}
				slices.Sort(vnis)
				if len(vnis) != n || vnis[0] != 1000 || vnis[n-1] != 1000+n-1 || len(slices.Compact(vnis)) != n {
					t.Errorf("%s: %d VXLAN devices, VNIs %v, want %d with VNIs 1000 to %d", ep.Side, len(vnis), vnis, n, 1000+n-1)
				}
				if !measured {
					t.Errorf("%s: no device %s-vx with VNI %d (the measured tunnel)", ep.Side, env.Prefix, 1000+env.Measured())
				}
			}
			pingTunnels(t, l, env, 0, env.Measured(), n-1)
		})
	}
}

// TestVXLANFDB100 sets up one VXLAN device per side with 100 FDB
// remotes: the kernel's FDB and neighbour table hold all 100 (read back
// with bridge and ip), each toward its own underlay address, none the
// all-zero MAC; the ping to the measured tunnel's far end is answered,
// and no packet the device sent went to a filler (no transmit error: a
// filler's address has no route).
func TestVXLANFDB100(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			const n = 100
			l, env, path := setupTunnels(t, kernel.VXLAN{}, family, map[string]string{"scale": "fdb"}, n)
			ctx := context.Background()
			name := env.Prefix + "-vx"
			for _, ep := range env.Endpoints() {
				out, err := ep.Run(ctx, "bridge", "fdb", "show", "dev", name)
				if err != nil {
					t.Fatalf("bridge fdb show: %v\n%s", err, out)
				}
				dsts := map[string]bool{}
				for _, line := range strings.Split(string(out), "\n") {
					f := strings.Fields(line)
					if len(f) < 3 || f[1] != "dst" {
						continue
					}
					if f[0] == "00:00:00:00:00:00" {
						t.Errorf("%s: an all-zero FDB entry (flood to every remote): %s", ep.Side, line)
					}
					dsts[f[2]] = true
				}
				peer := env.Peer(ep).Addr(family).String()
				if len(dsts) != n || !dsts[peer] {
					t.Errorf("%s: FDB of %s has %d distinct remotes (peer %s among them: %v), want %d:\n%s", ep.Side, name, len(dsts), peer, dsts[peer], n, out)
				}
				for d := range dsts {
					if a := netip.MustParseAddr(d); !method.Benchmarking(a) {
						t.Errorf("%s: FDB remote %s is outside the benchmarking ranges", ep.Side, a)
					}
				}
				out, err = ep.Run(ctx, "ip", "neigh", "show", "dev", name, "nud", "permanent")
				if err != nil {
					t.Fatalf("ip neigh show: %v\n%s", err, out)
				}
				if got := strings.Count(string(out), "lladdr 02:74:62:"); got != n {
					t.Errorf("%s: %d permanent neighbours on %s, want %d:\n%s", ep.Side, got, name, n, out)
				}
			}
			methodtest.Ping(t, l, path)
			link, err := l.A.NL.LinkByName(name)
			if err != nil {
				t.Fatal(err)
			}
			if st := link.Attrs().Statistics; st == nil || st.TxErrors != 0 || st.TxPackets == 0 {
				t.Errorf("a's %s: statistics %+v, want packets sent and no transmit error", name, st)
			}
		})
	}
}

// TestSRv6Segments100 sets up 100 segments: each its own SIDs with the
// encap route and the far side's decapsulation; a ping crosses the
// first, the measured and the last, and every side holds 100 seg6local
// routes.
func TestSRv6Segments100(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			const n = 100
			l, env, _ := setupTunnels(t, kernel.SRv6{}, family, nil, n)
			for _, ep := range env.Endpoints() {
				out, err := ep.Run(context.Background(), "ip", "-6", "route", "show")
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Count(string(out), "encap seg6local"); got != n {
					t.Errorf("%s: %d seg6local routes, want %d", ep.Side, got, n)
				}
			}
			pingTunnels(t, l, env, 0, env.Measured(), n-1)
		})
	}
}

// TestScaledThroughAgents sets 20 tunnels up between two agents, as over
// SSH (every netlink call, FDB and neighbour entry and the link group's
// deletion through the agent protocol), adds one (Grow), pings the
// measured tunnel's far end, and the first and the grown tunnel's where
// they carry traffic; teardown leaves both hosts as they were.
func TestScaledThroughAgents(t *testing.T) {
	for _, c := range scaleCases {
		if c.name == "geneve" {
			continue // no CONFIG_GENEVE here; the golden test covers it
		}
		for _, family := range c.m.Families() {
			t.Run(c.name+"-"+family, func(t *testing.T) {
				pair, env := methodtest.AgentSetup(t, c.m, family, c.opts)
				env.Tunnels = 20
				ctx := context.Background()
				path, err := c.m.Setup(ctx, env)
				if err != nil {
					t.Fatalf("Setup of 20 tunnels through agents: %v", err)
				}
				if _, err := c.m.(method.Grower).Grow(ctx, env); err != nil {
					t.Fatalf("Grow through agents: %v", err)
				}
				targets := []netip.Addr{path.B}
				if c.name != "vxlan-fdb" { // fdb fillers carry nothing
					for _, i := range []int{0, env.N()} {
						_, b := method.ScaleOverlay(family, i, env.Measured())
						targets = append(targets, b.Addr())
					}
				}
				for _, to := range targets {
					if out, err := pair.A.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", to.String()); err != nil {
						t.Errorf("ping %s from a through the agent: %v\n%s", to, err, out)
					}
				}
			})
		}
	}
}

// TestGrowRefusedWhenFull: a set-up that fills the address plan has no
// room for the tunnel Grow adds (its addresses would leave the
// benchmarking ranges), and Grow says so without touching either host.
func TestGrowRefusedWhenFull(t *testing.T) {
	t.Parallel()
	for _, c := range scaleCases {
		for _, family := range c.m.Families() {
			rec := methodtest.RecordEnv(c.m, family, c.opts)
			rec.Env.Tunnels = method.MaxScaleTunnels(family)
			if _, err := c.m.(method.Grower).Grow(context.Background(), rec.Env); err == nil || !strings.Contains(err.Error(), "fill the address plan") {
				t.Errorf("%s %s: Grow at %d tunnels: %v, want a refusal", c.name, family, rec.Env.Tunnels, err)
			}
			if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
				t.Errorf("%s %s: a refused Grow changed the hosts: %q", c.name, family, lines)
			}
		}
	}
}

// TestScaleCarries: a device per tunnel (vxlan and geneve devices) or
// a segment per tunnel (srv6, each its own encap route and far-side
// decapsulation) carries load on every tunnel, as the pings across the
// first and last tunnel above show; vxlan's FDB remotes point to
// unrouted addresses and carry none.
func TestScaleCarries(t *testing.T) {
	for _, c := range []struct {
		m    method.Method
		opts map[string]string
		want bool
	}{
		{kernel.VXLAN{}, nil, true},
		{kernel.VXLAN{}, map[string]string{"scale": "fdb"}, false},
		{kernel.Geneve{}, nil, true},
		{kernel.SRv6{}, nil, true},
	} {
		opts, err := method.ParseOptions(c.m, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := method.ScaleOf(c.m, method.IPv4, opts).Carries; got != c.want {
			t.Errorf("%s %v: Carries = %v, want %v", c.m.Name(), c.opts, got, c.want)
		}
	}
}
