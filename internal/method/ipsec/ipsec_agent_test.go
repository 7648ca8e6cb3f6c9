package ipsec_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
