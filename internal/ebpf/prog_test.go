package ebpf

import (
	"bytes"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tunbench/tunbench/internal/wire"
)

// tc verdicts (linux/pkt_cls.h).
const (
	actOK   = 0
	actShot = 2
	// actUnspec is TC_ACT_UNSPEC (-1) as BPF_PROG_TEST_RUN returns it:
	// not the tunnel's packet, the next tc filter decides.
	actUnspec = 1<<32 - 1
)

var (
	srcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xa}
	dstMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xb}
	under4 = [2]netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")}
	under6 = [2]netip.Addr{netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")}
	inner4 = [2]netip.Addr{netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2")}
	inner6 = [2]netip.Addr{netip.MustParseAddr("2001:2:0:1::1"), netip.MustParseAddr("2001:2:0:1::2")}
)

// loadForTest loads the programs (nothing attached) or skips t with the
// reason the kernel or the privileges give.
func loadForTest(t *testing.T) *Objects {
	t.Helper()
	if err := Probe(); err != nil {
		t.Skipf("cannot load the data path here: needs %v", err)
	}
	o, err := Load(Config{MaxRules: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// packet serializes an Ethernet frame around ls, with lengths and
// checksums computed.
func packet(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	for _, l := range ls {
		if n, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			for _, nl := range ls {
				if net, ok := nl.(gopacket.NetworkLayer); ok {
					_ = n.SetNetworkLayerForChecksum(net)
				}
			}
		}
	}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func eth(typ layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: typ}
}

func ip4(src, dst netip.Addr, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: proto,
		SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func ip6(src, dst netip.Addr, next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: next, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func tcp4(t testing.TB, dst netip.Addr, payload int) []byte {
	return packet(t, eth(layers.EthernetTypeIPv4), ip4(inner4[0], dst, layers.IPProtocolTCP),
		&layers.TCP{SrcPort: 40000, DstPort: 5201, Seq: 1, ACK: true, Window: 512}, gopacket.Payload(bytes.Repeat([]byte{'t'}, payload)))
}

func udp4(t testing.TB, dst netip.Addr) []byte {
	return packet(t, eth(layers.EthernetTypeIPv4), ip4(inner4[0], dst, layers.IPProtocolUDP),
		&layers.UDP{SrcPort: 40001, DstPort: 5001}, gopacket.Payload([]byte("hello over udp")))
}

func tcp6(t testing.TB, dst netip.Addr) []byte {
	return packet(t, eth(layers.EthernetTypeIPv6), ip6(inner6[0], dst, layers.IPProtocolTCP),
		&layers.TCP{SrcPort: 40002, DstPort: 5201, Seq: 1, ACK: true, Window: 512}, gopacket.Payload(bytes.Repeat([]byte{'6'}, 100)))
}

// run runs prog once on data and returns the verdict and the packet.
func run(t *testing.T, prog *ebpf.Program, data []byte) (uint32, []byte) {
	t.Helper()
	out := make([]byte, len(data)+256)
	opts := &ebpf.RunOptions{Data: data, DataOut: out}
	ret, err := prog.Run(opts)
	if err != nil {
		t.Fatalf("BPF_PROG_TEST_RUN: %v", err)
	}
	return ret, opts.DataOut
}

func mustStats(t *testing.T, tb *Table) *Stats {
	t.Helper()
	s, err := tb.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ruleCounters(t *testing.T, tb *Table, id uint32) Counters {
	t.Helper()
	for _, r := range mustStats(t, tb).Rules {
		if r.ID == id {
			return r.Counters
		}
	}
	t.Fatalf("no rule %d", id)
	return Counters{}
}

func decapCounters(t *testing.T, tb *Table, id uint32) Counters {
	t.Helper()
	for _, d := range mustStats(t, tb).Decaps {
		if d.ID == id {
			return d.Counters
		}
	}
	t.Fatalf("no decap entry %d", id)
	return Counters{}
}

// TestProgEncapDecap encapsulates crafted IPv4 TCP, IPv4 UDP and IPv6 TCP
// packets with each encapsulation (BPF_PROG_TEST_RUN), checks the outer
// headers with the wire decoder, decapsulates the result with the ingress
// program and wants the original packet back; the rule and decap
// counters must have seen it.
func TestProgEncapDecap(t *testing.T) {
	o := loadForTest(t)
	tb := o.Table()
	type tc struct {
		name   string
		rule   Rule
		pkt    func(testing.TB, netip.Addr) []byte
		dst    netip.Addr
		family string // outer
		encap  string
		proto  uint8
	}
	tcpv4 := func(t testing.TB, d netip.Addr) []byte { return tcp4(t, d, 1000) }
	tests := []tc{
		{"geneve/ipv4-tcp", Rule{Encap: Geneve, VNI: 42}, tcpv4, inner4[1], wire.IPv4, wire.EncapGeneve, wire.ProtoUDP},
		{"geneve/ipv4-udp", Rule{Encap: Geneve, VNI: 42}, udp4, inner4[1], wire.IPv4, wire.EncapGeneve, wire.ProtoUDP},
		{"geneve/ipv6-tcp", Rule{Encap: Geneve, VNI: 42}, tcp6, inner6[1], wire.IPv6, wire.EncapGeneve, wire.ProtoUDP},
		{"vxlan/ipv4-tcp", Rule{Encap: VXLAN, VNI: 7}, tcpv4, inner4[1], wire.IPv4, wire.EncapVXLAN, wire.ProtoUDP},
		{"vxlan/ipv4-udp", Rule{Encap: VXLAN, VNI: 7}, udp4, inner4[1], wire.IPv4, wire.EncapVXLAN, wire.ProtoUDP},
		{"vxlan/ipv6-tcp", Rule{Encap: VXLAN, VNI: 7}, tcp6, inner6[1], wire.IPv6, wire.EncapVXLAN, wire.ProtoUDP},
		{"gre/ipv4-tcp", Rule{Encap: GRE, VNI: 99, GREKey: true}, tcpv4, inner4[1], wire.IPv4, wire.EncapGRE, wire.ProtoGRE},
		{"gre/ipv4-udp", Rule{Encap: GRE}, udp4, inner4[1], wire.IPv4, wire.EncapGRE, wire.ProtoGRE},
		{"gre/ipv6-tcp-over-ipv4", Rule{Encap: GRE}, tcp6, inner6[1], wire.IPv4, wire.EncapGRE, wire.ProtoGRE},
		{"ipip/ipv4-tcp", Rule{Encap: IPIP}, tcpv4, inner4[1], wire.IPv4, wire.EncapIP4, wire.ProtoIPIP},
		{"ipip/ipv4-udp", Rule{Encap: IPIP}, udp4, inner4[1], wire.IPv4, wire.EncapIP4, wire.ProtoIPIP},
		{"ipip/ipv6-tcp-over-ipv4", Rule{Encap: IPIP}, tcp6, inner6[1], wire.IPv4, wire.EncapIP6, 41},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dst.Is6() != (tt.family == wire.IPv6) {
				if err := ProbeFamilyChange(); err != nil {
					t.Skipf("decapsulating across families needs %v", err)
				}
			}
			r := tt.rule
			r.ID = uint32(100 + i)
			r.Dst = netip.PrefixFrom(tt.dst, tt.dst.BitLen())
			r.Local, r.Remote = under4[0], under4[1]
			if tt.family == wire.IPv6 {
				r.Local, r.Remote = under6[0], under6[1]
			}
			if err := tb.PutRules([]Rule{r}); err != nil {
				t.Fatal(err)
			}
			if err := tb.PutDecaps([]Decap{{ID: r.ID, Encap: r.Encap, VNI: map[bool]uint32{true: r.VNI}[r.Encap != GRE || r.GREKey]}}); err != nil {
				t.Fatal(err)
			}
			in := tt.pkt(t, tt.dst)
			ret, out := run(t, o.Egress(), in)
			if ret != actOK {
				t.Fatalf("egress verdict %d, want TC_ACT_OK", ret)
			}
			f, err := wire.Decode(out)
			if err != nil {
				t.Fatalf("decode encapsulated packet: %v", err)
			}
			innerLen := len(in) - 14
			wantOverhead := r.Encap.Overhead(tt.family, r.GREKey)
			switch {
			case f.Family != tt.family || f.Src != r.Local || f.Dst != r.Remote || f.Proto != tt.proto:
				t.Errorf("outer %s %s > %s proto %d, want %s %s > %s proto %d", f.Family, f.Src, f.Dst, f.Proto, tt.family, r.Local, r.Remote, tt.proto)
			case f.Encap != tt.encap:
				t.Errorf("encap %q, want %q", f.Encap, tt.encap)
			case f.IPLen != innerLen+wantOverhead || len(out) != len(in)+wantOverhead:
				t.Errorf("outer IP length %d (frame %d), want %d", f.IPLen, len(out), innerLen+wantOverhead)
			case f.Inner == nil || f.Inner.Dst != tt.dst:
				t.Errorf("inner packet %+v, want one to %s", f.Inner, tt.dst)
			case f.Fragment:
				t.Error("outer packet is a fragment")
			}
			if (r.Encap == Geneve || r.Encap == VXLAN) && (f.VNI != r.VNI || f.SrcPort < 49152) {
				t.Errorf("VNI %d source port %d, want VNI %d and a port from the flow hash", f.VNI, f.SrcPort, r.VNI)
			}
			if r.Encap == GRE && (f.GRE == nil || f.GRE.KeyPresent != r.GREKey || f.GRE.Key != map[bool]uint32{true: r.VNI}[r.GREKey]) {
				t.Errorf("GRE header %+v, want key %v %d", f.GRE, r.GREKey, r.VNI)
			}
			if c := ruleCounters(t, tb, r.ID); c.Packets != 1 || c.Bytes != uint64(innerLen) {
				t.Errorf("rule counters %s, want 1 packet of %d bytes", c, innerLen)
			}

			ret, back := run(t, o.Ingress(), out)
			if ret != actOK {
				t.Fatalf("ingress verdict %d, want TC_ACT_OK", ret)
			}
			if !bytes.Equal(back, in) {
				t.Errorf("decapsulated packet differs from the original:\n got %x\nwant %x", back, in)
			}
			if c := decapCounters(t, tb, r.ID); c.Packets != 1 || c.Bytes != uint64(innerLen) {
				t.Errorf("decap counters %s, want 1 packet of %d bytes", c, innerLen)
			}
			if err := tb.DeleteRule(r.Dst); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// vxlanFrame is a VXLAN packet from under4[1] to under4[0] on UDP 4789 as
// another VXLAN endpoint (the host's own kernel device) sends it: VNI vni,
// the I flag as given, an inner Ethernet frame with an IPv4 UDP packet.
func vxlanFrame(t testing.TB, vni uint32, iFlag bool) []byte {
	return packet(t, eth(layers.EthernetTypeIPv4), ip4(under4[1], under4[0], layers.IPProtocolUDP),
		&layers.UDP{SrcPort: 50000, DstPort: VXLANPort}, &layers.VXLAN{ValidIDFlag: iFlag, VNI: vni},
		&layers.Ethernet{SrcMAC: InnerSrcMAC, DstMAC: InnerMAC, EthernetType: layers.EthernetTypeIPv4},
		ip4(inner4[0], inner4[1], layers.IPProtocolUDP), &layers.UDP{SrcPort: 40001, DstPort: 5001},
		gopacket.Payload([]byte("the host's own overlay")))
}

// greFrame is a GRE packet from under4[1] to under4[0] carrying an IPv4
// UDP packet.
func greFrame(t testing.TB, g *layers.GRE) []byte {
	g.Protocol = layers.EthernetTypeIPv4
	return packet(t, eth(layers.EthernetTypeIPv4), ip4(under4[1], under4[0], layers.IPProtocolGRE), g,
		ip4(inner4[0], inner4[1], layers.IPProtocolUDP), &layers.UDP{SrcPort: 40001, DstPort: 5001},
		gopacket.Payload([]byte("the host's own GRE")))
}

// TestProgDrops feeds packets the programs must refuse or leave alone:
// only tunbench's own packets (to a rule's destination, or with a VNI or
// key that has a decap entry) are ever dropped; the host's own tunnel
// packets on the same port or protocol go on unchanged.
func TestProgDrops(t *testing.T) {
	o := loadForTest(t)
	tb := o.Table()
	rule := Rule{ID: 1, Dst: netip.MustParsePrefix("198.19.0.2/32"), Encap: VXLAN, VNI: 42, Local: under4[0], Remote: under4[1]}
	if err := tb.PutRules([]Rule{rule}); err != nil {
		t.Fatal(err)
	}
	if err := tb.PutDecaps([]Decap{{ID: 1, Encap: VXLAN, VNI: 42}, {ID: 2, Encap: GRE, VNI: 5}}); err != nil {
		t.Fatal(err)
	}
	drops := func() []uint64 { return mustStats(t, tb).Drops }
	notOurs := func() uint64 { return mustStats(t, tb).NotOurs }
	noDrops := func(t *testing.T) {
		t.Helper()
		s := mustStats(t, tb)
		for _, d := range s.Decaps {
			if d.Packets != 0 || slices.ContainsFunc(d.Drops, func(n uint64) bool { return n != 0 }) {
				t.Errorf("decap entry %d counted %s", d.ID, d.Counters)
			}
		}
		if slices.ContainsFunc(s.Drops, func(n uint64) bool { return n != 0 }) {
			t.Errorf("drops no rule owns: %s", Counters{Drops: s.Drops}.DropString())
		}
	}

	t.Run("non-matching passes untouched", func(t *testing.T) {
		n0 := notOurs()
		in := tcp4(t, netip.MustParseAddr("198.19.0.99"), 200)
		ret, out := run(t, o.Egress(), in)
		if ret != actUnspec || !bytes.Equal(out, in) {
			t.Errorf("egress verdict %d, changed %v; want TC_ACT_UNSPEC (on to the next filter) and the packet untouched", ret, !bytes.Equal(out, in))
		}
		ret, out = run(t, o.Ingress(), in)
		if ret != actUnspec || !bytes.Equal(out, in) {
			t.Errorf("ingress verdict %d, changed %v; want TC_ACT_UNSPEC (on to the next filter) and the packet untouched", ret, !bytes.Equal(out, in))
		}
		other := packet(t, eth(layers.EthernetTypeIPv4), ip4(under4[1], under4[0], layers.IPProtocolUDP),
			&layers.UDP{SrcPort: 5000, DstPort: 4790}, gopacket.Payload(make([]byte, 64)))
		if ret, out = run(t, o.Ingress(), other); ret != actUnspec || !bytes.Equal(out, other) {
			t.Errorf("ingress of UDP to port 4790: verdict %d, changed %v; want TC_ACT_UNSPEC and it untouched", ret, !bytes.Equal(out, other))
		}
		if c := ruleCounters(t, tb, 1); c.Packets != 0 {
			t.Errorf("rule counted %s for packets it does not match", c)
		}
		if n := notOurs() - n0; n != 0 {
			t.Errorf("not-ours counter rose by %d for packets that are no tunnel packets at all", n)
		}
		noDrops(t)
	})

	// The host's own overlay on tunbench's port or protocol: VXLAN on
	// 4789 with a VNI tunbench has no decap entry for, or with a header
	// tunbench never sends, and GRE with another key, without one, or of
	// version 1 (PPTP). Each goes on unchanged and counts as not ours.
	t.Run("not ours passes untouched", func(t *testing.T) {
		full := vxlanFrame(t, 4242, true)
		for _, tt := range []struct {
			name string
			pkt  []byte
		}{
			{"vxlan VNI 4242", full},
			{"vxlan VNI 43 from tunbench's own egress", func() []byte {
				r43 := rule
				r43.VNI = 43
				if err := tb.PutRules([]Rule{r43}); err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := tb.PutRules([]Rule{rule}); err != nil {
						t.Fatal(err)
					}
				}()
				_, enc := run(t, o.Egress(), tcp4(t, inner4[1], 100))
				return enc
			}()},
			{"vxlan VNI 42 without the I flag", vxlanFrame(t, 42, false)},
			// Cut inside the VXLAN header (14 + 20 + 8 + 4 bytes): no VNI
			// to tell whose it is.
			{"vxlan header cut", bytes.Clone(full[:14+20+8+4])},
			{"gre key 6", greFrame(t, &layers.GRE{KeyPresent: true, Key: 6})},
			{"gre without key", greFrame(t, &layers.GRE{})},
			{"gre version 1 (pptp)", greFrame(t, &layers.GRE{KeyPresent: true, Key: 5, Version: 1})},
		} {
			t.Run(tt.name, func(t *testing.T) {
				n0 := notOurs()
				in := bytes.Clone(tt.pkt)
				ret, out := run(t, o.Ingress(), in)
				if ret != actUnspec || !bytes.Equal(out, tt.pkt) {
					t.Errorf("ingress verdict %d, changed %v; want TC_ACT_UNSPEC (on to the host's next filter) and the packet untouched", ret, !bytes.Equal(out, tt.pkt))
				}
				if n := notOurs() - n0; n != 1 {
					t.Errorf("not-ours counter rose by %d, want 1", n)
				}
				noDrops(t)
			})
		}
	})

	// A packet that matched tunbench's decap entry (VXLAN VNI 42) and is
	// broken is tunbench's: dropped and counted on the entry.
	t.Run("truncated", func(t *testing.T) {
		_, enc := run(t, o.Egress(), tcp4(t, inner4[1], 100))
		n0, d0 := notOurs(), decapCounters(t, tb, 1).Drops[0]
		// Cut inside the inner Ethernet header: 14 + 20 + 8 + 8 + 6 bytes.
		cut := bytes.Clone(enc[:14+20+8+8+6])
		if ret, _ := run(t, o.Ingress(), cut); ret != actShot {
			t.Errorf("ingress verdict %d for VNI 42 cut inside the inner Ethernet header, want TC_ACT_SHOT", ret)
		}
		// The inner packet claims more bytes than it has.
		short := bytes.Clone(enc[:len(enc)-40])
		if ret, _ := run(t, o.Ingress(), short); ret != actShot {
			t.Errorf("ingress verdict %d for a short inner packet, want TC_ACT_SHOT", ret)
		}
		if c := decapCounters(t, tb, 1); c.Drops[0] != d0+2 {
			t.Errorf("decap counters %s, want %d truncated drops", c, d0+2)
		}
		if n := notOurs() - n0; n != 0 {
			t.Errorf("not-ours counter rose by %d for tunbench's own broken packets", n)
		}
		// Egress: a packet to the rule's destination shorter than its IP
		// length. (A frame cut inside its IP header cannot be test-run:
		// BPF_PROG_TEST_RUN refuses it with EINVAL.)
		full := tcp4(t, inner4[1], 300)
		if ret, _ := run(t, o.Egress(), full[:len(full)-100]); ret != actShot {
			t.Errorf("egress verdict %d for a packet shorter than its IP length, want TC_ACT_SHOT", ret)
		}
		if c := ruleCounters(t, tb, 1); c.Drops[0] != 1 {
			t.Errorf("rule counters %s, want 1 truncated drop", c)
		}
		if d := drops(); slices.ContainsFunc(d, func(n uint64) bool { return n != 0 }) {
			t.Errorf("drops no rule owns: %s", Counters{Drops: d}.DropString())
		}
	})

	// VNI 42 with an inner frame that is not IP (ARP): tunbench's, and
	// not something it carries.
	t.Run("bad inner header", func(t *testing.T) {
		arp := packet(t, eth(layers.EthernetTypeIPv4), ip4(under4[1], under4[0], layers.IPProtocolUDP),
			&layers.UDP{SrcPort: 50000, DstPort: VXLANPort}, &layers.VXLAN{ValidIDFlag: true, VNI: 42},
			&layers.Ethernet{SrcMAC: InnerSrcMAC, DstMAC: InnerMAC, EthernetType: layers.EthernetTypeARP},
			gopacket.Payload(make([]byte, 28)))
		b0 := decapCounters(t, tb, 1).Drops[1]
		if ret, _ := run(t, o.Ingress(), arp); ret != actShot {
			t.Errorf("ingress verdict %d for VNI 42 carrying ARP, want TC_ACT_SHOT", ret)
		}
		if c := decapCounters(t, tb, 1); c.Drops[1] != b0+1 {
			t.Errorf("decap counters %s, want %d bad-header drops", c, b0+1)
		}
	})
}
