package kernel

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The tunnels dimension of the VNI tunnels (vxlan with scale=devices,
// geneve): tunnel i is a device of its own per side, with VNI vni+i, the
// overlay addresses method.ScaleOverlay gives it (their prefix is the
// tunnel's route) and a name of its own. The measured tunnel is the
// single tunnel's device, unchanged: its name, its addresses, no group.
// Every other device is in a link group of the run (vniGroup), so that
// Teardown deletes them all in one request: deleting a device waits for
// an RCU grace period under the RTNL lock, about 18 ms here, which is 18 s
// for a thousand devices one by one and 0.2 s as one group.

// vniDevices says how a VNI method makes the device of one tunnel.
type vniDevices struct {
	// base is the name suffix of the measured tunnel's device ("-vx");
	// stem names the others (fillerName: "-vx" + 4 hex digits of the
	// index).
	base, stem string
	// link is side ep's device of tunnel i, called name, with VNI vni.
	link func(env *method.Env, ep *testbed.Endpoint, name string, vni uint32) method.PlanLink
}

// name is the device of tunnel i.
func (d vniDevices) name(env *method.Env, i int) string {
	if i == env.Measured() {
		return env.Prefix + d.base
	}
	return fillerName(env.Prefix, d.stem, i)
}

// maxVNIDevices is the most tunnels a VNI method sets up with first VNI
// vni: the address plan's, or fewer when the VNIs run out first (the
// tunnel Grow adds needs one more).
func maxVNIDevices(family, unit string, vni int) method.Scale {
	// Cost: 1,000 vxlan devices set up in 2.8 s and torn down as one
	// link group in 0.97 s here (docs/performance.md).
	s := method.Scale{Unit: unit, Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family), Cost: 4 * time.Millisecond, Carries: true}
	if room := 1<<24 - 1 - vni; room < s.Max {
		s.Max = room
		s.Why = fmt.Sprintf("each %s has its own VNI, from vni %d up to 16777215 (24 bits), one kept for the tunnel a reconfiguration adds", unit, vni)
	}
	return s
}

// vniGroup is the link group of a run's scaled devices: a hash of its
// device prefix, never 0 (the default group).
func vniGroup(env *method.Env) uint32 {
	h := fnv.New32a()
	h.Write([]byte(env.Prefix))
	return h.Sum32() | 1<<31
}

// plan is the plan of tunnel i on each side (a, b): one device with its
// VNI and overlay address. It is pure.
func (d vniDevices) plan(env *method.Env, vni, i int) [2]method.Plan {
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	var plans [2]method.Plan
	for s, ep := range env.Endpoints() {
		l := d.link(env, ep, d.name(env, i), uint32(vni+i))
		l.MTU = env.OverlayMTU
		l.Addr = [2]netip.Prefix{oa, ob}[s]
		if i != env.Measured() {
			l.Link.Attrs().Group = vniGroup(env)
		}
		plans[s] = method.Plan{Links: []method.PlanLink{l}}
	}
	return plans
}

// setup creates env.N() tunnels of m, side a's then side b's, each
// timed.
func (d vniDevices) setup(m method.Method, env *method.Env, vni int, variant string, scale method.Scale) (*method.Path, error) {
	if err := checkTunnels(m, env, scale); err != nil {
		return nil, err
	}
	plans := make([][2]method.Plan, env.N())
	for i := range plans {
		plans[i] = d.plan(env, vni, i)
	}
	var adds []time.Duration
	for s, ep := range env.Endpoints() {
		var t method.AddTimer
		t.Start()
		for i := range plans {
			if err := plans[i][s].Apply(env, ep); err != nil {
				return nil, err
			}
			t.Done()
		}
		adds = append(adds, t.Adds()...)
	}
	oa, ob := method.Overlay(env.Family)
	name := env.Prefix + d.base
	p := &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: variant,
	}
	if env.N() > 1 {
		p.Adds = adds
	}
	return p, nil
}

// growRoom refuses to grow a set-up that fills the address plan: the
// tunnel Grow adds would have addresses outside it (method.ScaleOverlay).
func growRoom(env *method.Env) error {
	if env.N() >= method.MaxScaleTunnels(env.Family) {
		return fmt.Errorf("grow: %d tunnels fill the address plan (%s): no room for one more; measure the reconfiguration at fewer tunnels", env.N(), method.ScaleWhy(env.Family))
	}
	return nil
}

// grow adds tunnel env.N() on both sides.
func (d vniDevices) grow(env *method.Env, vni int, unit string) (string, error) {
	if err := growRoom(env); err != nil {
		return "", err
	}
	i := env.N()
	plans := d.plan(env, vni, i)
	for s, ep := range env.Endpoints() {
		if err := plans[s].Apply(env, ep); err != nil {
			return "", err
		}
	}
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	return fmt.Sprintf("added %s %s (VNI %d, %s - %s) on both sides", unit, d.name(env, i), vni+i, oa, ob), nil
}

// teardown deletes every device of the run's group and the measured
// tunnel's device on both sides; what is gone already is fine.
func (d vniDevices) teardown(env *method.Env) error {
	return method.EachSide(env, func(ep *testbed.Endpoint) error {
		if ep == nil || ep.NL == nil {
			return nil
		}
		return errors.Join(delGroup(ep, env.Prefix, vniGroup(env)), method.DelLinks(ep, env.Prefix+d.base))
	})
}

// delGroup deletes the devices of link group g in ep's namespace, all in
// one request ("ip link del group G") when every device of the group is
// the run's (named prefix...), else the run's one by one: a host's own
// devices are never touched.
func delGroup(ep *testbed.Endpoint, prefix string, g uint32) error {
	links, err := nic.Dump(ep.NL.LinkList)
	if err != nil {
		return fmt.Errorf("%s: list links: %w", ep.Side, err)
	}
	var ours []string
	foreign := false
	for _, l := range links {
		if l.Attrs().Group != g {
			continue
		}
		if strings.HasPrefix(l.Attrs().Name, prefix+"-") {
			ours = append(ours, l.Attrs().Name)
		} else {
			foreign = true
		}
	}
	switch {
	case len(ours) == 0:
		return nil
	case foreign:
		return method.DelLinks(ep, ours...)
	}
	if _, err := opDelLinkGroup.Call(context.Background(), ep, g); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("%s: delete link group %d (%d devices): %w", ep.Side, g, len(ours), err)
	}
	return nil
}

// opDelLinkGroup deletes every device of a link group in the endpoint's
// namespace with one RTM_DELLINK carrying IFLA_GROUP, which the netlink
// package cannot send: what "ip link del group G" sends. The kernel
// unregisters them as one batch, with one RCU grace period.
var opDelLinkGroup = testbed.NewOp("kernel.del-link-group", func(_ context.Context, ep *testbed.Endpoint, g uint32) (struct{}, error) {
	req := nl.NewNetlinkRequest(unix.RTM_DELLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(g)))
	return struct{}{}, ep.Do(func() error {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
})
