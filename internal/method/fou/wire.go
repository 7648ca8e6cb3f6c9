package fou

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tunbench/tunbench/internal/wire"
)

// The encapsulations Decode recognises on the default port (wire.Frame.Encap).
const (
	// EncapFOU is an IPv4 or IPv6 packet or a GRE header right after
	// the UDP header.
	EncapFOU = "fou"
	// EncapGUE is a GUE header (version 0) before the payload; the
	// header's proto field is GUEProto.
	EncapGUE = "gue"
)

func init() { wire.RegisterUDP(DefaultPort, Decode) }

// Decode recognises FOU and GUE in the UDP payload of f (a
// wire.UDPDecoder; registered for DefaultPort, a test registers its own
// port with it). It tells them apart by the first bytes:
//
//   - first four bits 4 or 6: a bare IPv4 or IPv6 packet (fou, payload
//     ipip);
//   - a GRE header without flags, version 0 (the first two bytes zero)
//     and a known protocol type (IPv4, IPv6, Ethernet) in bytes 2-3: fou,
//     payload gre;
//   - otherwise, first two bits 0: GUE version 0, whose second byte is
//     the inner IP protocol (4, 41 or 47), followed by hlen words of
//     optional fields, then the payload. (A GUE data message of protocol
//     0 would read as GRE; the kernel sends none.)
func Decode(f *wire.Frame) error {
	p := f.Payload
	if len(p) < 4 {
		return fmt.Errorf("fou/gue: payload of %d bytes", len(p))
	}
	switch {
	case p[0]>>4 == 4:
		f.Encap = EncapFOU
		return wire.DecodeInner(f, wire.EtherTypeIPv4, p)
	case p[0]>>4 == 6:
		f.Encap = EncapFOU
		return wire.DecodeInner(f, wire.EtherTypeIPv6, p)
	case p[0] == 0 && p[1] == 0 && knownEtherType(binary.BigEndian.Uint16(p[2:4])):
		f.Encap = EncapFOU
		return decodeGRE(f, p)
	case p[0]>>6 == 0:
		f.Encap = EncapGUE
		if p[0]&0x20 != 0 {
			return nil // a control message
		}
		hlen := 4 + 4*int(p[0]&0x1f)
		if len(p) < hlen {
			return fmt.Errorf("gue: header of %d bytes, %d captured", hlen, len(p))
		}
		switch body := p[hlen:]; p[1] {
		case wire.ProtoIPIP:
			return wire.DecodeInner(f, wire.EtherTypeIPv4, body)
		case wire.ProtoIPv6:
			return wire.DecodeInner(f, wire.EtherTypeIPv6, body)
		case wire.ProtoGRE:
			return decodeGRE(f, body)
		}
		return nil
	}
	return fmt.Errorf("fou/gue: version %d", p[0]>>6)
}

// GUEProto returns the proto field of a GUE frame's header and whether f
// is one.
func GUEProto(f wire.Frame) (uint8, bool) {
	if f.Encap != EncapGUE || len(f.Payload) < 4 {
		return 0, false
	}
	return f.Payload[1], true
}

func knownEtherType(t uint16) bool {
	return t == wire.EtherTypeIPv4 || t == wire.EtherTypeIPv6 || t == wire.EtherTypeTEB
}

// decodeGRE decodes a GRE header and what it carries into f.
func decodeGRE(f *wire.Frame, b []byte) error {
	var g layers.GRE
	if err := g.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
		return fmt.Errorf("%s: gre: %w", f.Encap, err)
	}
	f.GRE = &wire.GRE{
		ChecksumPresent: g.ChecksumPresent, KeyPresent: g.KeyPresent, SeqPresent: g.SeqPresent,
		Key: g.Key, Seq: g.Seq, Protocol: uint16(g.Protocol),
	}
	return wire.DecodeInner(f, f.GRE.Protocol, g.Payload)
}
