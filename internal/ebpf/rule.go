package ebpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Encap is an encapsulation the data path writes and reads.
type Encap uint8

// Encapsulations (enum encap in tunnel.h).
const (
	Geneve Encap = 1 // UDP, Geneve without options, inner Ethernet
	VXLAN  Encap = 2 // UDP 4789, I flag, VNI, inner Ethernet
	GRE    Encap = 3 // GRE, key optional, inner IPv4 or IPv6
	IPIP   Encap = 4 // IPv4 (protocol 4) or IPv6 (41) in the outer IPv4
)

// Standard UDP destination ports.
const (
	VXLANPort  = 4789
	GenevePort = 6081
)

func (e Encap) String() string {
	switch e {
	case Geneve:
		return "geneve"
	case VXLAN:
		return "vxlan"
	case GRE:
		return "gre"
	case IPIP:
		return "ipip"
	}
	return fmt.Sprintf("encap(%d)", uint8(e))
}

// Overhead is the number of bytes e adds in front of an inner IP packet
// over an underlay of the given family ("ipv4" or "ipv6"); greKey says
// whether GRE carries a key.
func (e Encap) Overhead(underlay string, greKey bool) int {
	n := 20
	if underlay == "ipv6" {
		n = 40
	}
	switch e {
	case Geneve, VXLAN:
		return n + 8 + 8 + 14
	case GRE:
		if greKey {
			return n + 8
		}
		return n + 4
	}
	return n
}

// Drop reasons (enum drop_reason in tunnel.h), in counter order. Only
// tunbench's own packets are dropped: a tunnel packet whose VNI or key
// has no decap entry is the host's and goes on unchanged (Stats.NotOurs).
var DropReasons = []string{"truncated", "bad-header", "encap-failed", "decap-failed"}

// Rule says how to encapsulate traffic to one destination prefix.
type Rule struct {
	// ID names the rule in counters; unique per table.
	ID uint32
	// Dst is the inner destination prefix (IPv4 or IPv6).
	Dst netip.Prefix
	// Encap is the encapsulation.
	Encap Encap
	// VNI is the Geneve or VXLAN network identifier (24 bits) or the GRE
	// key; GRE puts a key in the header only when GREKey is set.
	VNI    uint32
	GREKey bool
	// Local and Remote are the underlay addresses (both IPv4 or both
	// IPv6; IPIP needs IPv4).
	Local, Remote netip.Addr
	// SrcPortMin and SrcPortMax bound the outer UDP source port, which
	// comes from the inner flow hash so that ECMP and RSS spread flows;
	// equal values fix it. Zero for both means 49152-65535.
	SrcPortMin, SrcPortMax uint16
	// DstPort is the outer UDP destination port; zero means the standard
	// port of Encap.
	DstPort uint16
	// InnerDst and InnerSrc are the inner Ethernet addresses of VXLAN and
	// Geneve; nil means InnerMAC and InnerSrcMAC.
	InnerDst, InnerSrc net.HardwareAddr
}

// InnerMAC and InnerSrcMAC are the default inner Ethernet destination and
// source (locally administered). A kernel VXLAN or Geneve device receiving
// from this data path must carry InnerMAC as its address (or it hands the
// frames up as not for this host); the source differs from it because a
// VXLAN device drops frames that claim to come from its own address.
var (
	InnerMAC    = net.HardwareAddr{0x02, 0x74, 0x62, 0x00, 0x00, 0x01}
	InnerSrcMAC = net.HardwareAddr{0x02, 0x74, 0x62, 0x00, 0x00, 0x02}
)

// Decap accepts tunnel packets of one encapsulation and VNI or key.
type Decap struct {
	ID    uint32
	Encap Encap
	// VNI is the VNI or GRE key; 0 for IPIP and for GRE without a key.
	VNI uint32
}

// Counters are what a rule or decap entry counted.
type Counters struct {
	Packets uint64
	Bytes   uint64
	// Drops is indexed like DropReasons.
	Drops []uint64
}

// DropMap returns the non-zero drops by reason name.
func (c Counters) DropMap() map[string]uint64 {
	m := map[string]uint64{}
	for i, n := range c.Drops {
		if n > 0 && i < len(DropReasons) {
			m[DropReasons[i]] = n
		}
	}
	return m
}

// DropString is "drops reason=N ..." for every reason, zero or not.
func (c Counters) DropString() string {
	var d []string
	for i, n := range c.Drops {
		if i < len(DropReasons) {
			d = append(d, fmt.Sprintf("%s=%d", DropReasons[i], n))
		}
	}
	return "drops " + strings.Join(d, " ")
}

// String is "packets P bytes B drops reason=N ...".
func (c Counters) String() string {
	s := fmt.Sprintf("packets %d bytes %d", c.Packets, c.Bytes)
	var d []string
	for i, n := range c.Drops {
		if n > 0 && i < len(DropReasons) {
			d = append(d, fmt.Sprintf("%s=%d", DropReasons[i], n))
		}
	}
	if len(d) > 0 {
		s += " drops " + strings.Join(d, " ")
	}
	return s
}

func countersFrom(c tunnelCounters) Counters {
	return Counters{Packets: c.Packets, Bytes: c.Bytes, Drops: slices.Clone(c.Drops[:])}
}

// Check reports what is wrong with r, or nil.
func (r Rule) Check() error {
	switch {
	case !r.Dst.IsValid():
		return errors.New("no destination prefix")
	case r.Dst != r.Dst.Masked():
		return fmt.Errorf("destination %s has host bits set (want %s)", r.Dst, r.Dst.Masked())
	case r.Encap < Geneve || r.Encap > IPIP:
		return fmt.Errorf("unknown encapsulation %d", r.Encap)
	case !r.Local.IsValid() || !r.Remote.IsValid():
		return errors.New("local and remote underlay addresses are required")
	case r.Local.Is4() != r.Remote.Is4():
		return fmt.Errorf("underlay addresses %s and %s are of different families", r.Local, r.Remote)
	case r.Encap == IPIP && !r.Remote.Is4():
		return fmt.Errorf("ipip needs an IPv4 underlay, not %s", r.Remote)
	case (r.Encap == VXLAN || r.Encap == Geneve) && r.VNI >= 1<<24:
		return fmt.Errorf("%s VNI %d does not fit in 24 bits", r.Encap, r.VNI)
	case r.SrcPortMin > r.SrcPortMax:
		return fmt.Errorf("source port range %d-%d is empty", r.SrcPortMin, r.SrcPortMax)
	}
	for _, mac := range []net.HardwareAddr{r.InnerDst, r.InnerSrc} {
		if mac != nil && len(mac) != 6 {
			return fmt.Errorf("inner MAC %s is not 6 bytes", mac)
		}
	}
	return nil
}

// ruleKey encodes a destination prefix as the LPM key.
func ruleKey(p netip.Prefix) tunnelRuleKey {
	k := tunnelRuleKey{Prefixlen: 32 + uint32(p.Bits()), Family: 4}
	if p.Addr().Is6() {
		k.Family = 6
	}
	copy(k.Addr[:], p.Addr().AsSlice())
	return k
}

func (k tunnelRuleKey) prefix() netip.Prefix {
	bits := int(k.Prefixlen) - 32
	if k.Family == 6 {
		return netip.PrefixFrom(netip.AddrFrom16(k.Addr), bits)
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte(k.Addr[:4])), bits)
}

// encode returns r as the map value (counters zero).
func (r Rule) encode() tunnelRule {
	v := tunnelRule{Id: r.ID, Vni: r.VNI, Encap: uint8(r.Encap), Family: 4,
		SportMin: r.SrcPortMin, SportMax: r.SrcPortMax, Dport: r.DstPort}
	if r.Remote.Is6() {
		v.Family = 6
	}
	if v.SportMin == 0 && v.SportMax == 0 {
		v.SportMin, v.SportMax = 49152, 65535
	}
	if v.Dport == 0 {
		switch r.Encap {
		case VXLAN:
			v.Dport = VXLANPort
		case Geneve:
			v.Dport = GenevePort
		}
	}
	if r.GREKey {
		v.Flags |= 1 // RULE_F_GRE_KEY
	}
	copy(v.Local[:], r.Local.AsSlice())
	copy(v.Remote[:], r.Remote.AsSlice())
	dst, src := r.InnerDst, r.InnerSrc
	if dst == nil {
		dst = InnerMAC
	}
	if src == nil {
		src = InnerSrcMAC
	}
	copy(v.InnerDmac[:], dst)
	copy(v.InnerSmac[:], src)
	return v
}

// decode returns the rule a map entry holds, and its counters.
func decodeRule(k tunnelRuleKey, v tunnelRule) (Rule, Counters) {
	r := Rule{ID: v.Id, Dst: k.prefix(), Encap: Encap(v.Encap), VNI: v.Vni, GREKey: v.Flags&1 != 0,
		SrcPortMin: v.SportMin, SrcPortMax: v.SportMax, DstPort: v.Dport,
		InnerDst: net.HardwareAddr(slices.Clone(v.InnerDmac[:])), InnerSrc: net.HardwareAddr(slices.Clone(v.InnerSmac[:]))}
	if v.Family == 6 {
		r.Local, r.Remote = netip.AddrFrom16(v.Local), netip.AddrFrom16(v.Remote)
	} else {
		r.Local, r.Remote = netip.AddrFrom4([4]byte(v.Local[:4])), netip.AddrFrom4([4]byte(v.Remote[:4]))
	}
	return r, countersFrom(v.C)
}

func decapKey(d Decap) tunnelDecapKey { return tunnelDecapKey{Encap: uint8(d.Encap), Vni: d.VNI} }

// FillerAddrs returns up to n addresses in block other than skip, for the
// rules that fill a map in scale measurements: the j-th is the block's
// address whose host part is j with its bits reversed (0, half, a
// quarter, three quarters, ...), the host part taken as at most 64 bits.
// Any first n are spread evenly over the block, so a trie holding them
// has about log2(n) levels above every address of the block, and the
// first n of a larger count are the same n addresses.
func FillerAddrs(block netip.Prefix, n int, skip ...netip.Addr) []netip.Addr {
	hostBits := block.Addr().BitLen() - block.Bits()
	if hostBits > 64 {
		hostBits = 64
	}
	base := block.Masked().Addr().As16() // IPv4 as ::ffff:a.b.c.d
	out := make([]netip.Addr, 0, n)
	for j := uint64(0); len(out) < n && (hostBits == 64 || j < 1<<hostBits); j++ {
		v := bits.Reverse64(j) >> (64 - hostBits)
		b := base
		lo := binary.BigEndian.Uint64(b[8:]) | v
		binary.BigEndian.PutUint64(b[8:], lo)
		a := netip.AddrFrom16(b)
		if block.Addr().Is4() {
			a = a.Unmap()
		}
		if !slices.Contains(skip, a) {
			out = append(out, a)
		}
	}
	return out
}
