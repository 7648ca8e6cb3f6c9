package kernel_test

import (
	"fmt"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabGeneve carries traffic over Geneve (the host kernel lacks
// CONFIG_GENEVE: it runs in the kernel lab) and checks the wire format:
// UDP to 6081, the VNI, Ethernet inside.
func TestLabGeneve(t *testing.T) {
	for _, tt := range []struct {
		family string
		opts   map[string]string
		vni    uint32
	}{
		{method.IPv4, nil, 42},
		{method.IPv6, map[string]string{"vni": "4242"}, 4242},
	} {
		t.Run(tt.family, func(t *testing.T) {
			methodtest.LabTunnel(t, kernel.Geneve{}, tt.family, tt.opts, methodtest.TunnelWire{
				Underlay: tt.family,
				Proto:    wire.ProtoUDP,
				Check: func(f wire.Frame) string {
					switch {
					case f.DstPort != method.GenevePort || f.Encap != wire.EncapGeneve:
						return fmt.Sprintf("want Geneve on UDP port %d", method.GenevePort)
					case f.VNI != tt.vni:
						return fmt.Sprintf("VNI %d, want %d", f.VNI, tt.vni)
					case f.Inner == nil || !f.Inner.Ethernet:
						return "want an inner Ethernet frame"
					}
					return ""
				},
			})
		})
	}
}
