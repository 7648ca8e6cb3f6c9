package kernel_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabGRE carries IPv4 and IPv6 over GRE on the IPv4 underlay (kernel
// lab: the host lacks CONFIG_NET_IPGRE): IP protocol 47, no key.
func TestLabGRE(t *testing.T) {
	for _, family := range (kernel.GRE{}).Families() {
		t.Run(family, func(t *testing.T) {
			methodtest.LabTunnel(t, kernel.GRE{}, family, nil, methodtest.TunnelWire{
				Underlay: method.IPv4,
				Proto:    wire.ProtoGRE,
				Check:    methodtest.CheckGRE(0, methodtest.L3Protocols...),
			})
			t.Run("tunnels3", func(t *testing.T) { labTunnels(t, kernel.GRE{}, family, nil) })
		})
	}
}

// TestLabGretap carries traffic over keyed gretap (IPv4 underlay) and
// ip6gretap (IPv6 underlay): IP protocol 47, the key, Ethernet (TEB) inside.
func TestLabGretap(t *testing.T) {
	for _, tt := range []struct {
		name, family string
		opts         map[string]string
		key          uint32
	}{
		{"ipv4", method.IPv4, nil, 42},
		{"ipv6", method.IPv6, nil, 42},
		{"ipv4-key", method.IPv4, map[string]string{"key": "16777473"}, 16777473},
	} {
		t.Run(tt.name, func(t *testing.T) {
			methodtest.LabTunnel(t, kernel.Gretap{}, tt.family, tt.opts, methodtest.TunnelWire{
				Underlay: tt.family,
				Proto:    wire.ProtoGRE,
				Check:    methodtest.CheckGRE(tt.key, wire.EtherTypeTEB),
			})
			t.Run("tunnels3", func(t *testing.T) { labTunnels(t, kernel.Gretap{}, tt.family, tt.opts) })
		})
	}
}
