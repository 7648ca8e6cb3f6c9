package kernel

import (
	"context"
	"fmt"
	"net"

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

// Setup creates one VXLAN device per side with the overlay address on it.
func (VXLAN) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(VXLAN{}, env.Options)
	if err != nil {
		return nil, err
	}
	vni := opts.Int("vni")
	oa, ob := method.Overlay(env.Family)
	name := vxlanName(env)
	for i, ep := range env.Endpoints() {
		peer := env.Peer(ep)
		under, err := ep.NL.LinkByName(ep.Dev)
		if err != nil {
			return nil, fmt.Errorf("%s: find underlay %s: %w", ep.Side, ep.Dev, err)
		}
		vx := &netlink.Vxlan{
			LinkAttrs:    netlink.LinkAttrs{Name: name},
			VxlanId:      vni,
			VtepDevIndex: under.Attrs().Index,
			SrcAddr:      net.IP(ep.Addr(env.Family).AsSlice()),
			Group:        net.IP(peer.Addr(env.Family).AsSlice()),
			Port:         method.VXLANPort,
			Learning:     false,
			TTL:          64,
		}
		addr := oa
		if i == 1 {
			addr = ob
		}
		if err := method.AddLink(ep, vx, env.OverlayMTU, addr); err != nil {
			return nil, err
		}
	}
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
