package kernel_test

import (
	"fmt"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabIP6IP6 carries IPv6 in IPv6 (kernel lab: the host lacks
// CONFIG_IPV6_TUNNEL): next header 41 right in the outer header, no
// destination options header with an encapsulation limit.
func TestLabIP6IP6(t *testing.T) {
	methodtest.LabTunnel(t, kernel.IP6IP6{}, method.IPv6, nil, methodtest.TunnelWire{
		Underlay: method.IPv6,
		Proto:    wire.ProtoIPv6,
		Check: func(f wire.Frame) string {
			switch {
			case len(f.Ext) > 0 || f.HasEncapLimit:
				return fmt.Sprintf("IPv6 extension headers %v, want none (encaplimit none)", f.Ext)
			case f.Encap != wire.EncapIP6 || f.Inner == nil || f.Inner.Family != wire.IPv6:
				return "want an IPv6 packet right behind the outer header"
			}
			return ""
		},
	})
	t.Run("tunnels3", func(t *testing.T) { labTunnels(t, kernel.IP6IP6{}, method.IPv6, nil) })
}
