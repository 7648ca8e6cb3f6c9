package kernel

import (
	"context"
	"net"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// VXLAN is the kernel's VXLAN device, unicast between the two underlay
// addresses, UDP port 4789, over an underlay of the measured family.
//
// Options: "vni" (default 42) and "scale", what one tunnel of the
// tunnels dimension is: a VXLAN device of its own per side (devices, the
// default: VNI vni+i, its own overlay addresses and route) or an FDB
// remote of one device per side (fdb; vxlanfdb.go).
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

// Values of the scale option.
const (
	scaleDevices = "devices"
	scaleFDB     = "fdb"
)

// vxlanScaleOption says what one tunnel of the tunnels dimension is.
var vxlanScaleOption = method.Option{Name: "scale", Default: scaleDevices, Values: []string{scaleDevices, scaleFDB},
	Help: "what one tunnel of the tunnels dimension is: a VXLAN device of its own per side, with VNI vni+i (devices), or a remote in the FDB of one device per side (fdb)"}

// Options declares the scenario options (see Option).
func (VXLAN) Options() []method.Option { return []method.Option{method.VNIOption, vxlanScaleOption} }

func (VXLAN) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_VXLAN", Module: "vxlan"}}
}

// Scale is what one tunnel is (a VXLAN device, or an FDB remote with
// scale=fdb) and how many fit: the address plan's, or with devices
// fewer when the VNIs above vni run out. The kernel bounds neither (a
// VXLAN device's FDB has no limit unless maxaddress is set).
func (VXLAN) Scale(family string, opts method.Values) method.Scale {
	if opts.String("scale") == scaleFDB {
		// Cost: 10,000 FDB remotes set up in 1.21 s, removed in 0.1 s.
		return method.Scale{Unit: "FDB remote", Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family), Cost: 200 * time.Microsecond}
	}
	return maxVNIDevices(family, "VXLAN device", opts.Int("vni"))
}

func vxlanName(env *method.Env) string { return env.Prefix + "-vx" }

// vxlanDevices are the tunnels of scale=devices: tunnel i is a VXLAN
// device per side, bound to the underlay device, toward the peer's
// underlay address, VNI vni+i, named tb<id>-vx and four hex digits.
var vxlanDevices = vniDevices{base: "-vx", stem: "vx", link: func(env *method.Env, ep *testbed.Endpoint, name string, vni uint32) method.PlanLink {
	return method.PlanLink{
		Link: &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: name, MTU: env.OverlayMTU},
			VxlanId:   int(vni),
			SrcAddr:   net.IP(ep.Addr(env.Family).AsSlice()),
			Group:     net.IP(env.Peer(ep).Addr(env.Family).AsSlice()),
			Port:      method.VXLANPort,
			Learning:  false,
			TTL:       64,
		},
		Parent: ep.Dev,
		Config: "CONFIG_VXLAN",
	}
}}

// Setup creates env.N() tunnels: VXLAN devices (one per side at N = 1,
// the measured one with the overlay address), or with scale=fdb one
// device per side with N FDB remotes.
func (m VXLAN) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	if opts.String("scale") == scaleFDB {
		return vxlanFDB(m, env, opts.Int("vni"), m.Scale(env.Family, opts))
	}
	return vxlanDevices.setup(m, env, opts.Int("vni"), "kernel", m.Scale(env.Family, opts))
}

// Grow adds tunnel env.N() on both sides: a VXLAN device, or an FDB
// remote (method.Grower).
func (m VXLAN) Grow(_ context.Context, env *method.Env) (string, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return "", err
	}
	if opts.String("scale") == scaleFDB {
		return growVXLANFDB(env)
	}
	return vxlanDevices.grow(env, opts.Int("vni"), "VXLAN device")
}

// Teardown deletes the VXLAN devices of both sides (with scale=fdb, the
// FDB and neighbour entries go with the device).
func (m VXLAN) Teardown(_ context.Context, env *method.Env) error {
	opts, err := method.ParseOptions(m, env.Options)
	if err == nil && opts.String("scale") == scaleFDB {
		return teardownVXLANFDB(env)
	}
	return vxlanDevices.teardown(env)
}
