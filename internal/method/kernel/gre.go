package kernel

import (
	"context"
	"net"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/vishvananda/netlink"
)

// GRE is the kernel's layer-3 GRE tunnel (RFC 2784) without key, checksum
// or sequence number, over the IPv4 underlay, carrying IPv4 or IPv6. Its
// IPv6-underlay sibling is IP6GRE.
//
// Options: none.
type GRE struct{}

const greSuffix = "-gre"

func (GRE) Name() string           { return "gre" }
func (GRE) Implementation() string { return "kernel gre (netlink)" }
func (GRE) Families() []string     { return []string{method.IPv4, method.IPv6} }

// Overhead is outer IPv4 (20) + the basic GRE header (4), whatever the
// inner family.
func (GRE) Overhead(string) int { return 20 + 4 }

// UnderlayFamily is IPv4: gre runs over IPv4 whatever it carries.
func (GRE) UnderlayFamily(string) string { return method.IPv4 }

// Options declares the scenario options (see Option).
func (GRE) Options() []method.Option { return nil }

func (GRE) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_NET_IPGRE", Module: "ip_gre"}}
}

// Scale: one tunnel is a gre device with its own GRE key (tunnel i's is
// 1 + i; the measured one keeps none), all between the same underlay
// addresses; the address plan bounds them.
func (GRE) Scale(family string, _ method.Values) method.Scale { return keyedScale("gre", family, 0) }

// Setup creates env.N() gre devices per side between the IPv4 underlay
// addresses (one: the measured tunnel's, without key), with the overlay
// addresses of the measured family on them.
func (g GRE) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(g, env.Options)
	if err != nil {
		return nil, err
	}
	if err := checkTunnels(g, env, g.Scale(env.Family, opts)); err != nil {
		return nil, err
	}
	return setupTunnels(env, greSet(), greTunnel(0))
}

// greTunnel is a gre device with GRE key key (0: none).
func greTunnel(key uint32) kernelTunnel {
	return kernelTunnel{
		kind:     "gre",
		suffix:   greSuffix,
		underlay: method.IPv4,
		config:   "CONFIG_NET_IPGRE",
		link: func(name string, local, remote net.IP) netlink.Link {
			return &netlink.Gretun{
				LinkAttrs: netlink.LinkAttrs{Name: name},
				Local:     local,
				Remote:    remote,
				IKey:      key,
				OKey:      key,
				Ttl:       tunnelTTL,
				PMtuDisc:  1,
			}
		},
	}
}

// Teardown deletes every gre device on both sides.
func (GRE) Teardown(_ context.Context, env *method.Env) error {
	return teardownTunnels(env, greSet())
}

// Gretap is the kernel's Ethernet-over-GRE device with a GRE key: the
// NVGRE-style layer-2 overlay (RFC 7637 puts a 24-bit virtual subnet ID and
// an 8-bit flow ID in the key; here the key is the number the option
// gives). Like VXLAN and Geneve, which it is compared with, it runs over an
// underlay of the measured family: gretap over IPv4, ip6gretap (without an
// encapsulation limit option) over IPv6.
//
// Options: "key" (default 42, 1 to 4294967295).
type Gretap struct{}

const gretapSuffix = "-gtap"

func (Gretap) Name() string       { return "gretap" }
func (Gretap) Families() []string { return []string{method.IPv4, method.IPv6} }
func (Gretap) Implementation() string {
	return "kernel gretap / ip6gretap with key (netlink)"
}

// Overhead is outer IP (20 or 40) + GRE header (4) + key (4) + inner
// Ethernet (14): 42 over IPv4, 62 over IPv6.
func (Gretap) Overhead(family string) int {
	if family == method.IPv6 {
		return 40 + 4 + 4 + 14
	}
	return 20 + 4 + 4 + 14
}

// Options declares the scenario options (see Option).
func (Gretap) Options() []method.Option { return []method.Option{method.GREKeyOption} }

// Requirements: gretap lives in ip_gre, ip6gretap in ip6_gre.
func (Gretap) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_NET_IPGRE", Module: "ip_gre"}, {Kernel: "CONFIG_IPV6_GRE", Module: "ip6_gre"}}
}

// Scale: one tunnel is a gretap (ip6gretap) device with its own GRE key
// (the key option's for the measured one, key + 1 + i for tunnel i),
// all between the same underlay addresses; the address plan bounds them,
// or the keys running out of 32 bits.
func (Gretap) Scale(family string, opts method.Values) method.Scale {
	return keyedScale(gretapKind(family), family, uint32(opts.Uint64("key")))
}

// Setup creates env.N() keyed gretap (IPv4) or ip6gretap (IPv6) devices
// per side with the overlay addresses on them.
func (g Gretap) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(g, env.Options)
	if err != nil {
		return nil, err
	}
	if err := checkTunnels(g, env, g.Scale(env.Family, opts)); err != nil {
		return nil, err
	}
	key := uint32(opts.Uint64("key"))
	return setupTunnels(env, gretapSet(env.Family, key), gretapTunnel(env.Family, key))
}

// gretapKind is the device kind of gretap over family's underlay.
func gretapKind(family string) string {
	if family == method.IPv6 {
		return "ip6gretap"
	}
	return "gretap"
}

// gretapTunnel is a gretap (IPv4) or ip6gretap (IPv6) device with GRE key
// key.
func gretapTunnel(family string, key uint32) kernelTunnel {
	kt := kernelTunnel{
		kind:     "gretap",
		suffix:   gretapSuffix,
		underlay: family,
		config:   "CONFIG_NET_IPGRE",
		link: func(name string, local, remote net.IP) netlink.Link {
			return &netlink.Gretap{
				LinkAttrs: netlink.LinkAttrs{Name: name},
				Local:     local,
				Remote:    remote,
				IKey:      key,
				OKey:      key,
				Ttl:       tunnelTTL,
				PMtuDisc:  1,
			}
		},
	}
	if family == method.IPv6 {
		kt.kind, kt.config = "ip6gretap", "CONFIG_IPV6_GRE"
		kt.link, kt.ip6greKey = nil, key
	}
	return kt
}

// Teardown deletes every gretap device on both sides.
func (Gretap) Teardown(_ context.Context, env *method.Env) error {
	return teardownTunnels(env, gretapSet(env.Family, 0))
}
