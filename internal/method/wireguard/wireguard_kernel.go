package wireguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// WireGuard is the kernel's WireGuard device, one per side, configured
// through wgctrl (generic netlink) with per-run keys and a preshared key;
// the outer packets use the measured family.
//
// Options: "port", the UDP listen port of both sides (default 51820).
type WireGuard struct {
	// handshakeTimeout, when not zero (tests only), replaces
	// wgHandshakeTimeout.
	handshakeTimeout time.Duration
}

// The kernel device travels to a remote agent.
func init() { testbed.RegisterWireTypes(&netlink.Wireguard{}) }

func (WireGuard) Name() string           { return "wireguard" }
func (WireGuard) Implementation() string { return "kernel wireguard (netlink, wgctrl)" }
func (WireGuard) Families() []string     { return []string{method.IPv4, method.IPv6} }

// Overhead: see wgOverhead (60 bytes over IPv4, 80 over IPv6).
func (WireGuard) Overhead(family string) int { return wgOverhead(family) }

// Requirements: the kernel device only; wgctrl replaces wg(8).
// Options declares the scenario options (see Option).
func (WireGuard) Options() []method.Option { return []method.Option{method.WGPortOption} }

// Listens declares the sockets a run opens (method.Listener): the kernel's
// WireGuard socket, on 0.0.0.0 and :: at the listen port (the device has
// a listen port and no address).
func (WireGuard) Listens(opts method.Values, _ string) []method.Listen {
	return []method.Listen{wildcardWG(opts, "kernel (wireguard device)", "a WireGuard device has a listen port and no address: the kernel opens it on 0.0.0.0 and ::")}
}

func (WireGuard) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_WIREGUARD", Module: "wireguard"}}
}

// Setup creates a WireGuard device on each side with the overlay MTU and
// address, configures keys and peers (side a env.N() of them: scale.go),
// and waits for the first handshake.
func (m WireGuard) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	sides, err := wgPlan(env, "wireguard")
	if err != nil {
		return nil, err
	}
	var ctl [2]wgControl
	var adds []time.Duration
	for i, s := range sides {
		link := &netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: s.dev, MTU: env.OverlayMTU}}
		plan := method.Plan{Links: []method.PlanLink{{Link: link, Config: "CONFIG_WIREGUARD", MTU: env.OverlayMTU, Addr: s.addr}}}
		if err := plan.Apply(env, s.ep); err != nil {
			return nil, err
		}
		ctl[i] = wgKernel{ep: s.ep, dev: s.dev}
		d, err := wgConfigure(ctl[i], s.cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: configure %s: %w", s.ep.Side, s.dev, err)
		}
		adds = append(adds, d...)
	}
	fail := func(i int, what string) error {
		return fmt.Errorf("%s: kernel wireguard: %s", sides[i].ep.Side, what)
	}
	if err := wgWaitHandshake(ctx, sides, ctl, orDefault(m.handshakeTimeout), fail); err != nil {
		return nil, err
	}
	return &method.Path{
		A:        sides[0].addr.Addr(),
		B:        sides[1].addr.Addr(),
		Devices:  map[string][]string{"a": {sides[0].dev, env.A.Dev}, "b": {sides[1].dev, env.B.Dev}},
		Variant:  "kernel",
		Datapath: method.DatapathKernel,
		Adds:     scaledAdds(env, adds),
	}, nil
}

// Teardown deletes both devices and the side directories with the keys.
func (WireGuard) Teardown(_ context.Context, env *method.Env) error {
	return errors.Join(
		method.DelLinks(env.A, wgDevName(env, env.A)),
		method.DelLinks(env.B, wgDevName(env, env.B)),
		wgRemoveDirs(env, "wireguard"),
	)
}

// Rekey forces a new handshake (method.Rekeyer; see wgRekey).
func (WireGuard) Rekey(_ context.Context, env *method.Env) (string, error) {
	return wgRekey(env, "wireguard", wgKernel{ep: env.A, dev: wgDevName(env, env.A)})
}
