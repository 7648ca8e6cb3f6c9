package ovs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// The tunnels dimension (Env.Tunnels, docs/scale.md): one tunnel of an
// ovs method is one tunnel port on each side's bridge <prefix>-ovs, with
// its own key and its own overlay pair (method.ScaleOverlay) on the
// bridge's internal port. The measured tunnel is the single tunnel's port
// <prefix>-tun (key, addresses and the NORMAL flow unchanged); tunnel i
// is port <prefix>-t<i, 4 hex digits> toward the same peer with key
// scaleKey(key, i). OpenFlow rules at priority 10 steer each one's
// traffic (its peer address's IP and ARP or neighbour solicitations from
// the internal port go out its port; what its port receives goes to the
// internal port), and its port is no-flood, so the NORMAL flow's
// broadcasts (the measured tunnel's ARP and neighbour discovery) leave
// only through <prefix>-tun as with one tunnel. The measured tunnel's
// packets are classified past those rules before NORMAL takes them.

// maxOVSTunnels is the ovs family's own bound: each port is one ovs-vsctl
// transaction, and each makes ovs-vswitchd reconfigure the whole bridge,
// so N ports cost O(N²) (see docs/performance.md, "Tunnels dimension").
const maxOVSTunnels = 1000

// Scale: one tunnel is one tunnel port (method.Scaler).
func (m *OVS) Scale(family string, _ method.Values) method.Scale {
	s := method.Scale{Unit: "tunnel port", Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family)}
	if maxOVSTunnels < s.Max {
		s.Max, s.Why = maxOVSTunnels, fmt.Sprintf("each port is an ovs-vsctl transaction that reconfigures the whole bridge, so N ports cost O(N²): %d took 18 minutes on the development machine", maxOVSTunnels)
	}
	return s
}

// ovsTunnel is one scaled tunnel as one side sets it up.
type ovsTunnel struct {
	Index        int
	Port         string
	Key          uint64
	Mine, Theirs netip.Prefix
}

// scaleKey is tunnel i's key: the next ones after key, wrapping within
// 1..keyMax, never key itself (i < keyMax-1).
func scaleKey(key uint64, i int, keyMax uint64) uint64 {
	return (key+uint64(i))%keyMax + 1
}

// scalePort names tunnel i's port: 6 bytes after the prefix.
func scalePort(prefix string, i int) string { return fmt.Sprintf("%s-t%04x", prefix, i) }

// scaleTunnels is the plan of side ep's tunnels with indexes from..to-1
// other than the measured one: pure, from env and the key.
func (m *OVS) scaleTunnels(env *method.Env, ep *testbed.Endpoint, key uint64, from, to int) []ovsTunnel {
	keyMax := uint64(1<<24 - 1)
	if m.tunnel == "gre" {
		keyMax = 1<<32 - 1
	}
	var ts []ovsTunnel
	for i := from; i < to; i++ {
		if i == env.Measured() {
			continue
		}
		a, b := method.ScaleOverlay(env.Family, i, env.Measured())
		mine, theirs := a, b
		if ep == env.B {
			mine, theirs = b, a
		}
		ts = append(ts, ovsTunnel{Index: i, Port: scalePort(env.Prefix, i), Key: scaleKey(key, i, keyMax), Mine: mine, Theirs: theirs})
	}
	return ts
}

// scaleFlows are tunnel t's OpenFlow rules on bridge of family.
func scaleFlows(t ovsTunnel, family string) string {
	var b strings.Builder
	if family == method.IPv6 {
		fmt.Fprintf(&b, "priority=10,ipv6,in_port=LOCAL,ipv6_dst=%s,actions=output:%s\n", t.Theirs.Addr(), t.Port)
		fmt.Fprintf(&b, "priority=10,icmp6,in_port=LOCAL,icmp_type=135,nd_target=%s,actions=output:%s\n", t.Theirs.Addr(), t.Port)
	} else {
		fmt.Fprintf(&b, "priority=10,ip,in_port=LOCAL,nw_dst=%s,actions=output:%s\n", t.Theirs.Addr(), t.Port)
		fmt.Fprintf(&b, "priority=10,arp,in_port=LOCAL,arp_tpa=%s,actions=output:%s\n", t.Theirs.Addr(), t.Port)
	}
	fmt.Fprintf(&b, "priority=10,in_port=%s,actions=LOCAL\n", t.Port)
	return b.String()
}

// ofctl runs ovs-ofctl against the side's ovs-vswitchd (its bridges'
// management sockets in the side directory), with input on its stdin.
func (s *ovsSide) ofctl(ctx context.Context, input string, args ...string) error {
	cmd := s.ep.Command(ctx, append([]string{"ovs-ofctl", "-vsyslog:off", "--timeout=10"}, args...)...)
	cmd.Env = append(cmd.Env, ovsEnv(s.dir)...)
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := s.ep.Start(cmd); err != nil {
		return err
	}
	err := cmd.Wait()
	s.ep.Forget(cmd)
	if err != nil {
		return &testbed.CommandError{Side: s.ep.Side, Argv: cmd.Args, Output: out.String(), Err: err}
	}
	return nil
}

// addTunnels adds ts on side s (its bridge integ of env's family), each
// timed by timer: the port (waiting until ovs-vswitchd has it), no-flood,
// its flows, its address on the internal port.
func (m *OVS) addTunnels(ctx context.Context, env *method.Env, s *ovsSide, integ string, ts []ovsTunnel, timer *method.AddTimer) error {
	link, err := s.ep.NL.LinkByName(integ)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", s.ep.Side, integ, err)
	}
	remote := env.Peer(s.ep).Addr(env.Family).String()
	timer.Start()
	for _, t := range ts {
		args := append([]string{"--", "add-port", integ, t.Port}, m.tunnelArgs(t.Port, env.Family, remote, t.Key)...)
		if _, err := s.vsctl(ctx, args...); err != nil {
			return s.vsd.Failure(fmt.Sprintf("add tunnel %d (port %s)", t.Index, t.Port), err)
		}
		if err := s.ofctl(ctx, "", "mod-port", integ, t.Port, "no-flood"); err != nil {
			return s.vsd.Failure(fmt.Sprintf("tunnel %d: no-flood on %s", t.Index, t.Port), err)
		}
		if err := s.ofctl(ctx, scaleFlows(t, env.Family), "add-flows", integ, "-"); err != nil {
			return s.vsd.Failure(fmt.Sprintf("tunnel %d: flows of %s", t.Index, t.Port), err)
		}
		if err := method.AddAddr(s.ep, link, t.Mine); err != nil {
			return err
		}
		timer.Done()
	}
	return nil
}

// setupScaled adds the tunnels other than the measured one on both sides
// and returns how long each took, side a's first.
func (m *OVS) setupScaled(ctx context.Context, env *method.Env, run *ovsRun, key uint64) ([]time.Duration, error) {
	var adds []time.Duration
	n := ovsNamesOf(env)
	for _, s := range run.sides {
		var timer method.AddTimer
		err := m.addTunnels(ctx, env, s, n.integ, m.scaleTunnels(env, s.ep, key, 0, env.N()), &timer)
		adds = append(adds, timer.Adds()...)
		if err != nil {
			return adds, err
		}
	}
	return adds, nil
}

// Grow adds tunnel env.N() (port, key, flows and addresses) on both
// sides while OVS runs (method.Grower). Teardown removes it with the
// bridge.
func (m *OVS) Grow(ctx context.Context, env *method.Env) (string, error) {
	m.mu.Lock()
	run := m.runs[env.Dir]
	m.mu.Unlock()
	if run == nil || len(run.sides) != 2 {
		return "", errors.New(m.Name() + ": grow: not set up")
	}
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return "", err
	}
	key := m.key(opts)
	n := ovsNamesOf(env)
	var t ovsTunnel
	for _, s := range run.sides {
		ts := m.scaleTunnels(env, s.ep, key, env.N(), env.N()+1)
		if err := m.addTunnels(ctx, env, s, n.integ, ts, nil); err != nil {
			return "", err
		}
		t = ts[0]
	}
	return fmt.Sprintf("tunnel port %s (key %d) with its flows and addresses on both bridges", t.Port, t.Key), nil
}
