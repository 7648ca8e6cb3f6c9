package kernel

import (
	"context"
	"net"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// IP6IP6 is the kernel's IPv6-in-IPv6 tunnel (ip6tnl, mode ip6ip6, RFC
// 2473): IPv6 traffic over the IPv6 underlay.
//
// ip6tnl adds by default a destination options header with a tunnel
// encapsulation limit to every packet (8 bytes); this method sets
// "encaplimit none" so that the tunnel costs the bare 40-byte header, as
// SRv6 and ip6gre (also without the option here) are compared with it.
//
// Options: none.
type IP6IP6 struct{}

const ip6ip6Suffix = "-6in6"

func (IP6IP6) Name() string       { return "ip6ip6" }
func (IP6IP6) Families() []string { return []string{method.IPv6} }
func (IP6IP6) Implementation() string {
	return "kernel ip6tnl mode ip6ip6, encaplimit none (netlink)"
}

// Overhead is the outer IPv6 header (40); there is no encapsulation limit
// option (it would add 8).
func (IP6IP6) Overhead(string) int { return 40 }

// UnderlayFamily is IPv6.
func (IP6IP6) UnderlayFamily(string) string { return method.IPv6 }

// Options declares the scenario options (see Option).
func (IP6IP6) Options() []method.Option { return nil }

func (IP6IP6) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_IPV6_TUNNEL", Module: "ip6_tunnel"}}
}

// Scale: one tunnel is a route with its own encapsulation through one
// flow-based ip6tnl device (the measured tunnel is the ip6tnl device of
// N = 1; tunnelset.go says why); the address plan bounds them.
func (IP6IP6) Scale(family string, _ method.Values) method.Scale { return flowScale("ip6tnl", family) }

// Setup creates one ip6tnl device per side with the overlay address on
// it and, for more than one tunnel, the others through a flow-based
// device.
func (m IP6IP6) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	if env.Family != method.IPv6 {
		return nil, method.UnsupportedFamily(m, env.Family)
	}
	if err := checkTunnels(m, env, m.Scale(env.Family, opts)); err != nil {
		return nil, err
	}
	return setupTunnels(env, ip6ip6Set(), ip6ip6Tunnel())
}

// ip6ip6Tunnel is the measured tunnel's ip6tnl device.
func ip6ip6Tunnel() kernelTunnel {
	return kernelTunnel{
		kind:     "ip6tnl",
		suffix:   ip6ip6Suffix,
		underlay: method.IPv6,
		config:   "CONFIG_IPV6_TUNNEL",
		link: func(name string, local, remote net.IP) netlink.Link {
			return &netlink.Ip6tnl{
				LinkAttrs: netlink.LinkAttrs{Name: name},
				Local:     local,
				Remote:    remote,
				Ttl:       tunnelTTL,
				Flags:     ip6TnlIgnEncapLimit,
				Proto:     unix.IPPROTO_IPV6,
			}
		},
	}
}

// Teardown deletes both sides' ip6tnl devices, and with the flow-based
// one the other tunnels' routes and addresses.
func (IP6IP6) Teardown(_ context.Context, env *method.Env) error {
	return teardownTunnels(env, ip6ip6Set())
}
