package fou

import (
	"context"
	"fmt"

	"github.com/tunbench/tunbench/internal/method"
)

// The tunnels dimension (Env.Tunnels; method.Scaler). With payload gre,
// tunnel i is a gre (ip6gre) device of its own between the same underlay
// addresses with GRE key 1 + i, encapsulated to the same receive port,
// and ScaleOverlay's addresses; the measured tunnel is the single
// tunnel's device, without key. The one receive port per side serves
// them all: fou hands every packet to GRE, which finds the device by its
// key. With payload ipip there is one tunnel only: the kernel tells ipip
// and ip6tnl devices apart by their outer addresses alone (the encap
// port is no part of it), so a second device between the same two
// addresses is refused.

// fillerName is the device of tunnel i (not the measured one): the
// prefix, a dash, the two-letter stem ("fo" for fou, "gu" for gue) and i
// in four hex digits, longer than the measured device's suffix.
func fillerName(env *method.Env, e encap, i int) string {
	return fmt.Sprintf("%s-%s%04x", env.Prefix, e.name[:2], i)
}

// scale is what one tunnel of e is with payload opts and how many fit.
func scale(e encap, family string, opts method.Values) method.Scale {
	if opts.String("payload") == PayloadIPIP {
		dev := map[string]string{method.IPv4: "ipip", method.IPv6: "ip6tnl"}[family]
		return method.Scale{Unit: dev + " device in " + e.name, Max: 1,
			Why: "the kernel tells " + dev + " tunnels apart by their outer addresses alone, which every device over " +
				e.name + " shares: payload gre gives each tunnel a GRE key of its own"}
	}
	dev := map[string]string{method.IPv4: "gre", method.IPv6: "ip6gre"}[family]
	return method.Scale{Unit: dev + " device in " + e.name + " with its own GRE key",
		Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family)}
}

// planTunnels is the device of each of env's N tunnels on each side (a,
// b), in index order: the measured one plan's, the others keyed (payload
// gre only: scale). It is pure.
func planTunnels(m method.Method, e encap, env *method.Env, v method.Values) [2][]method.Plan {
	var out [2][]method.Plan
	for i := range env.N() {
		t := planTunnel(m, e, env, v, i)
		out[0], out[1] = append(out[0], t[0]), append(out[1], t[1])
	}
	return out
}

// planTunnel is tunnel i's device on each side.
func planTunnel(m method.Method, e encap, env *method.Env, v method.Values, i int) [2]method.Plan {
	var t [2]tunnel
	if i == env.Measured() {
		t, _ = plan(m, e, env, v)
	} else {
		oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
		t, _ = planDevice(m, e, env, v, fillerName(env, e, i), oa, ob, uint32(i)+1)
	}
	return [2]method.Plan{t[0].plan, t[1].plan}
}

// devices are every device e may have made on a side for env, Grow's
// included.
func devices(e encap, env *method.Env) []string {
	names := []string{env.Prefix + e.suffix}
	for i := range env.N() + 1 {
		names = append(names, fillerName(env, e, i))
	}
	return names
}

// grow adds tunnel env.N() on both sides (method.Grower): payload gre
// only.
func grow(m method.Method, e encap, env *method.Env) (string, error) {
	v, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return "", err
	}
	i := env.N()
	if s := scale(e, env.Family, v); i >= s.Max {
		return "", fmt.Errorf("%s: grow to %d tunnels: at most %d (%s)", m.Name(), i+1, s.Max, s.Why)
	}
	p := planTunnel(m, e, env, v, i)
	for s, ep := range env.Endpoints() {
		if err := p[s].Apply(env, ep); err != nil {
			return "", err
		}
	}
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	return fmt.Sprintf("added tunnel %d (%s, %s to %s) on both sides", i, scale(e, env.Family, v).Unit, oa.Addr(), ob.Addr()), nil
}

// Scale: with payload gre one tunnel is a gre (ip6gre) device with its
// own GRE key, bounded by the address plan; with payload ipip there is
// one.
func (FOU) Scale(family string, opts method.Values) method.Scale {
	return scale(fouEncap, family, opts)
}

// Scale: as FOU's.
func (GUE) Scale(family string, opts method.Values) method.Scale {
	return scale(gueEncap, family, opts)
}

// Grow adds one more keyed tunnel (payload gre).
func (m FOU) Grow(_ context.Context, env *method.Env) (string, error) { return grow(m, fouEncap, env) }

// Grow adds one more keyed tunnel (payload gre).
func (m GUE) Grow(_ context.Context, env *method.Env) (string, error) { return grow(m, gueEncap, env) }
