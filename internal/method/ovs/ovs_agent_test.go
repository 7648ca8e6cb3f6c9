package ovs_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/ovs"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netns"
)

// TestOVSNetdevThroughAgents runs ovs-vxlan on the netdev datapath between
// two remote endpoints, each served by a real agent process in its own
// network, mount and pid namespaces (testbedtest.IsolatedAgentPair), as
// over SSH: each side's ovsdb-server, ovs-vswitchd, database and sockets
// live on its agent's host, and every command, file, netlink call and op
// goes through the agent protocol. It checks the wire as the local test
// does (VXLAN on UDP 4789 with the VNI, an Ethernet frame inside, a
// full-size echo request exactly the underlay MTU), with a ping each way,
// then that Teardown leaves no link, OVS process or file in the agents'
// run directories, and gives the underlay its addresses and arp_ignore
// back.
func TestOVSNetdevThroughAgents(t *testing.T) {
	requireOVS(t)
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			ctx := context.Background()
			l, pair, _ := testbedtest.IsolatedAgentPair(t, 1500)
			m := ovs.NewOVSVXLAN()
			env := &method.Env{A: pair.A, B: pair.B, Family: family, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir,
				Options: map[string]string{"datapath": ovs.OVSNetdev}}
			before := methodtest.AgentStateOf(t, pair)
			t.Cleanup(func() { _ = m.Teardown(ctx, env) })

			path, err := m.Setup(ctx, env)
			if err != nil {
				t.Fatalf("Setup through agents: %v", err)
			}
			if path.Variant != ovs.OVSNetdev {
				t.Errorf("variant %q, want %q", path.Variant, ovs.OVSNetdev)
			}
			roles := map[string]int{}
			for _, d := range path.Daemons {
				roles[d.Role]++
				if d.PID <= 0 {
					t.Errorf("%s of %s has no pid", d.Role, d.Side)
				}
			}
			if roles["ovs-vswitchd"] != 2 || roles["ovsdb-server"] != 2 {
				t.Errorf("daemons %+v, want an ovs-vswitchd and an ovsdb-server per side", path.Daemons)
			}
			if got, want := m.ImplementationOn(ctx, pair.A), m.Implementation(); got != want {
				t.Errorf("implementation on the agent's host %q, want this machine's %q (the same Open vSwitch)", got, want)
			}
			for _, ep := range pair.Endpoints() {
				ovsCheckMTU(t, ep, path.Devices[ep.Side][0], env.OverlayMTU)
			}

			c, err := wire.Start(l.A, l.A.Dev)
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range []struct {
				from *testbed.Endpoint
				to   string
			}{{pair.A, path.B.String()}, {pair.B, path.A.String()}} {
				if out, err := dir.from.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", dir.to); err != nil {
					t.Errorf("ping %s from %s through the agent: %v\n%s", dir.to, dir.from.Side, err, out)
				}
			}
			ovsPingFull(t, pair.A, env, path)
			pkts, err := c.Stop()
			if err != nil {
				t.Fatal(err)
			}
			frames, err := wire.Summarize(pkts)
			if err != nil {
				t.Fatal(err)
			}
			ovsCheckWire(t, m, l, env, path, frames, 42)

			if err := m.Teardown(ctx, env); err != nil {
				t.Fatalf("Teardown through agents: %v", err)
			}
			if err := m.Teardown(ctx, env); err != nil {
				t.Errorf("second Teardown through agents: %v", err)
			}
			methodtest.CheckAgentState(t, pair, before)
			for _, ep := range pair.Endpoints() {
				ovsCheckUnderlay(t, ep)
			}
			if out, err := pair.A.Run(ctx, "ping", "-c", "1", "-W", "2", pair.B.Addr(family).String()); err != nil {
				t.Errorf("underlay ping after Teardown: %v\n%s", err, out)
			}
		})
	}
}

// TestOVSNetdevHostRoutesThroughAgents: on the netdev datapath OVS takes
// the underlay's addresses for its br-phy, and the kernel drops the
// host's routes through the underlay with them. On hosts whose underlay
// has a second address, a route in main via a gateway through it, a
// route in table 220 through it and a rule to table 220 (both families,
// as a host running strongSwan has), an ovs-vxlan run carries traffic,
// and afterwards the host's addresses, routes (every table, both
// families), rules and links are exactly as before: after Teardown, and
// after the crash path (the agent's controller vanishes mid-run, so the
// agent kills the daemons and applies the site's journal, as clean does).
// Rules are never touched by OVS at all: they are as before during the
// run too.
func TestOVSNetdevHostRoutesThroughAgents(t *testing.T) {
	requireOVS(t)
	for _, family := range []string{method.IPv4, method.IPv6} {
		for _, crash := range []bool{false, true} {
			name := family + "/teardown"
			if crash {
				name = family + "/crash"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				l, pair, agents := testbedtest.IsolatedAgentPair(t, 1500)
				m := ovs.NewOVSVXLAN()
				env := &method.Env{A: pair.A, B: pair.B, Family: family, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(family), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir,
					Options: map[string]string{"datapath": ovs.OVSNetdev}}
				nss := []string{l.A.Namespace, l.B.Namespace}
				var before [][]string
				for i, ep := range l.Endpoints() {
					hostUnderlay(t, nss[i], ep.Dev, i)
					before = append(before, hostNetState(t, nss[i], ep.Dev))
				}
				t.Cleanup(func() { _ = m.Teardown(ctx, env) })
				path, err := m.Setup(ctx, env)
				if err != nil {
					t.Fatalf("Setup through agents: %v", err)
				}
				methodtest.Iperf3Between(t, pair.A, pair.B, path, 1, 1)
				for i, ep := range l.Endpoints() {
					if diff := cmp.Diff(rulesOf(before[i]), rulesOf(hostNetState(t, nss[i], ep.Dev))); diff != "" {
						t.Errorf("%s: rules during the run (-before +during):\n%s", ep.Side, diff)
					}
					// The recover test's flap of the underlay puts back
					// what it took (no host route left through the
					// device that only the moved addresses reach).
					if err := flapIn(nss[i], ep.Dev); err != nil {
						t.Errorf("%s: flap %s during the run: %v", ep.Side, ep.Dev, err)
					}
				}
				if crash {
					for _, a := range agents {
						a.Vanish()
					}
					for _, a := range agents {
						if how := a.Exited(30 * time.Second); how == "" {
							t.Fatal("agent still runs 30s after its controller vanished")
						}
					}
					// The run's own devices go by their names (as clean
					// removes them), the underlay stays.
					for i, ep := range l.Endpoints() {
						out, err := exec.Command("ip", "-n", nss[i], "-o", "link", "show").CombinedOutput()
						if err != nil {
							t.Fatalf("ip link in %s: %v\n%s", nss[i], err, out)
						}
						for _, line := range strings.Split(string(out), "\n") {
							f := strings.Fields(line)
							if len(f) < 2 {
								continue
							}
							dev, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
							if strings.HasPrefix(dev, env.Prefix+"-") && dev != ep.Dev {
								if out, err := exec.Command("ip", "-n", nss[i], "link", "del", dev).CombinedOutput(); err != nil {
									t.Errorf("delete %s in %s: %v\n%s", dev, nss[i], err, out)
								}
							}
						}
					}
				} else if err := m.Teardown(ctx, env); err != nil {
					t.Fatalf("Teardown through agents: %v", err)
				}
				for i, ep := range l.Endpoints() {
					if diff := cmp.Diff(before[i], hostNetState(t, nss[i], ep.Dev)); diff != "" {
						t.Errorf("%s: host after the run (-before +after):\n%s", ep.Side, diff)
					}
				}
			})
		}
	}
}

// hostUnderlay gives the underlay dev of namespace ns (side i) what a
// host's NIC may have beside the run's address: a second address of
// each family in a network of its own and a third in the run's (an IPv4
// secondary), routes in main via a gateway on each of those networks, a
// route through it in table 220, and a rule to table 220 (priority 220).
func hostUnderlay(t *testing.T, ns, dev string, i int) {
	t.Helper()
	for _, argv := range [][]string{
		// brd +: the netlink library gives a restored IPv4 address a
		// broadcast address whether the original had one or not.
		{"-4", "addr", "add", fmt.Sprintf("198.18.9.%d/24", i+1), "brd", "+", "dev", dev},
		{"-6", "addr", "add", fmt.Sprintf("2001:2:9::%d/64", i+1), "dev", dev, "nodad"},
		// A second address in the subnet of the run's own: an IPv4
		// secondary, which the kernel deletes with its primary.
		{"-4", "addr", "add", fmt.Sprintf("198.18.0.%d/24", 101+i), "brd", "+", "dev", dev},
		{"-6", "addr", "add", fmt.Sprintf("2001:2::%d/64", 101+i), "dev", dev, "nodad"},
		{"-6", "route", "add", "2001:db8:3::/64", "via", "2001:2::fe", "dev", dev},
		{"-4", "route", "add", "192.0.2.0/24", "via", "198.18.9.254", "dev", dev},
		{"-6", "route", "add", "2001:db8:1::/64", "via", "2001:2:9::fe", "dev", dev},
		{"-4", "route", "add", "203.0.113.0/24", "via", "198.18.9.254", "dev", dev, "table", "220"},
		{"-6", "route", "add", "2001:db8:2::/64", "dev", dev, "table", "220"},
		{"-4", "rule", "add", "priority", "220", "table", "220"},
		{"-6", "rule", "add", "priority", "220", "table", "220"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, argv...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v in %s: %v\n%s", argv, ns, err, out)
		}
	}
}

// hostNetState is namespace ns's rules, routes (every table, both
// families), dev's addresses and the names of its links, as ip prints
// them, once dev's IPv6 link-local address has passed duplicate address
// detection (its route in the local table comes only then).
func hostNetState(t *testing.T, ns, dev string) []string {
	t.Helper()
	// Standard output only: iproute2 warns on standard error while a
	// veth's peer namespace is going away ("Peer netns reference is
	// invalid."), which another test's teardown may do at any moment.
	ip := func(args ...string) string {
		var stderr strings.Builder
		cmd := exec.Command("ip", append([]string{"-n", ns}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ip %v in %s: %v\n%s%s", args, ns, err, out, stderr.String())
		}
		return string(out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := ip("-6", "-o", "addr", "show", "dev", dev, "scope", "link")
		if strings.Contains(out, "fe80:") && !strings.Contains(out, "tentative") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no link-local address on %s after 10s:\n%s", ns, dev, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lines []string
	for _, args := range [][]string{
		{"-4", "rule"}, {"-6", "rule"},
		{"-4", "route", "show", "table", "all"}, {"-6", "route", "show", "table", "all"},
		{"-o", "addr", "show", "dev", dev}, {"-o", "link", "show"},
	} {
		for _, l := range strings.Split(strings.TrimSpace(ip(args...)), "\n") {
			if args[0] == "-o" && args[1] == "link" {
				// The names only: counters and flags (PROMISC) may differ.
				if f := strings.Fields(l); len(f) > 1 {
					l = f[1]
				}
			}
			if args[0] == "-o" && args[1] == "addr" {
				l = strings.Join(strings.Fields(strings.Split(l, "\\")[0]), " ")
			}
			lines = append(lines, strings.Join(args, " ")+": "+l)
		}
	}
	return lines
}

// flapIn takes dev of namespace ns down and up as the recover test does
// (rr.LinkFlap), from a thread of its own in ns.
func flapIn(ns, dev string) error {
	done := make(chan error)
	go func() {
		// The thread stays locked, and dies with the goroutine, in ns.
		runtime.LockOSThread()
		h, err := netns.GetFromName(ns)
		if err != nil {
			done <- err
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			done <- err
			return
		}
		f := &rr.LinkFlap{Dev: dev}
		if err := f.Down(); err != nil {
			_, uerr := f.Up()
			done <- errors.Join(err, uerr)
			return
		}
		_, err = f.Up()
		done <- err
	}()
	return <-done
}

// rulesOf are the rule lines of a hostNetState.
func rulesOf(state []string) []string {
	var out []string
	for _, l := range state {
		if strings.HasPrefix(l, "-4 rule:") || strings.HasPrefix(l, "-6 rule:") {
			out = append(out, l)
		}
	}
	return out
}
