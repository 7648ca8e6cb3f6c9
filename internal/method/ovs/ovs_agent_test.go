package ovs_test

import (
	"context"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/ovs"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
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
