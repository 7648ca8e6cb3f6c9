package l2tp_test

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tunbench/tunbench/internal/method/l2tp"
	"github.com/tunbench/tunbench/internal/wire"
)

// frame builds an underlay frame a sends: outer IPv4, then UDP 1701 or IP
// protocol 115, the L2TPv3 header with the given cookie, and an Ethernet
// frame carrying an ICMP echo between the overlay addresses.
func frame(t *testing.T, udp bool, cookie []byte) []byte {
	t.Helper()
	inner := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	err := gopacket.SerializeLayers(inner, opts,
		&layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.IP{198, 19, 0, 1}, DstIP: net.IP{198, 19, 0, 2}},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)}, gopacket.Payload("ping"))
	if err != nil {
		t.Fatal(err)
	}
	var hdr []byte
	if udp {
		hdr = []byte{0x00, 0x03, 0x00, 0x00} // T clear, version 3
	}
	hdr = append(hdr, 0x00, 0x00, 0x7a, 0x11) // session 31249
	hdr = append(append(hdr, cookie...), inner.Bytes()...)
	outer := []gopacket.SerializableLayer{&layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocol(l2tp.ProtoL2TP), SrcIP: net.IP{198, 18, 0, 1}, DstIP: net.IP{198, 18, 0, 2}}
	outer = append(outer, ip)
	if udp {
		ip.Protocol = layers.IPProtocolUDP
		u := &layers.UDP{SrcPort: l2tp.Port, DstPort: l2tp.Port}
		_ = u.SetNetworkLayerForChecksum(ip)
		outer = append(outer, u)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, opts, append(outer, gopacket.Payload(hdr))...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestL2TPv3Decode: the decoders the family registers with internal/wire
// recognise L2TPv3 data messages over UDP and over IP, with each cookie
// length, and find the Ethernet frame behind the header.
func TestL2TPv3Decode(t *testing.T) {
	for _, tt := range []struct {
		name   string
		udp    bool
		cookie []byte
	}{
		{"udp", true, nil},
		{"ip", false, nil},
		{"udp-cookie4", true, []byte("tunb")},
		{"ip-cookie8", false, []byte("tunbench")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := wire.Decode(frame(t, tt.udp, tt.cookie))
			if err != nil {
				t.Fatal(err)
			}
			session, n, ok := l2tp.Session(f)
			switch {
			case !ok || f.Encap != l2tp.EncapL2TPv3:
				t.Fatalf("not recognised: %s", f)
			case session != 31249 || n != len(tt.cookie):
				t.Errorf("session %d, cookie %d bytes; want 31249 and %d", session, n, len(tt.cookie))
			case f.Inner == nil || !f.Inner.Ethernet || f.Inner.Src.String() != "198.19.0.1" || f.Inner.Proto != wire.ProtoICMP:
				t.Errorf("inner %+v, want the Ethernet frame of the echo from 198.19.0.1", f.Inner)
			}
		})
	}
}
