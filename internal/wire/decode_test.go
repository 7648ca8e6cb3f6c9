package wire_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/wire"
)

// addrs compares netip.Addr values (cmp cannot look inside them).
var addrs = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func list(frames []wire.Frame) string {
	var b strings.Builder
	for _, f := range frames {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

func readFrames(t *testing.T, name string) []wire.Frame {
	t.Helper()
	pkts, err := wire.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// checkVXLAN asserts that a ping from a to b crossed the underlay as VXLAN
// with VNI 42 between the underlay addresses of family.
func checkVXLAN(t *testing.T, frames []wire.Frame, family string) {
	t.Helper()
	oa, ob := method.Overlay(family)
	ua, ub := localns.UnderlayA4.Addr(), localns.UnderlayB4.Addr()
	icmp := uint8(wire.ProtoICMP)
	if family == method.IPv6 {
		ua, ub = localns.UnderlayA6.Addr(), localns.UnderlayB6.Addr()
		icmp = wire.ProtoICMPv6
	}
	echo := wire.Filter(frames, func(f wire.Frame) bool {
		return f.Encap == wire.EncapVXLAN && f.Src == ua && f.Dst == ub &&
			f.Inner != nil && f.Inner.Src == oa.Addr() && f.Inner.Dst == ob.Addr()
	})
	if len(echo) < 2 {
		t.Fatalf("%d VXLAN frames from %s to %s carrying %s > %s, want the 2 echo requests; frames:\n%s",
			len(echo), ua, ub, oa.Addr(), ob.Addr(), list(frames))
	}
	for _, f := range echo {
		if f.Family != family || f.Proto != wire.ProtoUDP || f.DstPort != wire.PortVXLAN || f.VNI != 42 ||
			!f.Inner.Ethernet || f.Inner.Family != family || f.Inner.Proto != icmp {
			t.Errorf("frame %s: want %s UDP to 4789, VNI 42, inner Ethernet with %s ICMP", f, family, family)
		}
	}
	for _, f := range frames {
		if f.Encap == wire.EncapVXLAN && f.VNI != 42 {
			t.Errorf("frame %s: VNI %d, want 42", f, f.VNI)
		}
	}
}

// checkSRv6 asserts that a ping from a to b was encapsulated in IPv6 with
// an SRH holding b's SID as the only segment.
func checkSRv6(t *testing.T, frames []wire.Frame, family string) {
	t.Helper()
	oa, ob := method.Overlay(family)
	encap, icmp := wire.EncapIP4, uint8(wire.ProtoICMP)
	if family == method.IPv6 {
		encap, icmp = wire.EncapIP6, wire.ProtoICMPv6
	}
	echo := wire.Filter(frames, func(f wire.Frame) bool {
		return f.SRH != nil && f.Dst == kernel.SIDB
	})
	if len(echo) < 2 {
		t.Fatalf("%d frames with an SRH to %s, want the 2 echo requests; frames:\n%s", len(echo), kernel.SIDB, list(frames))
	}
	for _, f := range echo {
		if diff := cmp.Diff(&wire.SRH{Segments: []netip.Addr{kernel.SIDB}}, f.SRH, addrs); diff != "" {
			t.Errorf("frame %s: SRH (-want +got):\n%s", f, diff)
		}
		if f.Family != wire.IPv6 || f.Src != localns.UnderlayA6.Addr() || len(f.Ext) != 1 || f.Ext[0] != wire.ProtoRouting ||
			f.Encap != encap || f.Inner == nil || f.Inner.Src != oa.Addr() || f.Inner.Dst != ob.Addr() || f.Inner.Proto != icmp {
			t.Errorf("frame %s: want IPv6 from %s, routing header only, %s %s > %s ICMP inside",
				f, localns.UnderlayA6.Addr(), encap, oa.Addr(), ob.Addr())
		}
		// Outer IPv6 (40) + SRH with one segment (24) + inner packet.
		if f.IPLen != 40+24+ipLen(family, 84) {
			t.Errorf("frame %s: outer length %d, want %d", f, f.IPLen, 40+24+ipLen(family, 84))
		}
	}
}

// ipLen is the length of a default ping (56 data bytes) in family; the
// given IPv4 length is 20 + 8 + 56.
func ipLen(family string, v4 int) int {
	if family == method.IPv6 {
		return v4 + 20
	}
	return v4
}

func TestDecodeVXLANTestdata(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) { checkVXLAN(t, readFrames(t, "vxlan-"+family+".pcap"), family) })
	}
}

func TestDecodeSRv6Testdata(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) { checkSRv6(t, readFrames(t, "srv6-"+family+".pcap"), family) })
	}
}

// Hand-built frames for the encapsulations the host kernel cannot produce;
// the TestLab tests of each method check the kernel's real frames.

var (
	a4, b4 = netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	a6, b6 = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	i4, j4 = netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2")
	i6, j6 = netip.MustParseAddr("2001:2:0:1::1"), netip.MustParseAddr("2001:2:0:1::2")
)

func eth(etherType uint16, payload []byte) []byte {
	b := make([]byte, 14, 14+len(payload))
	copy(b, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:], etherType)
	return append(b, payload...)
}

func ip4(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(payload)))
	b[6] = 0x40 // DF
	b[8], b[9] = 64, proto
	copy(b[12:], src.AsSlice())
	copy(b[16:], dst.AsSlice())
	return append(b, payload...)
}

func ip6(src, dst netip.Addr, next uint8, payload []byte) []byte {
	b := make([]byte, 40, 40+len(payload))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6], b[7] = next, 64
	copy(b[8:], src.AsSlice())
	copy(b[24:], dst.AsSlice())
	return append(b, payload...)
}

func udp(sport, dport uint16, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	return append(b, payload...)
}

func icmpEcho() []byte { return []byte{8, 0, 0, 0, 0, 1, 0, 1} }

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func TestDecode(t *testing.T) {
	inner4 := ip4(i4, j4, wire.ProtoICMP, icmpEcho())
	inner6 := ip6(i6, j6, wire.ProtoICMPv6, icmpEcho())
	ethInner4 := eth(wire.EtherTypeIPv4, inner4)
	in4 := &wire.Inner{Family: wire.IPv4, Src: i4, Dst: j4, Proto: wire.ProtoICMP}
	in6 := &wire.Inner{Family: wire.IPv6, Src: i6, Dst: j6, Proto: wire.ProtoICMPv6}
	ethIn4 := &wire.Inner{Ethernet: true, EtherType: wire.EtherTypeIPv4, Family: wire.IPv4, Src: i4, Dst: j4, Proto: wire.ProtoICMP}
	geneve := func(vni uint32, proto uint16, payload []byte) []byte {
		h := []byte{0, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}
		binary.BigEndian.PutUint16(h[2:], proto)
		return append(h, payload...)
	}
	gre := func(key uint32, keyed bool, proto uint16, payload []byte) []byte {
		h := []byte{0, 0, 0, 0}
		if keyed {
			h[0] = 0x20
			h = binary.BigEndian.AppendUint32(h, key)
		}
		binary.BigEndian.PutUint16(h[2:], proto)
		return append(h, payload...)
	}
	// An IPv6 destination options header with the tunnel encapsulation
	// limit option (4) = 4 and a PadN, as ip6_tunnel adds by default.
	destOpts := func(next uint8) []byte { return []byte{next, 0, 4, 1, 4, 1, 1, 0} }

	tests := []struct {
		name  string
		frame []byte
		want  wire.Frame
	}{
		{
			name:  "geneve ipv4 vni 42 ethernet",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, udp(40000, wire.PortGeneve, geneve(42, wire.EtherTypeTEB, ethInner4)))),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 20 + 8 + 8 + 14 + 28, Proto: wire.ProtoUDP,
				SrcPort: 40000, DstPort: wire.PortGeneve, Payload: geneve(42, wire.EtherTypeTEB, ethInner4),
				Encap: wire.EncapGeneve, VNI: 42, Inner: ethIn4},
		},
		{
			name:  "gre ipv4 carrying ipv6",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoGRE, gre(0, false, wire.EtherTypeIPv6, inner6))),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 20 + 4 + 48, Proto: wire.ProtoGRE,
				Encap: wire.EncapGRE, GRE: &wire.GRE{Protocol: wire.EtherTypeIPv6}, Inner: in6},
		},
		{
			name:  "gretap with key (NVGRE style)",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoGRE, gre(42, true, wire.EtherTypeTEB, ethInner4))),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 20 + 8 + 14 + 28, Proto: wire.ProtoGRE,
				Encap: wire.EncapGRE, GRE: &wire.GRE{KeyPresent: true, Key: 42, Protocol: wire.EtherTypeTEB}, Inner: ethIn4},
		},
		{
			name:  "ipip",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoIPIP, inner4)),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 48, Proto: wire.ProtoIPIP,
				Encap: wire.EncapIP4, Inner: in4},
		},
		{
			name:  "ip6ip6 with encapsulation limit",
			frame: eth(wire.EtherTypeIPv6, ip6(a6, b6, wire.ProtoDestination, cat(destOpts(wire.ProtoIPv6), inner6))),
			want: wire.Frame{Family: wire.IPv6, Src: a6, Dst: b6, IPLen: 40 + 8 + 48, Ext: []uint8{wire.ProtoDestination},
				EncapLimit: 4, HasEncapLimit: true, Proto: wire.ProtoIPv6, Encap: wire.EncapIP6, Inner: in6},
		},
		{
			name:  "ipv4 in ipv6",
			frame: eth(wire.EtherTypeIPv6, ip6(a6, b6, wire.ProtoIPIP, inner4)),
			want: wire.Frame{Family: wire.IPv6, Src: a6, Dst: b6, IPLen: 40 + 28, Proto: wire.ProtoIPIP,
				Encap: wire.EncapIP4, Inner: in4},
		},
		{
			name:  "ip6gre",
			frame: eth(wire.EtherTypeIPv6, ip6(a6, b6, wire.ProtoGRE, gre(0, false, wire.EtherTypeIPv4, inner4))),
			want: wire.Frame{Family: wire.IPv6, Src: a6, Dst: b6, IPLen: 40 + 4 + 28, Proto: wire.ProtoGRE,
				Encap: wire.EncapGRE, GRE: &wire.GRE{Protocol: wire.EtherTypeIPv4}, Inner: in4},
		},
		{
			name:  "esp",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoESP, []byte{0xc0, 0, 0, 1, 0, 0, 0, 7, 0xaa, 0xbb})),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 30, Proto: wire.ProtoESP,
				Encap: wire.EncapESP, ESP: &wire.ESP{SPI: 0xc0000001, Seq: 7}},
		},
		{
			name:  "esp in udp 4500",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, udp(4500, 4500, []byte{0xc0, 0, 0, 2, 0, 0, 0, 9, 1}))),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 37, Proto: wire.ProtoUDP, SrcPort: 4500, DstPort: 4500,
				Payload: []byte{0xc0, 0, 0, 2, 0, 0, 0, 9, 1}, Encap: wire.EncapESPUDP, ESP: &wire.ESP{SPI: 0xc0000002, Seq: 9}},
		},
		{
			name:  "ike on 4500 after the non-esp marker",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, udp(4500, 4500, []byte{0, 0, 0, 0, 1, 2}))),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 34, Proto: wire.ProtoUDP, SrcPort: 4500, DstPort: 4500,
				Payload: []byte{0, 0, 0, 0, 1, 2}, Encap: wire.EncapIKE},
		},
		{
			name:  "nat-t keepalive",
			frame: eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, udp(4500, 4500, []byte{0xff}))),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 29, Proto: wire.ProtoUDP, SrcPort: 4500, DstPort: 4500,
				Payload: []byte{0xff}, Encap: wire.EncapNATKeep},
		},
		{
			name:  "srv6 two segments",
			frame: eth(wire.EtherTypeIPv6, ip6(a6, b6, wire.ProtoRouting, cat([]byte{wire.ProtoIPIP, 4, 4, 1, 1, 0, 0, 0}, b6.AsSlice(), a6.AsSlice(), inner4))),
			want: wire.Frame{Family: wire.IPv6, Src: a6, Dst: b6, IPLen: 40 + 40 + 28, Ext: []uint8{wire.ProtoRouting},
				SRH:   &wire.SRH{SegmentsLeft: 1, LastEntry: 1, Segments: []netip.Addr{b6, a6}},
				Proto: wire.ProtoIPIP, Encap: wire.EncapIP4, Inner: in4},
		},
		{
			name:  "arp",
			frame: eth(wire.EtherTypeARP, make([]byte, 28)),
			want:  wire.Frame{EtherType: wire.EtherTypeARP},
		},
		{
			name: "later ipv4 fragment is not decoded as udp",
			frame: func() []byte {
				b := eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, []byte{0x17, 0xc1, 0x17, 0xc1, 0, 0, 0, 0}))
				b[14+6], b[14+7] = 0, 10 // fragment offset 80
				return b
			}(),
			want: wire.Frame{Family: wire.IPv4, Src: a4, Dst: b4, IPLen: 28, Fragment: true, Proto: wire.ProtoUDP},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Decode(tt.frame)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tt.want.WireLen = len(tt.frame)
			if tt.want.EtherType == 0 {
				tt.want.EtherType = map[string]uint16{wire.IPv4: wire.EtherTypeIPv4, wire.IPv6: wire.EtherTypeIPv6}[tt.want.Family]
			}
			if diff := cmp.Diff(tt.want, got, addrs); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWireGuardType(t *testing.T) {
	wg := func(typ byte) []byte { return append([]byte{typ, 0, 0, 0}, make([]byte, 28)...) }
	for _, tt := range []struct {
		payload []byte
		port    uint16
		typ     uint8
		ok      bool
	}{
		{wg(1), 51820, 1, true},
		{wg(4), 51820, 4, true},
		{wg(4), 51821, 0, false},                 // another port
		{wg(5), 51820, 0, false},                 // no such type
		{[]byte{4, 1, 0, 0, 0}, 51820, 0, false}, // reserved bytes not zero
		{[]byte{4, 0}, 51820, 0, false},          // too short
	} {
		f, err := wire.Decode(eth(wire.EtherTypeIPv6, ip6(a6, b6, wire.ProtoUDP, udp(40000, 51820, tt.payload))))
		if err != nil {
			t.Fatal(err)
		}
		typ, ok := f.WireGuardType(tt.port)
		if typ != tt.typ || ok != tt.ok {
			t.Errorf("WireGuardType(%d) of payload %x = %d, %v; want %d, %v", tt.port, tt.payload[:min(len(tt.payload), 5)], typ, ok, tt.typ, tt.ok)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	full := eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, udp(1, wire.PortGeneve, []byte{0, 0, 0x65, 0x58, 0, 0, 42, 0})))
	for _, tt := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"short ethernet", []byte{1, 2, 3}, "ethernet"},
		{"short ipv6", eth(wire.EtherTypeIPv6, make([]byte, 20)), "ipv6: header truncated"},
		{"cut geneve", full[:14+20+8+4], "geneve"},
		{"srh without room", eth(wire.EtherTypeIPv6, ip6(a6, b6, wire.ProtoRouting, []byte{59, 0, 4, 0, 3, 0, 0, 0})), "srh"},
	} {
		f, err := wire.Decode(tt.frame)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Decode error %v, want one mentioning %q (frame %s)", tt.name, err, tt.want, f)
		}
	}
	// What was decoded before the fault is kept.
	f, _ := wire.Decode(full[:14+20+8+4])
	if f.Family != wire.IPv4 || f.DstPort != wire.PortGeneve || f.Encap != wire.EncapGeneve {
		t.Errorf("truncated geneve frame decoded as %s, want the outer headers kept", f)
	}
}

// TestDecodeKernelTunnels decodes frames the kernel lab captured on side
// a's underlay while the method tests pinged through each kernel tunnel
// (TUNBENCH_WIRE_SAVE; see internal/method/kerneltunnel_test.go): two
// default pings and one that fills the overlay MTU of a 1500-byte underlay.
func TestDecodeKernelTunnels(t *testing.T) {
	tests := []struct {
		file         string
		outer, inner string
		proto        uint8
		encap        string
		vni          uint32
		gre          *wire.GRE
		ethernet     bool
	}{
		{file: "geneve-ipv4.pcap", outer: wire.IPv4, inner: wire.IPv4, proto: wire.ProtoUDP, encap: wire.EncapGeneve, vni: 42, ethernet: true},
		{file: "geneve-ipv6.pcap", outer: wire.IPv6, inner: wire.IPv6, proto: wire.ProtoUDP, encap: wire.EncapGeneve, vni: 4242, ethernet: true},
		{file: "gre-ipv4.pcap", outer: wire.IPv4, inner: wire.IPv4, proto: wire.ProtoGRE, encap: wire.EncapGRE, gre: &wire.GRE{Protocol: wire.EtherTypeIPv4}},
		{file: "gre-ipv6.pcap", outer: wire.IPv4, inner: wire.IPv6, proto: wire.ProtoGRE, encap: wire.EncapGRE, gre: &wire.GRE{Protocol: wire.EtherTypeIPv6}},
		{file: "gretap-ipv4.pcap", outer: wire.IPv4, inner: wire.IPv4, proto: wire.ProtoGRE, encap: wire.EncapGRE,
			gre: &wire.GRE{KeyPresent: true, Key: 42, Protocol: wire.EtherTypeTEB}, ethernet: true},
		{file: "gretap-ipv4-key.pcap", outer: wire.IPv4, inner: wire.IPv4, proto: wire.ProtoGRE, encap: wire.EncapGRE,
			gre: &wire.GRE{KeyPresent: true, Key: 16777473, Protocol: wire.EtherTypeTEB}, ethernet: true},
		{file: "gretap-ipv6.pcap", outer: wire.IPv6, inner: wire.IPv6, proto: wire.ProtoGRE, encap: wire.EncapGRE,
			gre: &wire.GRE{KeyPresent: true, Key: 42, Protocol: wire.EtherTypeTEB}, ethernet: true},
		{file: "ipip-ipv4.pcap", outer: wire.IPv4, inner: wire.IPv4, proto: wire.ProtoIPIP, encap: wire.EncapIP4},
		{file: "ip6ip6-ipv6.pcap", outer: wire.IPv6, inner: wire.IPv6, proto: wire.ProtoIPv6, encap: wire.EncapIP6},
		{file: "ip6gre-ipv4.pcap", outer: wire.IPv6, inner: wire.IPv4, proto: wire.ProtoGRE, encap: wire.EncapGRE, gre: &wire.GRE{Protocol: wire.EtherTypeIPv4}},
		{file: "ip6gre-ipv6.pcap", outer: wire.IPv6, inner: wire.IPv6, proto: wire.ProtoGRE, encap: wire.EncapGRE, gre: &wire.GRE{Protocol: wire.EtherTypeIPv6}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			frames := readFrames(t, tt.file)
			oa, ob := method.Overlay(tt.inner)
			ua, ub := localns.UnderlayA4.Addr(), localns.UnderlayB4.Addr()
			if tt.outer == wire.IPv6 {
				ua, ub = localns.UnderlayA6.Addr(), localns.UnderlayB6.Addr()
			}
			echo := wire.Filter(frames, func(f wire.Frame) bool {
				return f.Inner != nil && f.Inner.Src == oa.Addr() && f.Inner.Dst == ob.Addr()
			})
			if len(echo) != 3 {
				t.Fatalf("%d frames carrying %s > %s, want 3 echo requests; frames:\n%s", len(echo), oa.Addr(), ob.Addr(), list(frames))
			}
			largest := 0
			for _, f := range echo {
				largest = max(largest, f.IPLen)
				if f.Family != tt.outer || f.Src != ua || f.Dst != ub || f.Proto != tt.proto || f.Encap != tt.encap ||
					f.VNI != tt.vni || len(f.Ext) != 0 || f.Fragment ||
					f.Inner.Ethernet != tt.ethernet || f.Inner.Family != tt.inner {
					t.Errorf("frame %s: want %s %s > %s proto %d %s vni %d, no extension headers, inner %s (ethernet %v)",
						f, tt.outer, ua, ub, tt.proto, tt.encap, tt.vni, tt.inner, tt.ethernet)
				}
				if diff := cmp.Diff(tt.gre, f.GRE); diff != "" {
					t.Errorf("frame %s: GRE header (-want +got):\n%s", f, diff)
				}
			}
			if largest != 1500 {
				t.Errorf("largest echo request is %d bytes, want 1500: the full-size ping must fill the underlay MTU", largest)
			}
		})
	}
}

// TestRegisterUDP: a UDP encapsulation a method family registers is
// recognised on its port, either way, and decodes its inner packet; the
// package's own ports cannot be taken over.
func TestRegisterUDP(t *testing.T) {
	const port = 45999
	registerTestUDP.Do(func() {
		wire.RegisterUDP(port, func(f *wire.Frame) error {
			f.Encap = "test-encap"
			if len(f.Payload) < 4 {
				return errors.New("test-encap: short header")
			}
			return wire.DecodeInner(f, wire.EtherTypeIPv4, f.Payload[4:])
		})
	})
	a4, b4 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	oa, ob := netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2")
	inner := ip4(oa, ob, wire.ProtoICMP, icmpEcho())
	for _, dir := range []struct{ src, dst uint16 }{{40000, port}, {port, 40000}} {
		f, err := wire.Decode(eth(wire.EtherTypeIPv4, ip4(a4, b4, wire.ProtoUDP, udp(dir.src, dir.dst, cat([]byte{1, 2, 3, 4}, inner)))))
		if err != nil {
			t.Fatal(err)
		}
		if f.Encap != "test-encap" || f.Inner == nil || f.Inner.Src != oa || f.Inner.Proto != wire.ProtoICMP {
			t.Errorf("%d>%d: %s (inner %+v)", dir.src, dir.dst, f, f.Inner)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("registering VXLAN's port did not panic")
		}
	}()
	wire.RegisterUDP(wire.PortVXLAN, func(*wire.Frame) error { return nil })
}

// registerTestUDP registers TestRegisterUDP's decoder once (-count): a
// second registration of a port panics, as it should.
var registerTestUDP sync.Once

// registerTestProto registers TestRegisterProto's decoder once (-count).
var registerTestProto sync.Once

// TestRegisterProto: an encapsulation right in IP that a method family
// registers (L2TPv3 over IP's protocol 115) gets the IP payload; the
// package's own protocols cannot be taken over.
func TestRegisterProto(t *testing.T) {
	const proto = 253 // RFC 3692 experimentation
	registerTestProto.Do(func() {
		wire.RegisterProto(proto, func(f *wire.Frame) error {
			f.Encap = "test-proto"
			return wire.DecodeInner(f, wire.EtherTypeIPv4, f.Payload[4:])
		})
	})
	a4, b4 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	oa, ob := netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2")
	f, err := wire.Decode(eth(wire.EtherTypeIPv4, ip4(a4, b4, proto, cat([]byte{1, 2, 3, 4}, ip4(oa, ob, wire.ProtoICMP, icmpEcho())))))
	if err != nil {
		t.Fatal(err)
	}
	if f.Encap != "test-proto" || f.Inner == nil || f.Inner.Src != oa || f.Inner.Proto != wire.ProtoICMP {
		t.Errorf("%s (inner %+v)", f, f.Inner)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering GRE's protocol did not panic")
		}
	}()
	wire.RegisterProto(wire.ProtoGRE, func(*wire.Frame) error { return nil })
}
