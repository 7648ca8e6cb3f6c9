// Package kernel is the kernel's own tunnels, each one device per side
// made through netlink: vxlan, geneve, gre, gretap, ip6gre, ipip, ip6ip6
// and srv6 (seg6 encapsulation, decapsulated with End.DX4 or End.DT6).
package kernel
