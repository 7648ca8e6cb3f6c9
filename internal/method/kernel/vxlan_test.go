package kernel_test

import (
	"fmt"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// vxlanWire is what every frame of the kernel's vxlan device must look
// like on the underlay: UDP to port 4789, the I flag and the VNI in the
// VXLAN header, and an Ethernet frame inside.
func vxlanWire(family string, vni uint32) methodtest.TunnelWire {
	return methodtest.TunnelWire{Underlay: family, Proto: wire.ProtoUDP, Check: func(f wire.Frame) string {
		switch {
		case f.DstPort != method.VXLANPort || f.Encap != wire.EncapVXLAN:
			return fmt.Sprintf("want VXLAN on UDP port %d", method.VXLANPort)
		case f.VNI != vni:
			return fmt.Sprintf("VNI %d, want %d", f.VNI, vni)
		case len(f.Payload) < 8 || f.Payload[0] != 0x08:
			return "want the VXLAN I flag (first header byte 0x08)"
		case f.Inner == nil || !f.Inner.Ethernet:
			return "want an inner Ethernet frame"
		}
		return ""
	}}
}

// TestVXLANTunnel carries IPv4 and IPv6 over the kernel's vxlan device on
// the local testbed and checks every frame on the underlay, the overlay
// MTU (a full-size echo is exactly the underlay MTU) and the teardown.
func TestVXLANTunnel(t *testing.T) {
	for _, tt := range []struct {
		family string
		opts   map[string]string
		vni    uint32
	}{
		{method.IPv4, nil, 42},
		{method.IPv6, map[string]string{"vni": "4242"}, 4242},
	} {
		t.Run(tt.family, func(t *testing.T) {
			methodtest.LabTunnel(t, kernel.VXLAN{}, tt.family, tt.opts, vxlanWire(tt.family, tt.vni))
		})
	}
}

// TestVXLANThroughAgents is TestVXLANTunnel between two remote endpoints,
// each served by a real agent process in its own network, mount and pid
// namespaces, as over SSH (methodtest.AgentTunnel): the same wire, and
// nothing left on either host.
func TestVXLANThroughAgents(t *testing.T) {
	for _, tt := range []struct {
		family string
		opts   map[string]string
		vni    uint32
	}{
		{method.IPv4, nil, 42},
		{method.IPv6, map[string]string{"vni": "4242"}, 4242},
	} {
		t.Run(tt.family, func(t *testing.T) {
			methodtest.AgentTunnel(t, kernel.VXLAN{}, tt.family, tt.opts, vxlanWire(tt.family, tt.vni))
		})
	}
}
