package kernel_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabIPIP carries IPv4 in IPv4 (kernel lab: the host lacks
// CONFIG_NET_IPIP): IP protocol 4 with the overlay packet right behind.
func TestLabIPIP(t *testing.T) {
	methodtest.LabTunnel(t, kernel.IPIP{}, method.IPv4, nil, methodtest.TunnelWire{
		Underlay: method.IPv4,
		Proto:    wire.ProtoIPIP,
		Check: func(f wire.Frame) string {
			if f.Encap != wire.EncapIP4 || f.Inner == nil || f.Inner.Family != wire.IPv4 {
				return "want an IPv4 packet right behind the outer header"
			}
			return ""
		},
	})
	t.Run("tunnels3", func(t *testing.T) { labTunnels(t, kernel.IPIP{}, method.IPv4, nil) })
}
