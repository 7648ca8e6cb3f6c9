package wireguard_test

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
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/wireguard"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// wgMethods are the three WireGuard methods with the program and the
// version their recorded daemons print ("" for the kernel's).
var wgMethods = []struct {
	m                func() method.Method
	program, version string
}{
	{func() method.Method { return wireguard.WireGuard{} }, "", ""},
	{func() method.Method { return wireguard.NewWireGuardGo() }, "wireguard-go", "wireguard-go v0.0.20230223"},
	{func() method.Method { return wireguard.NewBoringTun() }, "boringtun-cli", "boringtun 0.6.0"},
}

// recordWG returns a recording Env for m (a fresh value of its own) with
// n tunnels, its hosts answering as wgMethods' entry tt says; cfg
// receives the kernel device's configuration of each side.
func recordWG(m method.Method, program, version, family string, n int, cfg *[2]wgtypes.Config) *methodtest.Recorded {
	rec := methodtest.RecordEnv(m, family, nil)
	rec.Env.Tunnels = n
	if program == "" {
		answerWireGuard(rec.A, &cfg[0])
		answerWireGuard(rec.B, &cfg[1])
	} else {
		answerUserspace(rec.A, program, version)
		answerUserspace(rec.B, program, version)
	}
	return rec
}

// TestWireGuardScalePlans records each WireGuard method with three
// tunnels in each family and compares it with
// testdata/<method>-<family>-tunnels3.golden (rewrite with -update): side
// a's device holds three peers, the real one (side b's key, the single
// tunnel's addresses, with the preshared key) in the middle and two
// fillers with endpoints in 198.18.64.0/18 (2001:2:0:4000::/64) and the
// scale plan's addresses as allowed IPs; side b is as at one tunnel.
func TestWireGuardScalePlans(t *testing.T) {
	t.Parallel()
	for _, tt := range wgMethods {
		for _, family := range tt.m().Families() {
			t.Run(tt.m().Name()+"-"+family, func(t *testing.T) {
				t.Parallel()
				m := tt.m()
				var cfg [2]wgtypes.Config
				rec := recordWG(m, tt.program, tt.version, family, 3, &cfg)
				testbedtest.Golden(t, m.Name()+"-"+family+"-tunnels3", methodtest.Record(t, m, rec), *update)
				if tt.program != "" {
					return
				}
				// What the redacted lines cannot show: the real peer
				// is b's key, the fillers' keys are distinct.
				a, b := cfg[0], cfg[1]
				if len(a.Peers) != 3 || len(b.Peers) != 1 {
					t.Fatalf("peers: a %d, b %d; want 3 and 1", len(a.Peers), len(b.Peers))
				}
				if a.Peers[1].PublicKey != b.PrivateKey.PublicKey() || a.Peers[1].PresharedKey == nil {
					t.Error("a's peer 1 (the measured tunnel) is not b's key with the preshared key")
				}
				keys := map[wgtypes.Key]bool{a.PrivateKey.PublicKey(): true, b.PrivateKey.PublicKey(): true}
				for _, i := range []int{0, 2} {
					p := a.Peers[i]
					if keys[p.PublicKey] || p.PresharedKey != nil {
						t.Errorf("filler %d: key seen before or a preshared key", i)
					}
					keys[p.PublicKey] = true
				}
			})
		}
	}
}

// TestWireGuardScaleAdds: a scaled set-up reports one add per peer, side
// a's three then side b's one; one tunnel reports none.
func TestWireGuardScaleAdds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		var cfg [2]wgtypes.Config
		m := wireguard.WireGuard{}
		rec := recordWG(m, "", "", method.IPv4, n, &cfg)
		path, err := m.Setup(t.Context(), rec.Env)
		if err != nil {
			t.Fatal(err)
		}
		want := n + 1
		if n == 1 {
			want = 0
		}
		if len(path.Adds) != want {
			t.Errorf("%d tunnels: %d adds, want %d", n, len(path.Adds), want)
		}
		if err := m.Teardown(t.Context(), rec.Env); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWireGuardGrowRecorded: Grow adds peer N to side a's device, one
// more filler with the next addresses of the plan, says so without a
// key, and leaves side b alone.
func TestWireGuardGrowRecorded(t *testing.T) {
	t.Parallel()
	for _, tt := range wgMethods {
		t.Run(tt.m().Name(), func(t *testing.T) {
			t.Parallel()
			m := tt.m()
			var cfg [2]wgtypes.Config
			rec := recordWG(m, tt.program, tt.version, method.IPv4, 3, &cfg)
			ctx := context.Background()
			if _, err := m.Setup(ctx, rec.Env); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := m.Teardown(ctx, rec.Env); err != nil {
					t.Error(err)
				}
			})
			rec.A.Lines()
			rec.B.Lines()
			g, ok := m.(method.Grower)
			if !ok {
				t.Fatalf("%s is no method.Grower", m.Name())
			}
			how, err := g.Grow(ctx, rec.Env)
			if err != nil {
				t.Fatal(err)
			}
			wantHow := "add peer 3 on side a's tb1a2b3c-wga (allowed IP 198.19.128.7/32, endpoint 198.18.64.3:51820)"
			if how != wantHow {
				t.Errorf("Grow says %q, want %q", how, wantHow)
			}
			want := "wg set tb1a2b3c-wga peer <key> endpoint 198.18.64.3:51820 allowed-ips 198.19.128.7/32"
			if tt.program != "" {
				want = "uapi tb1a2b3c-wga.sock set=1 public_key=<key> endpoint=198.18.64.3:51820 replace_allowed_ips=true allowed_ip=198.19.128.7/32"
			}
			if got := rec.A.Lines(); !slices.Equal(got, []string{want}) {
				t.Errorf("a: Grow did %q, want %q", got, want)
			}
			if got := rec.B.Lines(); len(got) > 0 {
				t.Errorf("b: Grow did %q, want nothing", got)
			}
		})
	}
}

// TestWireGuardScaleRefused: the most peers is the address plan's, and a
// scenario asking for more is refused by validation, before anything is
// created, naming the method, the unit and the bound.
func TestWireGuardScaleRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range wgMethods {
		m := tt.m()
		for _, f := range m.Families() {
			s := method.ScaleOf(m, f, method.Values{})
			if s.Unit != "peer" || s.Max != method.MaxScaleTunnels(f) || !strings.Contains(s.Why, "address plan") {
				t.Errorf("%s/%s: %+v, want peers up to the address plan's %d", m.Name(), f, s, method.MaxScaleTunnels(f))
			}
		}
	}
	r := method.NewRegistry(wireguard.NewWireGuardGo())
	sc := scenario.Default()
	sc.Methods = []string{"wireguard-go"}
	sc.Families = []string{method.IPv4}
	sc.Tunnels = []int{1, 20000}
	err := sc.Validate(method.Catalog{R: r})
	want := "tunnels: 20000: wireguard-go over ipv4 sets up at most 16384 (one tunnel is one peer; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs, a peer's allowed IP each): lower tunnels to 16384 or drop wireguard-go"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("validation of 20000 peers: %v, want %q", err, want)
	}
	sc.Tunnels = []int{1, 16384}
	if err := sc.Validate(method.Catalog{R: r}); err != nil {
		t.Errorf("validation of 16384 peers: %v", err)
	}
}

// setupScaled sets m up with n tunnels on a fresh local testbed (what
// methodtest.Setup does, with Env.Tunnels): teardown runs in t.Cleanup,
// twice, and must leave the links of both namespaces as they were.
func setupScaled(t *testing.T, m method.Method, family string, n int) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(family),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Tunnels: n}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	ctx := context.Background()
	start := time.Now()
	path, err := m.Setup(ctx, env)
	took := time.Since(start)
	t.Cleanup(func() {
		for i := range 2 {
			if err := m.Teardown(ctx, env); err != nil {
				t.Errorf("%s Teardown %d: %v", m.Name(), i+1, err)
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
	t.Logf("%s/%s: %d peers set up in %s", m.Name(), family, n, took.Round(time.Millisecond))
	return l, env, path
}

// wgPeersWant is what side a's peers must be with n tunnels (grown:
// one more): allowed IP -> endpoint, "" for the real peer's (b's
// underlay address).
func wgPeersWant(env *method.Env, n int) map[netip.Prefix]string {
	want := map[netip.Prefix]string{}
	for i := range n {
		_, b := method.ScaleOverlay(env.Family, i, env.Measured())
		want[method.HostPrefix(b.Addr())] = ""
	}
	return want
}

// checkScaledPeers reads both devices back through their endpoints
// ("wg show DEV dump" in each daemon's mount namespace) and checks that
// side a holds n peers, each allowed its own address of the plan, the
// fillers at distinct endpoints in the filler block and never a
// handshake, the real peer at b's underlay address with one; and that b
// holds its one peer.
func checkScaledPeers(t *testing.T, l *localns.Local, env *method.Env, path *method.Path, n int, secrets []string) {
	t.Helper()
	testenv.NeedProgram(t, "wg", "apt-get install -y --no-install-recommends wireguard-tools")
	ctx := context.Background()
	want := wgPeersWant(env, n)
	filler := netip.MustParsePrefix("198.18.64.0/18")
	if env.Family == method.IPv6 {
		filler = netip.MustParsePrefix("2001:2:0:4000::/64")
	}
	da, err := wireguard.WireGuardShow(ctx, l.A, path.Devices["a"][0], path.Daemons[0].PID)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.NoSecrets(t, "parsed wg dump", fmt.Sprintf("%+v", da), secrets)
	if len(da.Peers) != n {
		t.Errorf("a: %d peers, want %d", len(da.Peers), n)
	}
	_, ob := method.Overlay(env.Family)
	endpoints := map[string]bool{}
	for _, p := range da.Peers {
		if len(p.AllowedIPs) != 1 {
			t.Errorf("a: peer with allowed IPs %v, want one", p.AllowedIPs)
			continue
		}
		ip := p.AllowedIPs[0]
		if _, ok := want[ip]; !ok {
			t.Errorf("a: peer allowed %s, not an address of the plan or listed twice", ip)
			continue
		}
		delete(want, ip)
		ep, err := netip.ParseAddrPort(p.Endpoint)
		if err != nil {
			t.Errorf("a: peer %s: endpoint %q: %v", ip, p.Endpoint, err)
			continue
		}
		if ip.Addr() == ob.Addr() {
			// (boringtun reports a handshake's age in whole seconds,
			// 0 right after it: the bytes received show it instead.)
			if ep.Addr() != l.B.Addr(env.Family) || p.RxBytes == 0 || !p.HasPresharedKey {
				t.Errorf("a: the real peer %+v, want b's underlay address, bytes received and the preshared key", p)
			}
			continue
		}
		if !filler.Contains(ep.Addr()) || endpoints[p.Endpoint] || !p.LatestHandshake.IsZero() || p.TxBytes != 0 || p.RxBytes != 0 {
			t.Errorf("a: filler %+v: want a distinct endpoint in %s, no handshake, nothing sent or received", p, filler)
		}
		endpoints[p.Endpoint] = true
	}
	if len(want) > 0 {
		t.Errorf("a: no peer allowed %d addresses of the plan", len(want))
	}
	db, err := wireguard.WireGuardShow(ctx, l.B, path.Devices["b"][0], path.Daemons[1].PID)
	if err != nil {
		t.Fatal(err)
	}
	if len(db.Peers) != 1 || db.Peers[0].RxBytes == 0 {
		t.Errorf("b: %+v, want its one peer (a), bytes received", db.Peers)
	}
}

// runScaled is the real run of a userspace WireGuard with 100 tunnels:
// 100 peers on a, one on b, each read back; a ping crosses the measured
// peer (the fillers have no far end: they carry nothing by design); Grow
// adds peer 101, which is read back too, and the ping still crosses, as
// it does after a rekey of the real peer; teardown leaves the links as
// before (setupScaled).
func runScaled(t *testing.T, m method.Method, family string) {
	const n = 100
	l, env, path := setupScaled(t, m, family, n)
	secrets := wgSecrets(t, []string{filepath.Join(env.Dir, m.Name()+"-a"), filepath.Join(env.Dir, m.Name()+"-b")})
	if len(path.Adds) != n+1 {
		t.Errorf("%d adds, want %d (a's %d peers and b's one)", len(path.Adds), n+1, n)
	}
	checkScaledPeers(t, l, env, path, n, secrets)
	methodtest.Ping(t, l, path)
	how, err := m.(method.Grower).Grow(context.Background(), env)
	if err != nil {
		t.Fatalf("Grow: %v", err)
	}
	methodtest.NoSecrets(t, "Grow's account", how, secrets)
	t.Logf("Grow: %s", how)
	checkScaledPeers(t, l, env, path, n+1, secrets)
	methodtest.Ping(t, l, path)
	// The recover test's rekey finds side b's peer among the fillers.
	if _, err := m.(method.Rekeyer).Rekey(context.Background(), env); err != nil {
		t.Fatalf("Rekey with %d peers: %v", n+1, err)
	}
	methodtest.Ping(t, l, path)
	checkScaledPeers(t, l, env, path, n+1, secrets)
}

func TestWireGuardGoScaled(t *testing.T) {
	m := wireguard.NewWireGuardGo()
	requireProgram(t, m, "wireguard-go")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { runScaled(t, m, family) })
	}
}

func TestBoringTunScaled(t *testing.T) {
	m := wireguard.NewBoringTun()
	requireProgram(t, m, "boringtun-cli")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { runScaled(t, m, family) })
	}
}

// TestWGBatches: a configuration of many peers goes in requests of
// wgBatch peers, the first with the device's key, port and
// replace_peers, the others with peers only, every peer once, in order.
func TestWGBatches(t *testing.T) {
	key := testKey(t, 1)
	port := 51820
	n := 2*wireguard.WGBatch + 88
	cfg := wgtypes.Config{PrivateKey: &key, ListenPort: &port, ReplacePeers: true}
	for i := range n {
		cfg.Peers = append(cfg.Peers, wgtypes.PeerConfig{PublicKey: testKey(t, byte(i))})
	}
	got := wireguard.WGBatches(cfg, wireguard.WGBatch)
	if len(got) != 3 || len(got[0].Peers) != wireguard.WGBatch || len(got[2].Peers) != 88 {
		t.Fatalf("%d peers: %d batches, want 3 (%d, %d, 88)", n, len(got), wireguard.WGBatch, wireguard.WGBatch)
	}
	if got[0].PrivateKey == nil || got[0].ListenPort == nil || !got[0].ReplacePeers {
		t.Error("the first batch lacks the device's key, port or replace_peers")
	}
	var peers []wgtypes.PeerConfig
	for i, b := range got {
		if i > 0 && (b.PrivateKey != nil || b.ListenPort != nil || b.ReplacePeers) {
			t.Errorf("batch %d sets the device again (a later replace_peers would drop the peers before it)", i)
		}
		peers = append(peers, b.Peers...)
	}
	if !slices.EqualFunc(peers, cfg.Peers, func(a, b wgtypes.PeerConfig) bool { return a.PublicKey == b.PublicKey }) {
		t.Error("the batches do not hold every peer once, in order")
	}
	one := wgtypes.Config{PrivateKey: &key, Peers: cfg.Peers[:1]}
	if got := wireguard.WGBatches(one, wireguard.WGBatch); len(got) != 1 || got[0].PrivateKey == nil || len(got[0].Peers) != 1 {
		t.Errorf("one peer: %+v, want the configuration itself", got)
	}
}

// TestWGFillerEndpoints: every filler of the largest set-up (and the one
// Grow adds to a smaller one) has an endpoint of its own inside the
// filler block, away from the testbeds' underlay addresses.
func TestWGFillerEndpoints(t *testing.T) {
	for _, f := range []string{method.IPv4, method.IPv6} {
		block := netip.MustParsePrefix("198.18.64.0/18")
		if f == method.IPv6 {
			block = netip.MustParsePrefix("2001:2:0:4000::/64")
		}
		seen := map[netip.Addr]bool{}
		for i := range method.MaxScaleTunnels(f) {
			a := wireguard.WGFillerEndpoint(f, i)
			if !block.Contains(a) || seen[a] || (f == method.IPv6 && a == block.Addr()) {
				t.Fatalf("%s: filler %d at %s: outside %s, taken, or the IPv6 subnet's anycast address", f, i, a, block)
			}
			seen[a] = true
		}
	}
}

// TestWireGuardTunnelsAboveMax: Setup itself refuses more peers than
// Scale allows, before anything is created (validation refuses them
// first).
func TestWireGuardTunnelsAboveMax(t *testing.T) {
	t.Parallel()
	for _, tt := range wgMethods {
		m := tt.m()
		var cfg [2]wgtypes.Config
		rec := recordWG(m, tt.program, tt.version, method.IPv4, method.MaxScaleTunnels(method.IPv4)+1, &cfg)
		_, err := m.Setup(t.Context(), rec.Env)
		if err == nil || !strings.Contains(err.Error(), m.Name()+": 16385 tunnels: at most 16384 (one tunnel is one peer;") {
			t.Errorf("%s: Setup of 16385 peers: %v, want a refusal", m.Name(), err)
		}
		if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
			t.Errorf("%s: a refused Setup changed the hosts: %q", m.Name(), lines)
		}
	}
}
