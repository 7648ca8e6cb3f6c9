package l2tp

import (
	"context"
	"fmt"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
)

// The tunnels dimension (Env.Tunnels; method.Scaler): tunnel i is session
// i of the one L2TPv3 tunnel between the endpoints, with its own session
// ID, its own l2tpeth device and ScaleOverlay's addresses; the measured
// session is the single tunnel's (device name, session ID, addresses).
// Sessions rather than tunnels: RFC 3931 multiplexes sessions in a
// tunnel, the kernel demultiplexes them by session ID alone, and
// deleting the tunnel deletes them all, so a killed run leaves nothing
// more than with one session.

// sessionName is session i's l2tpeth device: the single tunnel's name for
// the measured one, else the prefix, "-l2" and i in four hex digits
// (longer than "l2tp", so never its name).
func sessionName(env *method.Env, i int) string {
	if i == env.Measured() {
		return devName(env)
	}
	return fmt.Sprintf("%s-l2%04x", env.Prefix, i)
}

// sessionID is session i's ID when the measured session's is measuredID
// (ids: 1 to 65534): session i's own is (i+1)<<16 | measuredID, unique
// in the run and apart from every other run's (which differ in the low
// 16 bits) up to i = 65534.
func sessionID(measuredID uint32, i, measured int) uint32 {
	if i == measured {
		return measuredID
	}
	return uint32(i+1)<<16 | measuredID
}

// sessionsLeft names one of env's session devices still on ep (Grow's
// included), "" when none is.
func sessionsLeft(env *method.Env, ep *testbed.Endpoint) (string, error) {
	links, err := nic.Dump(ep.NL.LinkList)
	if err != nil {
		return "", fmt.Errorf("%s: list links: %w", ep.Side, err)
	}
	names := map[string]bool{}
	for i := range env.N() + 1 {
		names[sessionName(env, i)] = true
	}
	names[devName(env)] = true
	for _, l := range links {
		if names[l.Attrs().Name] {
			return l.Attrs().Name, nil
		}
	}
	return "", nil
}

// Scale: one tunnel is a session with its own session ID and l2tpeth
// device in the one L2TPv3 tunnel; the address plan bounds them (the
// session IDs would last to 65535).
func (L2TPv3) Scale(family string, _ method.Values) method.Scale {
	return method.Scale{Unit: "session (its own session ID and l2tpeth device) in one L2TPv3 tunnel",
		Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family)}
}

// Grow adds session env.N() to the tunnel on both sides.
func (m L2TPv3) Grow(_ context.Context, env *method.Env) (string, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return "", err
	}
	i := env.N()
	if i >= method.MaxScaleTunnels(env.Family) {
		return "", fmt.Errorf("l2tpv3: grow to %d tunnels: %s", i+1, method.ScaleWhy(env.Family))
	}
	encap, cookieLen, mtu := m.shape(env, opts)
	p := m.planSession(env, encap, cookieLen, mtu, i)
	for side, ep := range env.Endpoints() {
		if err := p[side].Apply(env, ep); err != nil {
			return "", err
		}
	}
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	return fmt.Sprintf("added session %d (%s, %s to %s) on both sides", i, sessionName(env, i), oa.Addr(), ob.Addr()), nil
}
