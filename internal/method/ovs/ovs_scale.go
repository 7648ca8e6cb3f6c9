package ovs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
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
//
// With option tunnels=flows one tunnel is a flow-keyed tunnel instead:
// one more port <prefix>-tf toward the peer with options:key=flow
// (no-flood), and for tunnel i the same rules setting tun_id to its key
// on the way out and matching it on the way in: one ovs-ofctl call per
// tunnel, no bridge reconfiguration.

// Values of option "tunnels".
const (
	scalePorts = "ports"
	scaleFlows = "flows"
)

// maxOVSTunnels is the ports mode's own bound: each port is one ovs-vsctl
// transaction, and each makes ovs-vswitchd reconfigure the whole bridge,
// so N ports cost O(N²) (see docs/performance.md, "Tunnels dimension").
const maxOVSTunnels = 1000

// Scale: one tunnel is one tunnel port, or with tunnels=flows one
// flow-keyed tunnel (method.Scaler).
func (m *OVS) Scale(family string, opts method.Values) method.Scale {
	// Cost, an average over a sweep: 100 ports set up in 27 s, 1,000 in
	// 1,060 s; 100 flow-keyed tunnels in 3.4 s, 1,000 in 146 s
	// (docs/performance.md). Each add costs more than the last.
	s := method.Scale{Unit: "tunnel port", Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family), Cost: 500 * time.Millisecond}
	if opts.String("tunnels") == scaleFlows {
		s.Unit = "flow-keyed tunnel (its own tun_id on one key=flow port)"
		s.Cost = 80 * time.Millisecond
		return s
	}
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
// other than the measured one: pure, from env, the key and whether they
// are flow-keyed (then all go through the key=flow port).
func (m *OVS) scaleTunnels(env *method.Env, ep *testbed.Endpoint, key uint64, flowKeyed bool, from, to int) []ovsTunnel {
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
		port := scalePort(env.Prefix, i)
		if flowKeyed {
			port = flowPort(env.Prefix)
		}
		ts = append(ts, ovsTunnel{Index: i, Port: port, Key: scaleKey(key, i, keyMax), Mine: mine, Theirs: theirs})
	}
	return ts
}

// flowPort names the key=flow port of tunnels=flows.
func flowPort(prefix string) string { return prefix + "-tf" }

// tunnelFlows are tunnel t's OpenFlow rules on the bridge, for family:
// through its own port, or with flowKeyed through the key=flow port t.Port
// with its key as tun_id.
func tunnelFlows(t ovsTunnel, family string, flowKeyed bool) string {
	var b strings.Builder
	out, in := "output:"+t.Port, "in_port="+t.Port
	if flowKeyed {
		out = fmt.Sprintf("set_field:%d->tun_id,%s", t.Key, out)
		in = fmt.Sprintf("%s,tun_id=%d", in, t.Key)
	}
	if family == method.IPv6 {
		fmt.Fprintf(&b, "priority=10,ipv6,in_port=LOCAL,ipv6_dst=%s,actions=%s\n", t.Theirs.Addr(), out)
		fmt.Fprintf(&b, "priority=10,icmp6,in_port=LOCAL,icmp_type=135,nd_target=%s,actions=%s\n", t.Theirs.Addr(), out)
	} else {
		fmt.Fprintf(&b, "priority=10,ip,in_port=LOCAL,nw_dst=%s,actions=%s\n", t.Theirs.Addr(), out)
		fmt.Fprintf(&b, "priority=10,arp,in_port=LOCAL,arp_tpa=%s,actions=%s\n", t.Theirs.Addr(), out)
	}
	fmt.Fprintf(&b, "priority=10,%s,actions=LOCAL\n", in)
	return b.String()
}

// ofctl runs ovs-ofctl against the side's ovs-vswitchd (its bridges'
// management sockets in the side directory), with input on its stdin.
func (s *ovsSide) ofctl(ctx context.Context, input string, args ...string) error {
	cmd := s.ep.Command(ctx, append([]string{"ovs-ofctl", "-vsyslog:off", "--timeout=" + ovsCommandTimeout}, args...)...)
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

// addPort adds tunnel port name with key (a number, or "flow") to
// bridge integ, waiting until ovs-vswitchd has it, and makes it no-flood.
func (m *OVS) addPort(ctx context.Context, env *method.Env, s *ovsSide, integ, name, key string) error {
	remote := env.Peer(s.ep).Addr(env.Family).String()
	args := append([]string{"--", "add-port", integ, name}, m.tunnelArgs(name, env.Family, remote, 0)...)
	for i, a := range args {
		if strings.HasPrefix(a, "options:key=") {
			args[i] = "options:key=" + key
		}
	}
	if _, err := s.vsctl(ctx, args...); err != nil {
		return s.vsd.Failure("add port "+name, err)
	}
	if err := s.ofctl(ctx, "", "mod-port", integ, name, "no-flood"); err != nil {
		return s.vsd.Failure("no-flood on "+name, err)
	}
	return nil
}

// addTunnels adds ts on side s (its bridge integ of env's family), each
// timed by timer: the port (unless flowKeyed: ts share the key=flow port
// named in their Port), its flows, its address on the internal port.
func (m *OVS) addTunnels(ctx context.Context, env *method.Env, s *ovsSide, integ string, ts []ovsTunnel, flowKeyed bool, timer *method.AddTimer) error {
	link, err := s.ep.NL.LinkByName(integ)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", s.ep.Side, integ, err)
	}
	timer.Start()
	for _, t := range ts {
		if !flowKeyed {
			if err := m.addPort(ctx, env, s, integ, t.Port, strconv.FormatUint(t.Key, 10)); err != nil {
				return fmt.Errorf("tunnel %d: %w", t.Index, err)
			}
		}
		if err := s.ofctl(ctx, tunnelFlows(t, env.Family, flowKeyed), "add-flows", integ, "-"); err != nil {
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
// With flowKeyed the key=flow port comes first, untimed.
func (m *OVS) setupScaled(ctx context.Context, env *method.Env, run *ovsRun, key uint64, flowKeyed bool) ([]time.Duration, error) {
	var adds []time.Duration
	n := ovsNamesOf(env)
	for _, s := range run.sides {
		if flowKeyed {
			if err := m.addPort(ctx, env, s, n.integ, flowPort(env.Prefix), "flow"); err != nil {
				return adds, err
			}
		}
		var timer method.AddTimer
		err := m.addTunnels(ctx, env, s, n.integ, m.scaleTunnels(env, s.ep, key, flowKeyed, 0, env.N()), flowKeyed, &timer)
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
	flowKeyed := opts.String("tunnels") == scaleFlows
	n := ovsNamesOf(env)
	if flowKeyed && env.N() == 1 {
		// Set up with one tunnel: no key=flow port yet.
		for _, s := range run.sides {
			if err := m.addPort(ctx, env, s, n.integ, flowPort(env.Prefix), "flow"); err != nil {
				return "", err
			}
		}
	}
	var t ovsTunnel
	for _, s := range run.sides {
		ts := m.scaleTunnels(env, s.ep, key, flowKeyed, env.N(), env.N()+1)
		if err := m.addTunnels(ctx, env, s, n.integ, ts, flowKeyed, nil); err != nil {
			return "", err
		}
		t = ts[0]
	}
	if flowKeyed {
		return fmt.Sprintf("flows for tun_id %d on port %s, and addresses, on both bridges", t.Key, t.Port), nil
	}
	return fmt.Sprintf("tunnel port %s (key %d) with its flows and addresses on both bridges", t.Port, t.Key), nil
}
