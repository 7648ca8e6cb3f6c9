package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/hostinfo"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// scaledTunnels are the kernel tunnel methods of this file's tests (the
// tunnels dimension): gre, gretap, ip6gre, ipip, ip6ip6.
func scaledTunnels() []method.Method {
	return []method.Method{kernel.GRE{}, kernel.Gretap{}, kernel.IP6GRE{}, kernel.IPIP{}, kernel.IP6IP6{}}
}

// TestTunnelsPlans sets every scaled kernel tunnel up with three tunnels
// and tears it down on two recording endpoints, in each family, and
// compares what it did with testdata/<method>-<family>-tunnels3.golden
// (rewrite with -update): the middle tunnel is the single tunnel's
// device, the others have their own keys (gre family) or routes through
// a flow-based device (ipip, ip6ip6) and ScaleOverlay's addresses.
func TestTunnelsPlans(t *testing.T) {
	t.Parallel()
	for _, m := range scaledTunnels() {
		for _, family := range m.Families() {
			t.Run(m.Name()+"-"+family, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(m, family, nil)
				rec.Env.Tunnels = 3
				answerIP6GRE(rec.A)
				answerIP6GRE(rec.B)
				testbedtest.Golden(t, m.Name()+"-"+family+"-tunnels3", methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestTunnelsAddsAndGrow: a scaled Setup times each tunnel's add on each
// side (Path.Adds: 2N), Grow adds tunnel N on both sides, and Teardown
// removes it with the others; on recording endpoints.
func TestTunnelsAddsAndGrow(t *testing.T) {
	t.Parallel()
	for _, m := range scaledTunnels() {
		family := m.Families()[0]
		t.Run(m.Name(), func(t *testing.T) {
			rec := methodtest.RecordEnv(m, family, nil)
			rec.Env.Tunnels = 3
			answerIP6GRE(rec.A)
			answerIP6GRE(rec.B)
			path, err := m.Setup(t.Context(), rec.Env)
			if err != nil {
				t.Fatal(err)
			}
			if len(path.Adds) != 6 {
				t.Errorf("%d adds timed, want 3 per side", len(path.Adds))
			}
			rec.A.Lines()
			rec.B.Lines()
			how, err := m.(method.Grower).Grow(t.Context(), rec.Env)
			if err != nil {
				t.Fatalf("Grow: %v", err)
			}
			if !strings.Contains(how, "tunnel 3") {
				t.Errorf("Grow says %q, want it to name tunnel 3", how)
			}
			grownA, grownB := method.ScaleOverlay(family, 3, 1)
			for i, r := range []*testbedtest.Recorder{rec.A, rec.B} {
				own := []string{grownA.Addr().String(), grownB.Addr().String()}[i]
				if lines := strings.Join(r.Lines(), "\n"); !strings.Contains(lines, "ip addr add "+own+"/") {
					t.Errorf("Grow did on side %d:\n%s\nwant tunnel 3's address %s", i, lines, own)
				}
			}
			if err := m.Teardown(t.Context(), rec.Env); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*testbedtest.Recorder{rec.A, rec.B} {
				lines := r.Lines()
				if want := map[bool]int{true: 2, false: 4}[m.Name() == "ipip" || m.Name() == "ip6ip6"]; len(lines) != want {
					t.Errorf("teardown after Grow:\n%s\nwant %d devices deleted", strings.Join(lines, "\n"), want)
				}
			}
		})
	}
}

// TestTunnelsRefused: a count above a method's maximum is refused by the
// scenario's validation, before anything is created, naming the method,
// what one tunnel is and what bounds it.
func TestTunnelsRefused(t *testing.T) {
	cat := method.Catalog{R: method.NewRegistry(scaledTunnels()...)}
	for _, tt := range []struct {
		m      string
		family string
		opts   map[string]string
		n      int
		want   string
	}{
		{"gre", "ipv4", nil, 16385, "gre over ipv4 sets up at most 16384 (one tunnel is one gre device with its own GRE key; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs)"},
		{"ip6gre", "ipv6", nil, 32769, "ip6gre over ipv6 sets up at most 32768"},
		{"ipip", "ipv4", nil, 20000, "ipip over ipv4 sets up at most 16384 (one tunnel is one route with its own encapsulation (encap ip dst PEER) through one external ipip device"},
		{"gretap", "ipv4", map[string]string{"key": "4294967290"}, 10, "gretap over ipv4 sets up at most 5 (one tunnel is one gretap device with its own GRE key; tunnel i's GRE key is key 4294967290 + 1 + i, which must stay below 2^32"},
	} {
		s := scenario.Default()
		s.Methods = []string{tt.m}
		s.Families = []string{tt.family}
		s.Tunnels = []int{1, tt.n}
		if tt.opts != nil {
			s.Options = map[string]map[string]string{tt.m: tt.opts}
		}
		err := s.Validate(cat)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s tunnels %d: %v, want an error containing %q", tt.m, tt.family, tt.n, err, tt.want)
		}
		s.Tunnels = []int{1, 3}
		if err := s.Validate(cat); err != nil {
			t.Errorf("%s %s tunnels 3 refused: %v", tt.m, tt.family, err)
		}
	}
}

// labTunnels runs m with three tunnels for real (kernel lab): a ping
// crosses the first, the measured and the last tunnel, then the one Grow
// adds; Teardown, twice, leaves the links as they were.
func labTunnels(t *testing.T, m method.Method, family string, opts map[string]string) {
	t.Helper()
	methodtest.RequireTunnelKernel(t, m)
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(family),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Tunnels: 3}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	t.Cleanup(func() {
		for range 2 {
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Errorf("%s Teardown: %v", m.Name(), err)
			}
		}
		if diff := cmp.Diff(before, [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}); diff != "" {
			t.Errorf("links after %s teardown (-before +after):\n%s", m.Name(), diff)
		}
	})
	if _, err := m.Setup(context.Background(), env); err != nil {
		t.Fatalf("%s Setup with 3 tunnels: %v", m.Name(), err)
	}
	if _, err := m.(method.Grower).Grow(context.Background(), env); err != nil {
		t.Fatalf("%s Grow: %v", m.Name(), err)
	}
	for i := range 4 {
		a, b := method.ScaleOverlay(family, i, env.Measured())
		methodtest.Ping(t, l, &method.Path{A: a.Addr(), B: b.Addr()})
	}
}

// TestTunnelsNotSupportedHere runs a three-tunnel Setup on real
// namespaces of this host: where the kernel lacks the method (this
// development machine) its own refusal must be ErrNotSupported naming
// the option, where it has it the refusal is faked (Env.Faults); either
// way Teardown, twice, leaves the links as they were.
func TestTunnelsNotSupportedHere(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	cfg, cfgErr := hostinfo.LoadKernelConfig()
	for _, m := range scaledTunnels() {
		family := m.Families()[len(m.Families())-1]
		option := m.Requirements()[len(m.Requirements())-1].Kernel // gretap over IPv6: CONFIG_IPV6_GRE
		t.Run(m.Name(), func(t *testing.T) {
			t.Parallel()
			l := testbedtest.New(t, 1500)
			env := &method.Env{A: l.A, B: l.B, Family: family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(family),
				Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Tunnels: 3}
			if cfgErr != nil || hostinfo.HasKernelFeature(cfg, option) {
				env.Faults = &method.Faults{KernelLacks: []string{option}}
			}
			before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
			_, err := m.Setup(context.Background(), env)
			if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks "+option) {
				t.Errorf("Setup error %v, want ErrNotSupported naming %s", err, option)
			}
			for range 2 {
				if err := m.Teardown(context.Background(), env); err != nil {
					t.Errorf("Teardown: %v", err)
				}
			}
			if diff := cmp.Diff(before, [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}); diff != "" {
				t.Errorf("links after a refused Setup (-before +after):\n%s", diff)
			}
		})
	}
}

// TestTunnelsAboveMax: Setup itself refuses more tunnels than Scale
// allows, before anything is created (validation refuses them first).
func TestTunnelsAboveMax(t *testing.T) {
	t.Parallel()
	rec := methodtest.RecordEnv(kernel.Gretap{}, method.IPv4, map[string]string{"key": "4294967294"})
	rec.Env.Tunnels = 2
	_, err := kernel.Gretap{}.Setup(t.Context(), rec.Env)
	if err == nil || !strings.Contains(err.Error(), "gretap: 2 tunnels: at most 1") {
		t.Errorf("Setup of 2 tunnels above key 4294967294: %v, want a refusal", err)
	}
	if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
		t.Errorf("a refused Setup changed the hosts: %q", lines)
	}
}
