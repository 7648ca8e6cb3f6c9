package method

import (
	"context"
	"fmt"
	"net"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// VXLAN is the kernel's VXLAN device, unicast between the two underlay
// addresses, UDP port 4789, over an underlay of the measured family.
//
// Options: "vni" (default 42).
type VXLAN struct{}

// VXLANPort is the IANA VXLAN port.
const VXLANPort = 4789

func (VXLAN) Name() string           { return "vxlan" }
func (VXLAN) Implementation() string { return "kernel vxlan (netlink)" }
func (VXLAN) Families() []string     { return []string{IPv4, IPv6} }

// Overhead is outer IP + UDP (8) + VXLAN (8) + inner Ethernet (14).
func (VXLAN) Overhead(family string) int {
	if family == IPv6 {
		return 40 + 8 + 8 + 14
	}
	return 20 + 8 + 8 + 14
}

// Options declares the scenario options (see Option).
func (VXLAN) Options() []Option { return []Option{vniOption} }

func (VXLAN) Requirements() []Requirement { return []Requirement{{Kernel: "CONFIG_VXLAN"}} }

func vxlanName(env *Env) string { return env.Prefix + "-vx" }

// Setup creates one VXLAN device per side with the overlay address on it.
func (VXLAN) Setup(_ context.Context, env *Env) (*Path, error) {
	opts, err := ParseOptions(VXLAN{}, env.Options)
	if err != nil {
		return nil, err
	}
	vni := opts.Int("vni")
	oa, ob := Overlay(env.Family)
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
			Port:         VXLANPort,
			Learning:     false,
			TTL:          64,
		}
		addr := oa
		if i == 1 {
			addr = ob
		}
		if err := addLink(ep, vx, env.OverlayMTU, addr); err != nil {
			return nil, err
		}
	}
	return &Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: "kernel",
	}, nil
}

// Teardown deletes both VXLAN devices.
func (VXLAN) Teardown(_ context.Context, env *Env) error {
	return eachSide(env, func(ep *testbed.Endpoint) error { return delLinks(ep, vxlanName(env)) })
}

// Portable: everything goes through the endpoints' netlink.
func (VXLAN) Portable() {}
