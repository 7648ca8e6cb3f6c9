package kernel

import (
	"context"
	"net"
	"net/netip"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// VXLAN is the kernel's VXLAN device, unicast between the two underlay
// addresses, UDP port 4789, over an underlay of the measured family.
//
// Options: "vni" (default 42).
type VXLAN struct{}

func (VXLAN) Name() string           { return "vxlan" }
func (VXLAN) Implementation() string { return "kernel vxlan (netlink)" }
func (VXLAN) Families() []string     { return []string{method.IPv4, method.IPv6} }

// Overhead is outer IP + UDP (8) + VXLAN (8) + inner Ethernet (14).
func (VXLAN) Overhead(family string) int {
	if family == method.IPv6 {
		return 40 + 8 + 8 + 14
	}
	return 20 + 8 + 8 + 14
}

// Options declares the scenario options (see Option).
func (VXLAN) Options() []method.Option { return []method.Option{method.VNIOption} }

func (VXLAN) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_VXLAN", Module: "vxlan"}}
}

func vxlanName(env *method.Env) string { return env.Prefix + "-vx" }

// plan is VXLAN's plan for each side of env (a, b): one VXLAN device
// bound to the underlay device, toward the peer's underlay address, with
// the side's overlay address. It is pure.
func (VXLAN) plan(env *method.Env, vni int) [2]method.Plan {
	oa, ob := method.Overlay(env.Family)
	var plans [2]method.Plan
	for i, ep := range env.Endpoints() {
		peer := env.Peer(ep)
		vx := &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: vxlanName(env), MTU: env.OverlayMTU},
			VxlanId:   vni,
			SrcAddr:   net.IP(ep.Addr(env.Family).AsSlice()),
			Group:     net.IP(peer.Addr(env.Family).AsSlice()),
			Port:      method.VXLANPort,
			Learning:  false,
			TTL:       64,
		}
		plans[i] = method.Plan{Links: []method.PlanLink{{
			Link:   vx,
			Parent: ep.Dev,
			Config: "CONFIG_VXLAN",
			MTU:    env.OverlayMTU,
			Addr:   [2]netip.Prefix{oa, ob}[i],
		}}}
	}
	return plans
}

// Setup creates one VXLAN device per side with the overlay address on it.
func (m VXLAN) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	plans := m.plan(env, opts.Int("vni"))
	for i, ep := range env.Endpoints() {
		if err := plans[i].Apply(env, ep); err != nil {
			return nil, err
		}
	}
	oa, ob := method.Overlay(env.Family)
	name := vxlanName(env)
	return &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: "kernel",
	}, nil
}

// Teardown deletes both VXLAN devices.
func (VXLAN) Teardown(_ context.Context, env *method.Env) error {
	return method.EachSide(env, func(ep *testbed.Endpoint) error { return method.DelLinks(ep, vxlanName(env)) })
}
