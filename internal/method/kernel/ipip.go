package kernel

import (
	"context"
	"net"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// IPIP is the kernel's IPv4-in-IPv4 tunnel (RFC 2003): IPv4 traffic over
// the IPv4 underlay.
//
// Options: none.
type IPIP struct{}

const ipipSuffix = "-ipip"

func (IPIP) Name() string           { return "ipip" }
func (IPIP) Implementation() string { return "kernel ipip (netlink)" }
func (IPIP) Families() []string     { return []string{method.IPv4} }

// Overhead is the outer IPv4 header (20).
func (IPIP) Overhead(string) int { return 20 }

// UnderlayFamily is IPv4.
func (IPIP) UnderlayFamily(string) string { return method.IPv4 }

// Options declares the scenario options (see Option).
func (IPIP) Options() []method.Option { return nil }

func (IPIP) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_NET_IPIP", Module: "ipip"}}
}

// Scale: one tunnel is a route with its own encapsulation through one
// flow-based ipip device (the measured tunnel is the ipip device of N =
// 1; tunnelset.go says why); the address plan bounds them.
func (IPIP) Scale(family string, _ method.Values) method.Scale { return flowScale("ipip", family) }

// Setup creates one ipip device per side with the overlay address on it
// and, for more than one tunnel, the others through a flow-based device.
func (m IPIP) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	if env.Family != method.IPv4 {
		return nil, method.UnsupportedFamily(m, env.Family)
	}
	if err := checkTunnels(m, env, m.Scale(env.Family, opts)); err != nil {
		return nil, err
	}
	return setupTunnels(env, ipipSet(), ipipTunnel())
}

// ipipTunnel is the measured tunnel's ipip device.
func ipipTunnel() kernelTunnel {
	return kernelTunnel{
		kind:     "ipip",
		suffix:   ipipSuffix,
		underlay: method.IPv4,
		config:   "CONFIG_NET_IPIP",
		link: func(name string, local, remote net.IP) netlink.Link {
			return &netlink.Iptun{
				LinkAttrs: netlink.LinkAttrs{Name: name},
				Local:     local,
				Remote:    remote,
				Ttl:       tunnelTTL,
				PMtuDisc:  1,
				Proto:     unix.IPPROTO_IPIP,
			}
		},
	}
}

// Teardown deletes both sides' ipip devices, and with the flow-based one
// the other tunnels' routes and addresses.
func (IPIP) Teardown(_ context.Context, env *method.Env) error {
	return teardownTunnels(env, ipipSet())
}
