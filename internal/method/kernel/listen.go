package kernel

import "github.com/tunbench/tunbench/internal/method"

// The sockets the kernel methods open (method.Listener). The IP-protocol
// tunnels and SRv6 open none: the kernel takes their packets by protocol
// number or route, not from a socket.

// Listens: none (IP protocol 47).
func (GRE) Listens(method.Values, string) []method.Listen { return nil }

// Listens: none (IP protocol 47).
func (Gretap) Listens(method.Values, string) []method.Listen { return nil }

// Listens: none (IP protocol 47).
func (IP6GRE) Listens(method.Values, string) []method.Listen { return nil }

// Listens: none (IP protocol 41).
func (IP6IP6) Listens(method.Values, string) []method.Listen { return nil }

// Listens: none (IP protocol 4).
func (IPIP) Listens(method.Values, string) []method.Listen { return nil }

// Listens: none (SRv6 local SIDs are routes).
func (SRv6) Listens(method.Values, string) []method.Listen { return nil }

// Listens: the kernel's VXLAN socket on UDP 4789, which it opens on
// 0.0.0.0 or :: (the underlay's family) whatever the device's local
// address: the socket is per port and shared by every VXLAN device of
// the namespace.
func (VXLAN) Listens(method.Values, string) []method.Listen {
	return []method.Listen{{Proto: "udp", Port: method.VXLANPort, Addr: method.ListenWildcard, Families: "run",
		Program: "kernel (vxlan device)",
		Why:     "the kernel opens one VXLAN socket per port on 0.0.0.0 or ::, whatever the device's local address"}}
}

// Listens: the kernel's Geneve socket on UDP 6081, on 0.0.0.0 or :: (the
// remote's family); a Geneve device has no local address at all.
func (Geneve) Listens(method.Values, string) []method.Listen {
	return []method.Listen{{Proto: "udp", Port: method.GenevePort, Addr: method.ListenWildcard, Families: "run",
		Program: "kernel (geneve device)",
		Why:     "a Geneve device has no local address: the kernel opens its port on 0.0.0.0 or ::"}}
}
