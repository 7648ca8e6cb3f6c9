package method

import "strings"

// HeaderOverhead is the number of bytes a method really adds to each
// packet with the options it ran with (variant is Path.Variant, which says
// which data path an "auto" choice took). Methods whose framing does not
// depend on options give their Overhead. It feeds the ceiling arithmetic
// of docs/methods.md:
//
//   - openvpn over TCP: the outer TCP header is 20 bytes, not UDP's 8, and
//     each packet carries a 2-byte length prefix;
//   - ipsec and ipsec-ecmp: transport mode has no outer IP header; the 8
//     bytes of UDP are there only with natt on or the kernel-libipsec data
//     path (which always encapsulates ESP in UDP 4500).
func HeaderOverhead(m Method, family string, opts map[string]string, variant string) int {
	switch m.Name() {
	case "openvpn":
		if opts["proto"] == "tcp" {
			return m.Overhead(family) - 8 + 20 + 2
		}
	case "ipsec", "ipsec-ecmp":
		mode := opts["mode"]
		if mode == "" {
			mode = "tunnel"
		}
		udp := opts["natt"] == "on" || opts["datapath"] == ipsecLibipsec || strings.Contains(variant, "UDP")
		return ipsecOverhead(family, mode, udp)
	}
	return m.Overhead(family)
}
