package kernel

import (
	"context"
	"net"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/vishvananda/netlink"
)

// Geneve is the kernel's Geneve device (RFC 8926), unicast between the two
// underlay addresses, UDP port 6081, over an underlay of the measured
// family, carrying Ethernet (like VXLAN, against which it is compared).
//
// Options: "vni" (default 42, 1 to 16777215).
type Geneve struct{}

const geneveSuffix = "-gnv"

func (Geneve) Name() string           { return "geneve" }
func (Geneve) Implementation() string { return "kernel geneve (netlink)" }
func (Geneve) Families() []string     { return []string{method.IPv4, method.IPv6} }

// Overhead is outer IP (20 or 40) + UDP (8) + Geneve base header without
// options (8) + inner Ethernet (14): 50 over IPv4, 70 over IPv6.
func (Geneve) Overhead(family string) int {
	if family == method.IPv6 {
		return 40 + 8 + 8 + 14
	}
	return 20 + 8 + 8 + 14
}

// Options declares the scenario options (see Option).
func (Geneve) Options() []method.Option { return []method.Option{method.VNIOption} }

func (Geneve) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_GENEVE", Module: "geneve"}}
}

// Setup creates one Geneve device per side with the overlay address on it.
func (g Geneve) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(g, env.Options)
	if err != nil {
		return nil, err
	}
	vni := opts.Int("vni")
	return setupTunnel(env, kernelTunnel{
		kind:     "geneve",
		suffix:   geneveSuffix,
		underlay: env.Family,
		config:   "CONFIG_GENEVE",
		// The kernel's Geneve device has no local address: the route to
		// the remote picks the source.
		link: func(name string, _, remote net.IP) netlink.Link {
			return &netlink.Geneve{
				LinkAttrs: netlink.LinkAttrs{Name: name},
				ID:        uint32(vni),
				Remote:    remote,
				Dport:     method.GenevePort,
				Ttl:       tunnelTTL,
			}
		},
	})
}

// Teardown deletes both Geneve devices.
func (Geneve) Teardown(_ context.Context, env *method.Env) error {
	return teardownTunnel(env, geneveSuffix)
}
