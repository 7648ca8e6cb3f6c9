package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Well-known UDP ports the decoder recognises.
const (
	PortVXLAN  = 4789
	PortGeneve = 6081
	PortIKE    = 500
	PortNATT   = 4500
)

// IP protocol numbers (and IPv6 next-header values) the decoder uses.
const (
	ProtoHopByHop    = 0
	ProtoICMP        = 1
	ProtoIPIP        = 4 // IPv4 inside IP
	ProtoTCP         = 6
	ProtoUDP         = 17
	ProtoIPv6        = 41 // IPv6 inside IP
	ProtoRouting     = 43
	ProtoFragment    = 44
	ProtoGRE         = 47
	ProtoESP         = 50
	ProtoAH          = 51
	ProtoICMPv6      = 58
	ProtoDestination = 60
)

// EtherTypes the decoder uses; EtherTypeTEB is Transparent Ethernet
// Bridging, the GRE (and Geneve) protocol type of an Ethernet payload.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
	EtherTypeIPv6 = 0x86dd
	EtherTypeTEB  = 0x6558
)

// Families, as the method package names them.
const (
	IPv4 = "ipv4"
	IPv6 = "ipv6"
)

// Encapsulations a Frame can carry (Frame.Encap).
const (
	EncapVXLAN   = "vxlan"   // UDP 4789, VNI in Frame.VNI, inner Ethernet
	EncapGeneve  = "geneve"  // UDP 6081, VNI in Frame.VNI
	EncapGRE     = "gre"     // IP protocol 47, header in Frame.GRE
	EncapIP4     = "ip4"     // IPv4 directly in the outer IP header (protocol 4: ipip, IPv4 in IPv6)
	EncapIP6     = "ip6"     // IPv6 directly in the outer IP header (protocol 41: ip6ip6, 6in4)
	EncapESP     = "esp"     // IP protocol 50, Frame.ESP
	EncapESPUDP  = "esp-udp" // ESP in UDP 4500 (NAT-T), Frame.ESP
	EncapIKE     = "ike"     // IKE on UDP 500, or on UDP 4500 after the non-ESP marker
	EncapNATKeep = "nat-keepalive"
)

// Frame is what one Ethernet frame of the underlay carries, decoded into
// plain facts. Fields that do not apply are zero.
type Frame struct {
	// WireLen is the frame's length on the wire when known (from the
	// capture), else the length of the decoded bytes.
	WireLen int
	// EtherType of the outer Ethernet header.
	EtherType uint16
	// Family is the outer IP family, IPv4 or IPv6; empty for non-IP
	// frames such as ARP.
	Family   string
	Src, Dst netip.Addr
	// IPLen is the outer IP packet's length as its header states it
	// (IPv6: 40 + payload length).
	IPLen int
	// Ext lists the outer IPv6 extension headers in order (ProtoHopByHop,
	// ProtoRouting, ProtoDestination, ProtoFragment).
	Ext []uint8
	// EncapLimit is the value of an IPv6 tunnel encapsulation limit option
	// (RFC 2473) in a destination options header, when HasEncapLimit.
	EncapLimit    uint8
	HasEncapLimit bool
	// SRH is the segment routing header (routing type 4), if any.
	SRH *SRH
	// Fragment is true for a fragment of the outer packet; only the first
	// fragment's transport header and encapsulation are decoded.
	Fragment bool
	// Proto is the protocol after the outer IP header and its extension
	// headers.
	Proto uint8
	// SrcPort and DstPort are set for UDP and TCP.
	SrcPort, DstPort uint16
	// Payload is the captured part of the UDP payload, or of the IP
	// payload of a protocol a method family registered (RegisterProto).
	Payload []byte
	// Encap names the encapsulation recognised (Encap* constants), or is
	// empty.
	Encap string
	// VNI is the VXLAN or Geneve network identifier.
	VNI uint32
	// GRE is the GRE header when Proto is 47.
	GRE *GRE
	// ESP is the ESP header of EncapESP and EncapESPUDP.
	ESP *ESP
	// Inner is the encapsulated packet, when the encapsulation is not
	// encrypted and enough of it was captured.
	Inner *Inner
}

// SRH is an IPv6 segment routing header (RFC 8754).
type SRH struct {
	SegmentsLeft uint8
	LastEntry    uint8
	// Segments in header order: Segments[0] is the last segment of the
	// path, the final destination.
	Segments []netip.Addr
}

// GRE is a GRE header (RFC 2784, key and sequence number from RFC 2890).
type GRE struct {
	ChecksumPresent, KeyPresent, SeqPresent bool
	Key, Seq                                uint32
	// Protocol is the payload's EtherType: EtherTypeIPv4, EtherTypeIPv6 or
	// EtherTypeTEB (Ethernet, as gretap and NVGRE carry).
	Protocol uint16
}

// ESP is the clear part of an ESP header.
type ESP struct {
	SPI, Seq uint32
}

// Inner is an encapsulated packet.
type Inner struct {
	// Ethernet is true when the packet came in an Ethernet frame (VXLAN,
	// Geneve with TEB, gretap); EtherType is that frame's type.
	Ethernet  bool
	EtherType uint16
	// Family is the inner IP family, or empty for non-IP (e.g. ARP).
	Family   string
	Src, Dst netip.Addr
	Proto    uint8
}

// Summarize decodes captured packets. A frame that cannot be decoded
// completely keeps what was decoded before the fault; the faults are
// joined into the error, each naming its frame's index.
func Summarize(pkts []gopacket.Packet) ([]Frame, error) {
	frames := make([]Frame, 0, len(pkts))
	var errs []error
	for i, p := range pkts {
		f, err := Decode(p.Data())
		if err != nil {
			errs = append(errs, fmt.Errorf("frame %d: %w", i, err))
		}
		if n := p.Metadata().Length; n > f.WireLen {
			f.WireLen = n
		}
		frames = append(frames, f)
	}
	return frames, errors.Join(errs...)
}

// Filter returns the frames for which keep is true.
func Filter(frames []Frame, keep func(Frame) bool) []Frame {
	var out []Frame
	for _, f := range frames {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// WireGuardType returns the WireGuard message type of a UDP frame to or
// from port: 1 handshake initiation, 2 handshake response, 3 cookie reply,
// 4 transport data. ok is false when the frame is not UDP on that port or
// its payload does not start like a WireGuard message (type 1-4 followed by
// three zero bytes).
func (f Frame) WireGuardType(port uint16) (typ uint8, ok bool) {
	if f.Proto != ProtoUDP || (f.SrcPort != port && f.DstPort != port) || len(f.Payload) < 4 {
		return 0, false
	}
	p := f.Payload
	if p[0] < 1 || p[0] > 4 || p[1] != 0 || p[2] != 0 || p[3] != 0 {
		return 0, false
	}
	return p[0], true
}

// String renders the frame in one line, for test failure messages.
func (f Frame) String() string {
	if f.Family == "" {
		return fmt.Sprintf("ethertype %#04x len %d", f.EtherType, f.WireLen)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s > %s len %d", f.Family, f.Src, f.Dst, f.IPLen)
	if len(f.Ext) > 0 {
		fmt.Fprintf(&b, " ext %v", f.Ext)
	}
	if f.HasEncapLimit {
		fmt.Fprintf(&b, " encap-limit %d", f.EncapLimit)
	}
	if f.SRH != nil {
		fmt.Fprintf(&b, " srh left %d segs %v", f.SRH.SegmentsLeft, f.SRH.Segments)
	}
	fmt.Fprintf(&b, " proto %d", f.Proto)
	if f.Proto == ProtoUDP || f.Proto == ProtoTCP {
		fmt.Fprintf(&b, " %d > %d", f.SrcPort, f.DstPort)
	}
	switch {
	case f.Encap == EncapVXLAN || f.Encap == EncapGeneve:
		fmt.Fprintf(&b, " %s vni %d", f.Encap, f.VNI)
	case f.GRE != nil:
		fmt.Fprintf(&b, " gre proto %#04x", f.GRE.Protocol)
		if f.GRE.KeyPresent {
			fmt.Fprintf(&b, " key %d", f.GRE.Key)
		}
	case f.ESP != nil:
		fmt.Fprintf(&b, " %s spi %#08x seq %d", f.Encap, f.ESP.SPI, f.ESP.Seq)
	case f.Encap != "":
		fmt.Fprintf(&b, " %s", f.Encap)
	}
	if in := f.Inner; in != nil {
		var parts []string
		if in.Ethernet {
			parts = append(parts, fmt.Sprintf("eth %#04x", in.EtherType))
		}
		if in.Family != "" {
			parts = append(parts, fmt.Sprintf("%s %s > %s proto %d", in.Family, in.Src, in.Dst, in.Proto))
		}
		fmt.Fprintf(&b, " [%s]", strings.Join(parts, " "))
	}
	return b.String()
}

// Decode decodes one Ethernet frame. It returns what it decoded even when
// it fails part way (for example on a frame cut short by the snap length
// inside a header it needs).
func Decode(data []byte) (Frame, error) {
	f := Frame{WireLen: len(data)}
	var eth layers.Ethernet
	if err := eth.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
		return f, fmt.Errorf("ethernet: %w", err)
	}
	f.EtherType = uint16(eth.EthernetType)
	var ip ipFacts
	var err error
	switch f.EtherType {
	case EtherTypeIPv4:
		ip, err = decodeIPv4(eth.Payload)
	case EtherTypeIPv6:
		ip, err = decodeIPv6(eth.Payload)
	default:
		return f, nil
	}
	f.Family, f.Src, f.Dst, f.IPLen, f.Proto = ip.family, ip.src, ip.dst, ip.length, ip.proto
	f.Ext, f.EncapLimit, f.HasEncapLimit, f.SRH = ip.ext, ip.encapLimit, ip.hasEncapLimit, ip.srh
	f.Fragment = ip.fragment
	if err != nil || ip.laterFragment {
		return f, err
	}
	return f, decodeTransport(&f, ip.payload)
}

// decodeTransport decodes what follows the outer IP header.
func decodeTransport(f *Frame, payload []byte) error {
	switch f.Proto {
	case ProtoUDP:
		var udp layers.UDP
		if err := udp.DecodeFromBytes(payload, gopacket.NilDecodeFeedback); err != nil {
			return fmt.Errorf("udp: %w", err)
		}
		f.SrcPort, f.DstPort = uint16(udp.SrcPort), uint16(udp.DstPort)
		f.Payload = udp.Payload
		return decodeUDPPayload(f)
	case ProtoTCP:
		if len(payload) < 4 {
			return errors.New("tcp: header truncated")
		}
		f.SrcPort, f.DstPort = binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:])
	case ProtoGRE:
		f.Encap = EncapGRE
		var g layers.GRE
		if err := g.DecodeFromBytes(payload, gopacket.NilDecodeFeedback); err != nil {
			return fmt.Errorf("gre: %w", err)
		}
		f.GRE = &GRE{
			ChecksumPresent: g.ChecksumPresent, KeyPresent: g.KeyPresent, SeqPresent: g.SeqPresent,
			Key: g.Key, Seq: g.Seq, Protocol: uint16(g.Protocol),
		}
		return decodeInner(f, f.GRE.Protocol, g.Payload)
	case ProtoIPIP:
		f.Encap = EncapIP4
		return decodeInner(f, EtherTypeIPv4, payload)
	case ProtoIPv6:
		f.Encap = EncapIP6
		return decodeInner(f, EtherTypeIPv6, payload)
	case ProtoESP:
		f.Encap = EncapESP
		esp, err := decodeESP(payload)
		f.ESP = esp
		return err
	default:
		if dec := registeredProto(f.Proto); dec != nil {
			f.Payload = payload
			return dec(f)
		}
	}
	return nil
}

func decodeESP(b []byte) (*ESP, error) {
	var esp layers.IPSecESP
	if err := esp.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
		return nil, fmt.Errorf("esp: %w", err)
	}
	return &ESP{SPI: esp.SPI, Seq: esp.Seq}, nil
}

// UDPDecoder recognises one encapsulation in a UDP payload: it sets
// f.Encap (and whatever else it decodes, e.g. Inner through
// DecodeInner) from f.Payload.
type UDPDecoder func(f *Frame) error

var (
	udpMu       sync.RWMutex
	udpDecoders = map[uint16]UDPDecoder{}
)

// RegisterUDP makes Decode recognise the encapsulation a method family
// sends to UDP port (either direction): the family registers it from its
// package's init, beside the method, so that a new UDP tunnel needs no
// change here. The ports this package knows (VXLAN, Geneve, IKE, NAT-T)
// cannot be taken over; registering one twice panics.
func RegisterUDP(port uint16, dec UDPDecoder) {
	udpMu.Lock()
	defer udpMu.Unlock()
	switch port {
	case PortVXLAN, PortGeneve, PortIKE, PortNATT:
		panic(fmt.Sprintf("wire: UDP port %d is decoded by this package", port))
	}
	if _, dup := udpDecoders[port]; dup {
		panic(fmt.Sprintf("wire: UDP port %d registered twice", port))
	}
	udpDecoders[port] = dec
}

var protoDecoders = map[uint8]UDPDecoder{}

// RegisterProto makes Decode recognise an encapsulation carried right in
// the outer IP header as protocol proto (L2TPv3 over IP: 115): dec gets
// the frame with Payload set to the IP payload. As RegisterUDP, from the
// family's package; the protocols this package decodes cannot be taken
// over, and registering one twice panics.
func RegisterProto(proto uint8, dec UDPDecoder) {
	udpMu.Lock()
	defer udpMu.Unlock()
	switch proto {
	case ProtoUDP, ProtoTCP, ProtoGRE, ProtoIPIP, ProtoIPv6, ProtoESP:
		panic(fmt.Sprintf("wire: IP protocol %d is decoded by this package", proto))
	}
	if _, dup := protoDecoders[proto]; dup {
		panic(fmt.Sprintf("wire: IP protocol %d registered twice", proto))
	}
	protoDecoders[proto] = dec
}

func registeredProto(proto uint8) UDPDecoder {
	udpMu.RLock()
	defer udpMu.RUnlock()
	return protoDecoders[proto]
}

// DecodeInner decodes, into f.Inner, a packet of the given EtherType
// (EtherTypeTEB for an Ethernet frame) that an encapsulation carries in
// the clear: what a UDPDecoder calls for its payload.
func DecodeInner(f *Frame, etherType uint16, b []byte) error { return decodeInner(f, etherType, b) }

// registered returns the decoder registered for f's destination port, or
// else its source port.
func registered(f *Frame) UDPDecoder {
	udpMu.RLock()
	defer udpMu.RUnlock()
	if d, ok := udpDecoders[f.DstPort]; ok {
		return d
	}
	return udpDecoders[f.SrcPort]
}

// decodeUDPPayload recognises the encapsulations on their well-known
// destination ports (for IKE and NAT-T either port), then those method
// families registered (RegisterUDP).
func decodeUDPPayload(f *Frame) error {
	p := f.Payload
	either := func(port uint16) bool { return f.SrcPort == port || f.DstPort == port }
	switch {
	case f.DstPort == PortVXLAN:
		f.Encap = EncapVXLAN
		var vx layers.VXLAN
		if err := vx.DecodeFromBytes(p, gopacket.NilDecodeFeedback); err != nil {
			return fmt.Errorf("vxlan: %w", err)
		}
		f.VNI = vx.VNI
		return decodeInner(f, EtherTypeTEB, vx.Payload)
	case f.DstPort == PortGeneve:
		f.Encap = EncapGeneve
		var gn layers.Geneve
		if err := gn.DecodeFromBytes(p, gopacket.NilDecodeFeedback); err != nil {
			return fmt.Errorf("geneve: %w", err)
		}
		f.VNI = gn.VNI
		return decodeInner(f, uint16(gn.Protocol), gn.Payload)
	case either(PortNATT):
		switch {
		case len(p) == 1 && p[0] == 0xff:
			f.Encap = EncapNATKeep
		case len(p) >= 4 && binary.BigEndian.Uint32(p) == 0: // non-ESP marker
			f.Encap = EncapIKE
		default:
			f.Encap = EncapESPUDP
			esp, err := decodeESP(p)
			f.ESP = esp
			return err
		}
	case either(PortIKE):
		f.Encap = EncapIKE
	default:
		if dec := registered(f); dec != nil {
			return dec(f)
		}
	}
	return nil
}

// decodeInner decodes an encapsulated packet of the given EtherType.
func decodeInner(f *Frame, etherType uint16, b []byte) error {
	in := &Inner{}
	f.Inner = in
	if etherType == EtherTypeTEB {
		var eth layers.Ethernet
		if err := eth.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
			return fmt.Errorf("inner ethernet: %w", err)
		}
		in.Ethernet, in.EtherType = true, uint16(eth.EthernetType)
		etherType, b = in.EtherType, eth.Payload
	}
	var ip ipFacts
	var err error
	switch etherType {
	case EtherTypeIPv4:
		ip, err = decodeIPv4(b)
	case EtherTypeIPv6:
		ip, err = decodeIPv6(b)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("inner: %w", err)
	}
	in.Family, in.Src, in.Dst, in.Proto = ip.family, ip.src, ip.dst, ip.proto
	return nil
}

// ipFacts is what an IP header and its extension headers say.
type ipFacts struct {
	family        string
	src, dst      netip.Addr
	length        int
	proto         uint8
	ext           []uint8
	encapLimit    uint8
	hasEncapLimit bool
	srh           *SRH
	fragment      bool // the packet is a fragment
	laterFragment bool // ... and not the first one
	payload       []byte
}

func decodeIPv4(b []byte) (ipFacts, error) {
	var ip layers.IPv4
	if err := ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
		return ipFacts{}, fmt.Errorf("ipv4: %w", err)
	}
	src, _ := netip.AddrFromSlice(ip.SrcIP.To4())
	dst, _ := netip.AddrFromSlice(ip.DstIP.To4())
	return ipFacts{
		family: IPv4, src: src, dst: dst, length: int(ip.Length),
		proto: uint8(ip.Protocol), payload: ip.Payload,
		fragment:      ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0,
		laterFragment: ip.FragOffset != 0,
	}, nil
}

// decodeIPv6 decodes the fixed header and walks the extension headers up
// to the first upper-layer protocol. The payload is cut to what the
// payload length says and to what was captured.
func decodeIPv6(b []byte) (ipFacts, error) {
	if len(b) < 40 {
		return ipFacts{}, fmt.Errorf("ipv6: header truncated (%d bytes)", len(b))
	}
	if v := b[0] >> 4; v != 6 {
		return ipFacts{}, fmt.Errorf("ipv6: version %d", v)
	}
	ip := ipFacts{
		family: IPv6,
		src:    netip.AddrFrom16([16]byte(b[8:24])),
		dst:    netip.AddrFrom16([16]byte(b[24:40])),
		length: 40 + int(binary.BigEndian.Uint16(b[4:6])),
	}
	next := b[6]
	rest := b[40:]
	if n := ip.length - 40; n < len(rest) {
		rest = rest[:n]
	}
	for {
		switch next {
		case ProtoHopByHop, ProtoRouting, ProtoDestination, ProtoFragment:
		default:
			ip.proto, ip.payload = next, rest
			return ip, nil
		}
		if len(rest) < 8 {
			return ip, fmt.Errorf("ipv6: extension header %d truncated", next)
		}
		n := 8
		if next != ProtoFragment {
			n = (int(rest[1]) + 1) * 8
		}
		if len(rest) < n {
			return ip, fmt.Errorf("ipv6: extension header %d truncated: %d bytes of %d", next, len(rest), n)
		}
		h := rest[:n]
		ip.ext = append(ip.ext, next)
		switch next {
		case ProtoRouting:
			if h[2] == 4 {
				srh, err := decodeSRH(h)
				if err != nil {
					return ip, err
				}
				ip.srh = srh
			}
		case ProtoDestination:
			if v, ok := encapLimit(h[2:]); ok {
				ip.encapLimit, ip.hasEncapLimit = v, true
			}
		case ProtoFragment:
			ip.fragment = true
			if binary.BigEndian.Uint16(h[2:4])>>3 != 0 {
				ip.laterFragment = true
				ip.proto, ip.payload = h[0], rest[n:]
				return ip, nil
			}
		}
		next, rest = h[0], rest[n:]
	}
}

// decodeSRH decodes a segment routing header (routing type 4).
func decodeSRH(h []byte) (*SRH, error) {
	srh := &SRH{SegmentsLeft: h[3], LastEntry: h[4]}
	segs := h[8:]
	n := int(srh.LastEntry) + 1
	if n*16 > len(segs) {
		return nil, fmt.Errorf("ipv6: srh: last entry %d but room for %d segments", srh.LastEntry, len(segs)/16)
	}
	for i := range n {
		srh.Segments = append(srh.Segments, netip.AddrFrom16([16]byte(segs[i*16:i*16+16])))
	}
	return srh, nil
}

// encapLimit finds the tunnel encapsulation limit option (type 4, RFC
// 2473) among the options of a destination options header.
func encapLimit(opts []byte) (uint8, bool) {
	for len(opts) > 0 {
		if opts[0] == 0 { // Pad1
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || len(opts) < 2+int(opts[1]) {
			return 0, false
		}
		if opts[0] == 4 && opts[1] == 1 {
			return opts[2], true
		}
		opts = opts[2+int(opts[1]):]
	}
	return 0, false
}
