package kernel

import (
	"context"
	"fmt"
	"net"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
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

// Scale is what one tunnel is, a Geneve device per side with VNI vni+i,
// and how many fit: the address plan's, or fewer when the VNIs above vni
// run out.
func (Geneve) Scale(family string, opts method.Values) method.Scale {
	return maxVNIDevices(family, "Geneve device", opts.Int("vni"))
}

// geneveDevices are Geneve's tunnels: tunnel i is a Geneve device per
// side toward the peer's underlay address, VNI vni+i. The kernel's
// Geneve device has no local address: the route to the remote picks the
// source.
var geneveDevices = vniDevices{base: geneveSuffix, stem: "gn", link: func(env *method.Env, ep *testbed.Endpoint, name string, vni uint32) method.PlanLink {
	local, remote := ep.Addr(env.Family), env.Peer(ep).Addr(env.Family)
	return method.PlanLink{
		Link: &netlink.Geneve{
			LinkAttrs: netlink.LinkAttrs{Name: name},
			ID:        vni,
			Remote:    net.IP(remote.AsSlice()),
			Dport:     method.GenevePort,
			Ttl:       tunnelTTL,
		},
		Kind:   "geneve",
		Detail: fmt.Sprintf("from %s to %s", local, remote),
		Config: "CONFIG_GENEVE",
	}
}}

// Setup creates env.N() Geneve devices per side (one at N = 1), the
// measured one with the overlay address.
func (g Geneve) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(g, env.Options)
	if err != nil {
		return nil, err
	}
	return geneveDevices.setup(g, env, opts.Int("vni"), "geneve", g.Scale(env.Family, opts))
}

// Grow adds Geneve device env.N() on both sides (method.Grower).
func (g Geneve) Grow(_ context.Context, env *method.Env) (string, error) {
	opts, err := method.ParseOptions(g, env.Options)
	if err != nil {
		return "", err
	}
	return geneveDevices.grow(env, opts.Int("vni"), "Geneve device")
}

// Teardown deletes every Geneve device of both sides.
func (Geneve) Teardown(_ context.Context, env *method.Env) error {
	return geneveDevices.teardown(env)
}
