package method_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/wire"
)

// l3Protocols are the GRE protocol types of a layer-3 GRE tunnel: besides the
// measured family it carries the kernel's IPv6 link-local traffic.
var l3Protocols = []uint16{wire.EtherTypeIPv4, wire.EtherTypeIPv6}

// checkGRE checks a GRE header: key (0 for none), payload protocol (one of
// protocols), and no IPv6 extension header (no encapsulation limit option)
// in front of it.
func checkGRE(key uint32, protocols ...uint16) func(wire.Frame) string {
	return func(f wire.Frame) string {
		g := f.GRE
		switch {
		case g == nil:
			return "want a GRE header"
		case g.ChecksumPresent || g.SeqPresent:
			return "want no GRE checksum or sequence number"
		case key == 0 && g.KeyPresent:
			return "want no GRE key"
		case key != 0 && (!g.KeyPresent || g.Key != key):
			return fmt.Sprintf("want GRE key %d", key)
		case !slices.Contains(protocols, g.Protocol):
			return fmt.Sprintf("GRE protocol %#04x, want one of %#04x", g.Protocol, protocols)
		case len(f.Ext) > 0:
			return fmt.Sprintf("IPv6 extension headers %v, want none (encaplimit none)", f.Ext)
		case f.Inner == nil || f.Inner.Ethernet != (g.Protocol == wire.EtherTypeTEB):
			return "inner packet missing or of the wrong layer"
		}
		return ""
	}
}

// TestLabGRE carries IPv4 and IPv6 over GRE on the IPv4 underlay (kernel
// lab: the host lacks CONFIG_NET_IPGRE): IP protocol 47, no key.
func TestLabGRE(t *testing.T) {
	for _, family := range (method.GRE{}).Families() {
		t.Run(family, func(t *testing.T) {
			labTunnel(t, method.GRE{}, family, nil, tunnelWire{
				underlay: method.IPv4,
				proto:    wire.ProtoGRE,
				check:    checkGRE(0, l3Protocols...),
			})
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
			labTunnel(t, method.Gretap{}, tt.family, tt.opts, tunnelWire{
				underlay: tt.family,
				proto:    wire.ProtoGRE,
				check:    checkGRE(tt.key, wire.EtherTypeTEB),
			})
		})
	}
}
