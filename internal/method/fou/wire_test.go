package fou_test

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tunbench/tunbench/internal/method/fou"
	"github.com/tunbench/tunbench/internal/wire"
)

// otherPort is the port the tests use besides the default one.
const otherPort = 6635

func init() { wire.RegisterUDP(otherPort, fou.Decode) }

func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// packet is an IPv4 or IPv6 packet from src to dst carrying payload
// with IP protocol proto.
func packet(t *testing.T, src, dst string, proto layers.IPProtocol, payload []byte) []byte {
	s, d := net.ParseIP(src), net.ParseIP(dst)
	if s.To4() != nil {
		return serialize(t, &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: s.To4(), DstIP: d.To4()}, gopacket.Payload(payload))
	}
	return serialize(t, &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: s, DstIP: d}, gopacket.Payload(payload))
}

// underlay is an Ethernet frame with payload in UDP to port, between the
// underlay addresses of the family of the inner packet's peers.
func underlay(t *testing.T, v6 bool, port uint16, payload []byte) []byte {
	src, dst, et := "198.18.0.1", "198.18.0.2", layers.EthernetTypeIPv4
	if v6 {
		src, dst, et = "2001:2::1", "2001:2::2", layers.EthernetTypeIPv6
	}
	udp := serialize(t, &layers.UDP{SrcPort: 40000, DstPort: layers.UDPPort(port), Length: uint16(8 + len(payload))}, gopacket.Payload(payload))
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: et}
	return serialize(t, eth, gopacket.Payload(packet(t, src, dst, layers.IPProtocolUDP, udp)))
}

// TestDecode: the decoder fou registers tells FOU (bare IP, bare GRE)
// from GUE (version 0 header with the inner protocol) and decodes the
// inner packet, over both underlay families, on the default port and on
// one registered by hand.
func TestDecode(t *testing.T) {
	echo4 := []byte{8, 0, 0, 0, 0, 1, 0, 1}
	in4 := packet(t, "198.19.0.1", "198.19.0.2", layers.IPProtocolICMPv4, echo4)
	in6 := packet(t, "2001:2:0:1::1", "2001:2:0:1::2", layers.IPProtocolICMPv6, []byte{128, 0, 0, 0, 0, 1, 0, 1})
	gre := func(et uint16, in []byte) []byte { return append([]byte{0, 0, byte(et >> 8), byte(et)}, in...) }
	gue := func(proto byte, in []byte) []byte { return append([]byte{0, proto, 0, 0}, in...) }
	for _, tt := range []struct {
		name     string
		v6       bool
		port     uint16
		payload  []byte
		encap    string
		gueProto uint8
		greProto uint16
		inner    string
	}{
		{"fou-ipip", false, fou.DefaultPort, in4, fou.EncapFOU, 0, 0, "198.19.0.1"},
		{"fou-gre", false, fou.DefaultPort, gre(wire.EtherTypeIPv4, in4), fou.EncapFOU, 0, wire.EtherTypeIPv4, "198.19.0.1"},
		{"fou-ip6ip6", true, fou.DefaultPort, in6, fou.EncapFOU, 0, 0, "2001:2:0:1::1"},
		{"fou-ip6gre-ipv4", true, otherPort, gre(wire.EtherTypeIPv4, in4), fou.EncapFOU, 0, wire.EtherTypeIPv4, "198.19.0.1"},
		{"gue-ipip", false, fou.DefaultPort, gue(4, in4), fou.EncapGUE, 4, 0, "198.19.0.1"},
		{"gue-gre", false, otherPort, gue(47, gre(wire.EtherTypeIPv6, in6)), fou.EncapGUE, 47, wire.EtherTypeIPv6, "2001:2:0:1::1"},
		{"gue-ip6ip6", true, fou.DefaultPort, gue(41, in6), fou.EncapGUE, 41, 0, "2001:2:0:1::1"},
		{"gue-ip6gre", true, fou.DefaultPort, gue(47, gre(wire.EtherTypeIPv4, in4)), fou.EncapGUE, 47, wire.EtherTypeIPv4, "198.19.0.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := wire.Decode(underlay(t, tt.v6, tt.port, tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if f.Encap != tt.encap {
				t.Errorf("%s: encap %q, want %q", f, f.Encap, tt.encap)
			}
			proto, isGUE := fou.GUEProto(f)
			if isGUE != (tt.encap == fou.EncapGUE) || proto != tt.gueProto {
				t.Errorf("%s: GUE proto %d (%v), want %d", f, proto, isGUE, tt.gueProto)
			}
			if (f.GRE != nil) != (tt.greProto != 0) || (f.GRE != nil && f.GRE.Protocol != tt.greProto) {
				t.Errorf("%s: GRE %+v, want protocol %#04x", f, f.GRE, tt.greProto)
			}
			if f.Inner == nil || f.Inner.Src.String() != tt.inner {
				t.Errorf("%s: inner %+v, want from %s", f, f.Inner, tt.inner)
			}
		})
	}
	// A GUE version 1 packet (direct IP) reads as FOU: the same bytes.
	// Version 2 and 3 do not exist.
	if _, err := wire.Decode(underlay(t, false, fou.DefaultPort, []byte{0x80, 0, 0, 0, 1, 2, 3, 4})); err == nil {
		t.Error("a GUE version 2 header decoded without error")
	}
}
