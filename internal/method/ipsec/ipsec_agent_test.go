package ipsec_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestIPsecLibipsecThroughAgents runs ipsec on kernel-libipsec between two
// remote endpoints, each served by a real agent process in its own
// network, mount and pid namespaces (testbedtest.IsolatedAgentPair), as
// over SSH: charon, swanctl, their configuration and the vici socket live
// on the agents' hosts, and every command, file, netlink call and op goes
// through the agent protocol. It checks the wire as the local test does
// (ESP in UDP 4500 both ways, only the SPIs charon negotiated, nothing
// above the underlay MTU), with a ping each way and a full-size one, then
// that Teardown leaves no link, xfrm state, overlay address, process or
// file in the agents' run directories.
func TestIPsecLibipsecThroughAgents(t *testing.T) {
	ipsecRequireSwan(t)
	faults := ipsecWithoutESP(t)
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			ctx := context.Background()
			l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
			m := ipsec.NewIPsec()
			env := &method.Env{A: pair.A, B: pair.B, Family: family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir, Faults: faults}
			before := methodtest.AgentStateOf(t, pair)
			t.Cleanup(func() { _ = m.Teardown(ctx, env) })

			path, err := m.Setup(ctx, env)
			if err != nil {
				t.Fatalf("Setup through agents: %v", err)
			}
			if !strings.HasPrefix(path.Variant, "kernel-libipsec") {
				t.Errorf("variant %q on a kernel without ESP, want kernel-libipsec", path.Variant)
			}
			if len(path.Daemons) != 2 {
				t.Errorf("daemons %v, want a charon per side", path.Daemons)
			}
			for _, d := range path.Daemons {
				if d.PID <= 0 {
					t.Errorf("charon of %s has no pid", d.Side)
				}
			}
			if got, want := m.ImplementationOn(ctx, pair.A), m.Implementation(); got != want {
				t.Errorf("implementation on the agent's host %q, want this machine's %q (the same strongSwan)", got, want)
			}
			mtu := min(env.OverlayMTU, ipsec.LibipsecMaxMTU)
			spis := map[uint32]bool{}
			children, err := ipsec.IPsecSAs(ctx, pair.A, filepath.Join(method.SideRoot(env, pair.A), "ipsec-a"))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range children {
				for _, s := range []string{c.SPIIn, c.SPIOut} {
					var v uint32
					if _, err := fmt.Sscanf(s, "%x", &v); err != nil {
						t.Fatalf("SPI %q: %v", s, err)
					}
					spis[v] = true
				}
			}
			frames := ipsecCapture(t, l.A, func() {
				for _, dir := range []struct {
					from *testbed.Endpoint
					to   string
				}{{pair.A, path.B.String()}, {pair.B, path.A.String()}} {
					if out, err := dir.from.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", dir.to); err != nil {
						t.Errorf("ping %s from %s through the agent: %v\n%s", dir.to, dir.from.Side, err, out)
					}
				}
				ipsecPingSize(t, pair.A, path, mtu)
			})
			ipsecCheckESP(t, l, frames, wire.EncapESPUDP, env.UnderlayMTU, spis)

			if err := m.Teardown(ctx, env); err != nil {
				t.Fatalf("Teardown through agents: %v", err)
			}
			if err := m.Teardown(ctx, env); err != nil {
				t.Errorf("second Teardown through agents: %v", err)
			}
			methodtest.CheckAgentState(t, pair, before)
			for _, d := range path.Daemons {
				ep := pair.A
				if d.Side == "b" {
					ep = pair.B
				}
				if comm, err := ep.ReadFile(fmt.Sprintf("/proc/%d/comm", d.PID)); err == nil && strings.TrimSpace(string(comm)) == "charon" {
					t.Errorf("charon %d of side %s still runs on its host", d.PID, d.Side)
				}
			}
			for _, ep := range pair.Endpoints() {
				ipsecCheckClean(t, ep)
			}
		})
	}
}

// TestIPsec220Agents runs ipsec and ipsec-ecmp through
// agents (an endpoint's namespace is its host's own, as over SSH) on
// hosts that run a strongSwan of their own, or have run one: a rule to
// table 220 (IPv4 and IPv6) and a route in table 220 through the
// underlay. The run must carry traffic, and after Teardown every rule and
// every route (all tables, both families) must be as before: the host's
// rule and routes to table 220 stay. Without such a rule before, there is
// none after. The crash cases end the run by the agent's controller
// vanishing mid-run: the agent kills the charons (which then remove
// nothing) and applies the site's journal, as clean does.
func TestIPsec220Agents(t *testing.T) {
	ipsecRequireSwan(t)
	faults := ipsecWithoutESP(t)
	for _, tc := range []struct {
		method   string
		family   string
		hostRule bool
		crash    bool
	}{
		{"ipsec", method.IPv4, true, false},
		{"ipsec", method.IPv6, true, false},
		{"ipsec", method.IPv4, false, false},
		{"ipsec", method.IPv4, true, true},
		{"ipsec", method.IPv6, false, true},
		{"ipsec-ecmp", method.IPv4, true, false},
		{"ipsec-ecmp", method.IPv6, true, false},
		{"ipsec-ecmp", method.IPv6, false, false},
		{"ipsec-ecmp", method.IPv6, true, true},
	} {
		// Short names: the test's temporary directory holds charon's
		// vici socket, whose path must fit a sockaddr_un (108 bytes).
		name := fmt.Sprintf("%s/%s/%v", strings.TrimPrefix(tc.method, "ipsec-"), tc.family, tc.hostRule)
		if tc.crash {
			name += "/crash"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			l, pair, agents := testbedtest.IsolatedAgentPair(t, 1500)
			var m method.Method = ipsec.NewIPsec()
			if tc.method == "ipsec-ecmp" {
				m = ipsec.NewIPsecECMP()
			}
			env := &method.Env{A: pair.A, B: pair.B, Family: tc.family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(tc.family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir, Faults: faults}
			if tc.hostRule {
				for _, ep := range pair.Endpoints() {
					strongswanHost(t, ep)
				}
			}
			// Snapshots read the namespaces from here (the local
			// endpoints), since the agents may be gone at the end.
			var before [][]string
			for _, ep := range l.Endpoints() {
				waitLinkLocal(t, ep)
				before = append(before, routingState(t, ep))
			}
			t.Cleanup(func() { _ = m.Teardown(ctx, env) })
			path, err := m.Setup(ctx, env)
			if err != nil {
				t.Fatalf("Setup through agents: %v", err)
			}
			methodtest.Iperf3Between(t, pair.A, pair.B, path, 1, 1)
			// While the run runs, table 220 and the rules to it are the
			// host's alone, and the route to the peer's overlay address
			// is in another table, behind a rule of another priority.
			for i, ep := range l.Endpoints() {
				during := routingState(t, ep)
				if diff := cmp.Diff(lines220(before[i]), lines220(during)); diff != "" {
					t.Errorf("%s: table 220 and its rules during the run (-before +during):\n%s", ep.Side, diff)
				}
				peer := path.B
				if i == 1 {
					peer = path.A
				}
				if !slices.ContainsFunc(during, func(l string) bool {
					f := strings.Fields(l)
					i := slices.Index(f, "table")
					if len(f) < 2 || f[1] != peer.String() || i < 0 || i+1 >= len(f) {
						return false
					}
					n, err := strconv.Atoi(f[i+1])
					return err == nil && n >= ipsec.RunTableBase && n < ipsec.RunTableBase+ipsec.RunTableSpan
				}) {
					t.Errorf("%s: no route to %s in the run's table:\n%s", ep.Side, peer, strings.Join(during, "\n"))
				}
			}
			if tc.crash {
				for _, a := range agents {
					a.Vanish()
				}
				for _, a := range agents {
					if how := a.Exited(30 * time.Second); how == "" {
						t.Fatal("agent still runs 30s after its controller vanished")
					}
				}
			} else if err := m.Teardown(ctx, env); err != nil {
				t.Fatalf("Teardown through agents: %v", err)
			}
			for i, ep := range l.Endpoints() {
				if diff := cmp.Diff(before[i], routingState(t, ep)); diff != "" {
					t.Errorf("%s: rules and routes after the run (-before +after):\n%s", ep.Side, diff)
				}
			}
		})
	}
}

// strongswanHost gives ep's namespace what a host running strongSwan has:
// charon's rule (priority 220) to table 220 for IPv4 and IPv6, and in
// table 220 a route of each family through the underlay (to networks of
// the benchmarking ranges, via a gateway on the underlay's network), and
// IPsec policies of its own between networks of the benchmarking range.
func strongswanHost(t *testing.T, ep *testbed.Endpoint) {
	t.Helper()
	gw4 := ep.Addr4.Masked().Addr().Next().Next().Next().Next() // .4, no endpoint's
	gw6 := ep.Addr6.Masked().Addr().Next().Next().Next().Next()
	for _, argv := range [][]string{
		{"ip", "-4", "rule", "add", "priority", "220", "table", "220"},
		{"ip", "-6", "rule", "add", "priority", "220", "table", "220"},
		{"ip", "-4", "route", "add", "198.18.241.0/24", "via", gw4.String(), "dev", ep.Dev, "table", "220"},
		{"ip", "-6", "route", "add", "2001:2:0:f1::/64", "via", gw6.String(), "dev", ep.Dev, "table", "220"},
		// The host's own IPsec policies, in the benchmarking range too,
		// with the reqid charon gives its first CHILD_SA.
		{"ip", "xfrm", "policy", "add", "src", "198.18.242.0/24", "dst", "198.18.243.0/24", "dir", "out",
			"tmpl", "src", ep.Addr4.Addr().String(), "dst", gw4.String(), "proto", "esp", "reqid", "1", "mode", "tunnel"},
		{"ip", "xfrm", "policy", "add", "src", "198.18.243.0/24", "dst", "198.18.242.0/24", "dir", "in",
			"tmpl", "src", gw4.String(), "dst", ep.Addr4.Addr().String(), "proto", "esp", "reqid", "1", "mode", "tunnel"},
	} {
		if out, err := ep.Run(context.Background(), argv...); err != nil {
			t.Fatalf("%s: %v: %v\n%s", ep.Side, argv, err, out)
		}
	}
}

// routingState is ep's rules and routes, every table and both families,
// and its xfrm policies, as ip prints them, one line each.
func routingState(t *testing.T, ep *testbed.Endpoint) []string {
	t.Helper()
	var lines []string
	for _, argv := range [][]string{
		{"ip", "-4", "rule"}, {"ip", "-6", "rule"},
		{"ip", "-4", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"},
		{"ip", "xfrm", "policy"},
	} {
		out, err := ep.Run(context.Background(), argv...)
		if err != nil {
			t.Fatalf("%s: %v: %v\n%s", ep.Side, argv, err, out)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				lines = append(lines, strings.Join(argv[1:2], "")+" "+l)
			}
		}
	}
	return lines
}

// waitLinkLocal waits until the IPv6 link-local address of ep's underlay
// has passed duplicate address detection, so that its route in the local
// table is there before a snapshot of the routes is taken.
func waitLinkLocal(t *testing.T, ep *testbed.Endpoint) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := ep.Run(context.Background(), "ip", "-6", "-o", "addr", "show", "dev", ep.Dev, "scope", "link")
		if err != nil {
			t.Fatalf("%s: ip addr: %v\n%s", ep.Side, err, out)
		}
		if strings.Contains(string(out), "fe80:") && !strings.Contains(string(out), "tentative") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no link-local address on %s after 10s:\n%s", ep.Side, ep.Dev, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lines220 are the lines of a routingState about table 220.
func lines220(state []string) []string {
	var out []string
	for _, l := range state {
		f := strings.Fields(l)
		for i := 1; i < len(f); i++ {
			if f[i] == "220" && (f[i-1] == "table" || f[i-1] == "lookup") {
				out = append(out, l)
				break
			}
		}
	}
	return out
}
