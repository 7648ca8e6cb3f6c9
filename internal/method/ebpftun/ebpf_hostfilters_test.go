package ebpftun_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/clsact/clsacttest"
	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
)

// handle is ep's netlink handle, in its namespace.
func handle(t *testing.T, ep *testbed.Endpoint) *netlink.Handle {
	t.Helper()
	h, ok := ep.NL.(*netlink.Handle)
	if !ok {
		t.Fatalf("endpoint %s has no local netlink handle", ep.Side)
	}
	return h
}

// wantAttached checks that ep's underlay carries the host's filters
// (clsacttest.AddHostFilters, and with counted its counters at pref
// 48000) and tunbench's beside them, at pref 2.
func wantAttached(t *testing.T, ep *testbed.Endpoint, counted bool) {
	t.Helper()
	want := map[uint32][]string{
		netlink.HANDLE_MIN_INGRESS: {"1 bpf host_prog", "2 bpf tunbench_ingress", "49000 u32"},
		netlink.HANDLE_MIN_EGRESS:  {"1 bpf host_prog", "2 bpf tunbench_egress"},
	}
	if counted {
		want = map[uint32][]string{
			netlink.HANDLE_MIN_INGRESS: {"1 bpf host_prog", "2 bpf tunbench_ingress", "48000 bpf host_count", "49000 u32"},
			netlink.HANDLE_MIN_EGRESS:  {"1 bpf host_prog", "2 bpf tunbench_egress", "48000 bpf host_count"},
		}
	}
	for parent, want := range want {
		if diff := cmp.Diff(want, clsacttest.Prefs(t, handle(t, ep), ep.Dev, parent)); diff != "" {
			t.Errorf("%s: filters on %x while the method runs (-want +got):\n%s", ep.Side, parent, diff)
		}
	}
}

// TestEBPFTunnelHostFilters carries traffic over each eBPF method between
// two namespaces whose underlays have a host's own tc datapath: a BPF
// filter at pref 1 handle 1 on ingress and egress (returning
// TC_ACT_UNSPEC) and a u32 filter at pref 49000 on ingress, and on a
// counting filters at pref 48000. tunbench's programs go beside them,
// the traffic flows, packets that are not the tunnel's (a ping between
// the underlay addresses) still reach a's counting filters after
// tunbench's, and the teardown leaves the tc state of both underlays as
// it was.
func TestEBPFTunnelHostFilters(t *testing.T) {
	for _, m := range ebpfMethods() {
		for _, family := range m.Families() {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				requireEBPF(t)
				requireFamilyChange(t, m, family)
				l := testbedtest.New(t, 1500)
				var before [][]string
				var inCount, outCount func() uint64
				for _, ep := range l.Endpoints() {
					clsacttest.AddHostFilters(t, handle(t, ep), ep.Dev)
					inCount = clsacttest.AddCounter(t, handle(t, ep), ep.Dev, netlink.HANDLE_MIN_INGRESS, 48000)
					outCount = clsacttest.AddCounter(t, handle(t, ep), ep.Dev, netlink.HANDLE_MIN_EGRESS, 48000)
					before = append(before, clsacttest.State(t, ep.Namespace, ep.Dev))
				}
				env := &method.Env{
					A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(family),
					Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir,
				}
				ctx := context.Background()
				path, err := m.Setup(ctx, env)
				if err != nil {
					t.Fatalf("Setup: %v (teardown: %v)", err, m.Teardown(ctx, env))
				}
				for _, ep := range l.Endpoints() {
					wantAttached(t, ep, true)
				}
				methodtest.Ping(t, l, path)
				methodtest.Iperf3(t, l, path, 1)
				// b's counters (the last set up) count b's packets.
				in0, out0 := inCount(), outCount()
				under := l.A.Addr(family).String()
				if out, err := l.B.Run(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "3", under); err != nil {
					t.Fatalf("ping %s over the underlay from b: %v\n%s", under, err, out)
				}
				if in, out := inCount()-in0, outCount()-out0; in < 3 || out < 3 {
					t.Errorf("b's filters after tunbench's saw %d packets in and %d out during 3 pings over the underlay, want at least 3 each", in, out)
				}
				for range 2 {
					if err := m.Teardown(ctx, env); err != nil {
						t.Fatalf("Teardown: %v", err)
					}
				}
				for i, ep := range l.Endpoints() {
					if diff := cmp.Diff(before[i], clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
						t.Errorf("%s: tc state after teardown (-before +after):\n%s", ep.Side, diff)
					}
				}
			})
		}
	}
}

// TestEBPFCrashClean attaches one side and then "crashes": "tunbench
// clean" applies the site's journal (agent.CleanSite, in the
// endpoint's namespace) and must leave the underlay's tc state as it
// was: with the host's filters, only tunbench's go; without a clsact
// qdisc before, the one the run created goes too.
func TestEBPFCrashClean(t *testing.T) {
	for _, hostFilters := range []bool{true, false} {
		name := "no qdisc before"
		if hostFilters {
			name = "host filters"
		}
		t.Run(name, func(t *testing.T) {
			requireEBPF(t)
			m, family := ebpftun.EBPFGeneve, method.IPv4
			l := testbedtest.New(t, 1500)
			ep := l.A
			if hostFilters {
				clsacttest.AddHostFilters(t, handle(t, ep), ep.Dev)
			}
			before := clsacttest.State(t, ep.Namespace, ep.Dev)
			// The side's site directory as an ssh testbed's agent keeps it,
			// under a run ID of its own (CleanSite removes the devices named
			// after its run, which the local testbed's underlay is).
			root, crashID := t.TempDir(), testbed.NewID()
			ep.Dir = testbed.SiteDir(root, crashID, "a")
			env := &method.Env{
				A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(family),
				Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir,
			}
			if err := ebpftun.SetupEBPFSide(m, env, ep); err != nil {
				t.Fatal(err)
			}
			if hostFilters {
				wantAttached(t, ep, false)
			}
			if !testbed.HasUndo(ep.Dir, ebpftun.ClsactUndoName(ep.Dev)) {
				t.Fatalf("no journal entry %s", ebpftun.ClsactUndoName(ep.Dev))
			}
			var removed []testbed.Leftover
			err := ep.Do(func() error {
				var err error
				removed, err = agent.CleanSite(root, crashID, "a")
				return err
			})
			if err != nil {
				t.Fatalf("CleanSite: %v", err)
			}
			want := "tc programs detached from " + ep.Dev
			if !hostFilters {
				want += " and its clsact qdisc removed"
			}
			found := false
			for _, r := range removed {
				found = found || (r.Kind == "restored" && r.Name == want)
			}
			if !found {
				t.Errorf("CleanSite removed %v, want %q among them", removed, want)
			}
			if diff := cmp.Diff(before, clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
				t.Errorf("tc state after clean (-before +after):\n%s", diff)
			}
			// The side's teardown finds nothing of tc left to take back.
			if err := ebpftun.TeardownEBPFSide(m, env, ep); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, clsacttest.State(t, ep.Namespace, ep.Dev)); diff != "" {
				t.Errorf("tc state after teardown (-before +after):\n%s", diff)
			}
		})
	}
}

// TestEBPFHostVXLAN gives both namespaces the host's own kernel VXLAN
// device on tunbench's port (4789, VNI 4242, between the underlay
// addresses, overlay 198.18.250.0/24) and runs ebpf-vxlan beside it: the
// host's overlay must keep working while tunbench's tunnel carries
// traffic, because a VXLAN packet whose VNI has no decap entry is not
// tunbench's and goes on (counted as not ours), not dropped.
func TestEBPFHostVXLAN(t *testing.T) {
	m := ebpftun.EBPFVXLAN
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) {
			requireEBPF(t)
			l := testbedtest.New(t, 1500)
			ctx := context.Background()
			hostAddr := map[string]string{"a": "198.18.250.1", "b": "198.18.250.2"}
			for _, ep := range l.Endpoints() {
				peer := l.B
				if ep == l.B {
					peer = l.A
				}
				for _, argv := range [][]string{
					{"ip", "link", "add", "hostvx", "type", "vxlan", "id", "4242", "dstport", "4789",
						"local", ep.Addr(family).String(), "remote", peer.Addr(family).String(), "dev", ep.Dev},
					{"ip", "addr", "add", hostAddr[ep.Side] + "/24", "dev", "hostvx"},
					{"ip", "link", "set", "hostvx", "up"},
				} {
					if out, err := ep.Run(ctx, argv...); err != nil {
						t.Fatalf("%s: %v: %v\n%s", ep.Side, argv, err, out)
					}
				}
				t.Cleanup(func() {
					if out, err := ep.Run(ctx, "ip", "link", "del", "hostvx"); err != nil {
						t.Errorf("%s: delete hostvx: %v\n%s", ep.Side, err, out)
					}
				})
			}
			hostPing := func(what string) {
				t.Helper()
				if out, err := l.A.Run(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "3", hostAddr["b"]); err != nil {
					t.Fatalf("ping %s over the host's own VXLAN %s: %v\n%s", hostAddr["b"], what, err, out)
				}
			}
			hostPing("before tunbench's tunnel")

			env := &method.Env{
				A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(family),
				Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir,
			}
			path, err := m.Setup(ctx, env)
			if err != nil {
				t.Fatalf("Setup: %v (teardown: %v)", err, m.Teardown(ctx, env))
			}
			t.Cleanup(func() {
				if err := m.Teardown(ctx, env); err != nil {
					t.Errorf("Teardown: %v", err)
				}
			})
			methodtest.Ping(t, l, path)
			// The host's overlay carries a ping while tunbench's tunnel
			// carries iperf3.
			done := make(chan error, 1)
			var out []byte
			go func() {
				var err error
				out, err = l.A.Run(ctx, "ping", "-c", "5", "-i", "0.2", "-W", "3", hostAddr["b"])
				done <- err
			}()
			methodtest.Iperf3(t, l, path, 2)
			if err := <-done; err != nil {
				t.Fatalf("ping %s over the host's own VXLAN while tunbench's tunnel runs: %v\n%s", hostAddr["b"], err, out)
			}
			hostPing("after iperf3 over tunbench's tunnel")
			methodtest.Ping(t, l, path)

			for _, ep := range l.Endpoints() {
				s, err := ebpftun.Stats(ctx, ep, filepath.Join(ebpf.PinRoot, env.Prefix+"-"+ep.Side))
				if err != nil {
					t.Fatal(err)
				}
				// a and b each received at least 8 echo requests or replies.
				if s.NotOurs < 8 {
					t.Errorf("%s: not-ours counter %d, want at least the 8 host VXLAN packets it received", ep.Side, s.NotOurs)
				}
				for _, d := range s.Decaps {
					if d.Packets == 0 || slices.ContainsFunc(d.Drops, func(n uint64) bool { return n != 0 }) {
						t.Errorf("%s: decap entry %s vni %d: %s, want packets and no drops", ep.Side, d.Encap, d.VNI, d.Counters)
					}
				}
				if slices.ContainsFunc(s.Drops, func(n uint64) bool { return n != 0 }) {
					t.Errorf("%s: %s", ep.Side, ebpf.Counters{Drops: s.Drops}.DropString())
				}
			}
		})
	}
}
