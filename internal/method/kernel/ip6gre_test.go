package kernel_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabIP6GRE carries IPv4 and IPv6 over GRE on the IPv6 underlay
// (kernel lab: the host lacks CONFIG_IPV6_GRE): next header 47 right in the
// outer header, no key.
func TestLabIP6GRE(t *testing.T) {
	for _, family := range (kernel.IP6GRE{}).Families() {
		t.Run(family, func(t *testing.T) {
			methodtest.LabTunnel(t, kernel.IP6GRE{}, family, nil, methodtest.TunnelWire{
				Underlay: method.IPv6,
				Proto:    wire.ProtoGRE,
				Check:    methodtest.CheckGRE(0, methodtest.L3Protocols...),
			})
			t.Run("tunnels3", func(t *testing.T) { labTunnels(t, kernel.IP6GRE{}, family, nil) })
		})
	}
}

// TestLabIP6GREThroughAgents is TestLabIP6GRE between two remote
// endpoints served by agents in their own namespaces, as over SSH: the
// raw RTM_NEWLINK that creates the device is sent by the agent on its
// host (op kernel.add-ip6gre), and nothing is left on either host.
func TestLabIP6GREThroughAgents(t *testing.T) {
	methodtest.AgentTunnel(t, kernel.IP6GRE{}, method.IPv4, nil, methodtest.TunnelWire{
		Underlay: method.IPv6,
		Proto:    wire.ProtoGRE,
		Check:    methodtest.CheckGRE(0, methodtest.L3Protocols...),
	})
}
