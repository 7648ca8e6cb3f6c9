package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// The tunnels dimension (Env.Tunnels; method.Scaler) for gre, gretap,
// ip6gre, ipip and ip6ip6. Tunnel Measured() is the single tunnel of
// N = 1, unchanged (device name, addresses, key); the others are made
// the way each kind lets the kernel tell them apart:
//
//   - the gre family (keyedSet): a device per tunnel between the same two
//     underlay addresses, each with a GRE key of its own (the measured
//     tunnel's key, 0 for none, plus 1 + i), and ScaleOverlay's addresses;
//   - ipip and ip6ip6 (flowSet): the kernel tells these tunnels apart by
//     their outer addresses alone, so a second device between the same
//     two underlay addresses is refused (EEXIST). Rather than give every
//     tunnel underlay addresses of its own (on an ssh or kubernetes host
//     those would sit on the host's own interface, outside the run's
//     devices, where a killed run would leave them), each side gets one
//     flow-based (external, collect_md) device, as meshes that scale ipip
//     build it, and tunnel i is a route through it to the peer's address
//     of tunnel i carrying its own encapsulation ("encap ip dst PEER"),
//     with the side's address of tunnel i on the device. The peer's
//     kernel hands those packets to its device of the measured tunnel
//     (same outer addresses, the exact match wins over collect_md) and
//     delivers them to the address on its external device.
//
// Every device is named inside env.Prefix (fillerName), so "tunbench
// clean" finds what a killed run left; the routes and addresses live on
// those devices and go with them.

// fillerName is the device of tunnel i (not the measured one) of a method
// whose devices are named with stem: the prefix, a dash, the two-letter
// stem and i in four hex digits ("tb1a2b3c-gk0002"). Six bytes after the
// dash is longer than every measured tunnel's suffix, so no filler takes
// its name, and 0x8000 (the IPv6 plan's most tunnels, and Grow's index)
// fits.
func fillerName(prefix, stem string, i int) string { return fmt.Sprintf("%s-%s%04x", prefix, stem, i) }

// tunnelSet is how a kernel tunnel method makes env.N() tunnels, as data.
type tunnelSet interface {
	// base is what each side (a, b) needs before any tunnel but the
	// measured one: empty plans when nothing.
	base(env *method.Env) [2]method.Plan
	// plan is tunnel i's plan on each side (a, b); tunnel Measured() is
	// the single tunnel's (planTunnel). Pure.
	plan(env *method.Env, i int) [2]method.Plan
	// devices are every device the set may have made on a side for env,
	// Grow's included, in the order Teardown deletes them.
	devices(env *method.Env) []string
	// unit is one tunnel, for Grow's line.
	unit() string
}

// checkTunnels refuses more tunnels than s allows before anything is
// created (validation refuses them earlier; this guards a direct call).
func checkTunnels(m method.Method, env *method.Env, s method.Scale) error {
	if env.N() > s.Max {
		return fmt.Errorf("%s: %d tunnels: at most %d (one tunnel is one %s; %s)", m.Name(), env.N(), s.Max, s.Unit, s.Why)
	}
	return nil
}

// planTunnels is the whole plan of env's N tunnels on each side: the
// base, when there is more than one tunnel, then each tunnel in index
// order. It is pure; setupTunnels applies it one tunnel at a time.
func planTunnels(env *method.Env, set tunnelSet) (base [2]method.Plan, tunnels [2][]method.Plan) {
	if env.N() > 1 {
		base = set.base(env)
	}
	for i := range env.N() {
		p := set.plan(env, i)
		tunnels[0], tunnels[1] = append(tunnels[0], p[0]), append(tunnels[1], p[1])
	}
	return base, tunnels
}

// setupTunnels applies set's plan for env on side a, then on side b,
// timing each tunnel's add (Path.Adds). With one tunnel it does exactly
// what applying planTunnel on each side does. measured is the measured
// tunnel's description.
func setupTunnels(env *method.Env, set tunnelSet, measured kernelTunnel) (*method.Path, error) {
	base, tunnels := planTunnels(env, set)
	var adds []*method.AddTimer
	for s, ep := range env.Endpoints() {
		if err := base[s].Apply(env, ep); err != nil {
			return nil, err
		}
		timer := &method.AddTimer{}
		adds = append(adds, timer)
		timer.Start()
		for _, p := range tunnels[s] {
			if err := p.Apply(env, ep); err != nil {
				return nil, err
			}
			timer.Done()
		}
	}
	oa, ob := method.Overlay(env.Family)
	name := tunnelName(env, measured.suffix)
	path := &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: measured.kind,
	}
	if env.N() > 1 {
		path.Adds = append(adds[0].Adds(), adds[1].Adds()...)
	}
	return path, nil
}

// growTunnels adds tunnel env.N() on both sides (method.Grower), with the
// set's base first when Setup made one tunnel only.
func growTunnels(env *method.Env, set tunnelSet) (string, error) {
	i := env.N()
	if i >= method.MaxScaleTunnels(env.Family) {
		return "", fmt.Errorf("grow to %d tunnels: %s", i+1, method.ScaleWhy(env.Family))
	}
	p := set.plan(env, i)
	for s, ep := range env.Endpoints() {
		if i == 1 {
			if err := set.base(env)[s].Apply(env, ep); err != nil {
				return "", err
			}
		}
		if err := p[s].Apply(env, ep); err != nil {
			return "", err
		}
	}
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	return fmt.Sprintf("added tunnel %d (%s, %s to %s) on both sides", i, set.unit(), oa.Addr(), ob.Addr()), nil
}

// teardownTunnels deletes every device of set on both sides at once: the
// routes and addresses on them go with them. Missing ones are fine, so a
// partial Setup, or a second Teardown, is.
func teardownTunnels(env *method.Env, set tunnelSet) error {
	names := set.devices(env)
	return method.EachSide(env, func(ep *testbed.Endpoint) error { return method.DelLinks(ep, names...) })
}

// planDevice is planTunnel for a device called name with the overlay
// addresses oa and ob.
func planDevice(env *method.Env, kt kernelTunnel, name string, oa, ob netip.Prefix) [2]method.Plan {
	var plans [2]method.Plan
	for i, ep := range env.Endpoints() {
		local, remote := ep.Addr(kt.underlay), env.Peer(ep).Addr(kt.underlay)
		l := method.PlanLink{
			Kind:   kt.kind,
			Detail: fmt.Sprintf("from %s to %s", local, remote),
			Config: kt.config,
			MTU:    env.OverlayMTU,
			Addr:   [2]netip.Prefix{oa, ob}[i],
		}
		if kt.link != nil {
			l.Link = kt.link(name, net.IP(local.AsSlice()), net.IP(remote.AsSlice()))
		} else {
			l.Link = &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: name}, LinkType: kt.kind}
			kind, key := kt.kind, kt.ip6greKey
			l.Add = func(ep *testbed.Endpoint) error { return addIP6GRE(ep, kind, name, local, remote, key) }
		}
		plans[i] = method.Plan{Links: []method.PlanLink{l}}
	}
	return plans
}

// keyedSet is the gre family's tunnels: tunnel(k) is the device with GRE
// key k (0: none); the measured tunnel has key, tunnel i key + 1 + i.
type keyedSet struct {
	suffix, stem, kind string
	key                uint32
	tunnel             func(key uint32) kernelTunnel
}

// keyOf is tunnel i's GRE key.
func (s keyedSet) keyOf(i, measured int) uint32 {
	if i == measured {
		return s.key
	}
	return s.key + 1 + uint32(i)
}

func (keyedSet) base(*method.Env) [2]method.Plan { return [2]method.Plan{} }

func (s keyedSet) plan(env *method.Env, i int) [2]method.Plan {
	m := env.Measured()
	kt := s.tunnel(s.keyOf(i, m))
	if i == m {
		return planTunnel(env, kt)
	}
	oa, ob := method.ScaleOverlay(env.Family, i, m)
	return planDevice(env, kt, fillerName(env.Prefix, s.stem, i), oa, ob)
}

func (s keyedSet) devices(env *method.Env) []string {
	names := []string{tunnelName(env, s.suffix)}
	for i := range env.N() + 1 {
		names = append(names, fillerName(env.Prefix, s.stem, i))
	}
	return names
}

func (s keyedSet) unit() string { return s.kind + " device with its own GRE key" }

// keyedScale is the Scale of a gre-family method whose measured tunnel
// has GRE key key (0: none): the address plan bounds it, or the keys
// key+1 ... key+N running out of 32 bits.
func keyedScale(kind, family string, key uint32) method.Scale {
	s := method.Scale{Unit: kind + " device with its own GRE key", Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family)}
	if left := int64(^uint32(0)) - int64(key); left < int64(s.Max) {
		s.Max = int(max(left, 1))
		s.Why = fmt.Sprintf("tunnel i's GRE key is key %d + 1 + i, which must stay below 2^32: at most %d tunnels above key %d", key, s.Max, key)
	}
	return s
}

// flowSet is the ipip and ip6ip6 tunnels: the measured one is the single
// tunnel (measured), the others routes through one flow-based device per
// side (link, named env.Prefix+suffix), each with its own encapsulation.
type flowSet struct {
	measured kernelTunnel
	// suffix names the flow-based device; kind and config describe it.
	suffix, kind, config string
	link                 func(name string) netlink.Link
}

// flowDevice is the flow-based device of env.
func (s flowSet) flowDevice(env *method.Env) string { return tunnelName(env, s.suffix) }

func (s flowSet) base(env *method.Env) [2]method.Plan {
	var plans [2]method.Plan
	for i := range plans {
		plans[i] = method.Plan{Links: []method.PlanLink{{
			Link:   s.link(s.flowDevice(env)),
			Kind:   s.kind,
			Detail: "(external)",
			Config: s.config,
			MTU:    env.OverlayMTU,
		}}}
	}
	return plans
}

// plan of tunnel i but the measured one, on each side: its own address
// (alone, no prefix route) on the flow-based device and a route to the
// peer's through it that encapsulates toward the peer's underlay address,
// from the own address.
func (s flowSet) plan(env *method.Env, i int) [2]method.Plan {
	m := env.Measured()
	if i == m {
		return planTunnel(env, s.measured)
	}
	oa, ob := method.ScaleOverlay(env.Family, i, m)
	own := [2]netip.Addr{oa.Addr(), ob.Addr()}
	dev := s.flowDevice(env)
	var plans [2]method.Plan
	for side, ep := range env.Endpoints() {
		mine, theirs := own[side], own[1-side]
		plans[side] = method.Plan{
			Addrs: []method.PlanAddr{{Dev: dev, Addr: method.HostPrefix(mine)}},
			Routes: []method.PlanRoute{{Dev: dev, Route: netlink.Route{
				Dst:   testbed.PrefixNet(method.HostPrefix(theirs)),
				Src:   net.IP(mine.AsSlice()),
				Encap: &ipEncap{Dst: env.Peer(ep).Addr(s.measured.underlay), TTL: tunnelTTL},
			}}},
		}
	}
	return plans
}

func (s flowSet) devices(env *method.Env) []string {
	return []string{tunnelName(env, s.measured.suffix), s.flowDevice(env)}
}

func (s flowSet) unit() string {
	return "route with its own encapsulation through the " + s.kind + " device"
}

// flowScale is the Scale of ipip and ip6ip6: the address plan bounds it.
func flowScale(kind, family string) method.Scale {
	return method.Scale{
		Unit: "route with its own encapsulation (encap " + map[string]string{method.IPv4: "ip", method.IPv6: "ip6"}[family] +
			" dst PEER) through one external " + kind + " device",
		Max: method.MaxScaleTunnels(family),
		Why: method.ScaleWhy(family),
	}
}

// The lightweight tunnel attributes of "encap ip" and "encap ip6"
// (linux/lwtunnel.h: LWTUNNEL_IP_ID, _DST, _TTL; LWTUNNEL_IP6_HOPLIMIT is
// _TTL's number).
const (
	lwtunnelIPID  = 1
	lwtunnelIPDst = 2
	lwtunnelIPTTL = 4
)

// ipEncap is a route's lightweight tunnel encapsulation toward Dst for a
// flow-based ipip or ip6tnl device: what "encap ip id 0 dst DST ttl TTL"
// (IPv4) or "encap ip6 id 0 dst DST hoplimit TTL" (IPv6) sends.
// vishvananda/netlink has no IPv4 one, and its IP6tnlEncap sends an
// unaligned attribute.
type ipEncap struct {
	Dst netip.Addr
	TTL uint8
}

func init() { testbed.RegisterWireTypes(&ipEncap{}) }

func (e *ipEncap) Type() int {
	if e.Dst.Is4() {
		return nl.LWTUNNEL_ENCAP_IP
	}
	return nl.LWTUNNEL_ENCAP_IP6
}

func (e *ipEncap) Encode() ([]byte, error) {
	if !e.Dst.IsValid() {
		return nil, errors.New("encap ip: no destination")
	}
	var b []byte
	b = append(b, nl.NewRtAttr(lwtunnelIPID, make([]byte, 8)).Serialize()...)
	b = append(b, nl.NewRtAttr(lwtunnelIPDst, e.Dst.AsSlice()).Serialize()...)
	b = append(b, nl.NewRtAttr(lwtunnelIPTTL, []byte{e.TTL}).Serialize()...)
	return b, nil
}

func (e *ipEncap) Decode(buf []byte) error {
	attrs, err := nl.ParseRouteAttr(buf)
	if err != nil {
		return err
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case lwtunnelIPDst:
			if addr, ok := netip.AddrFromSlice(a.Value); ok {
				e.Dst = addr
			}
		case lwtunnelIPTTL:
			if len(a.Value) > 0 {
				e.TTL = a.Value[0]
			}
		case lwtunnelIPID:
			if len(a.Value) == 8 && binary.BigEndian.Uint64(a.Value) != 0 {
				return errors.New("encap ip: a tunnel id, which tunbench never sets")
			}
		}
	}
	return nil
}

// String is the encapsulation as "ip route" prints it.
func (e *ipEncap) String() string {
	if e.Dst.Is4() {
		return fmt.Sprintf("ip id 0 dst %s ttl %d", e.Dst, e.TTL)
	}
	return fmt.Sprintf("ip6 id 0 dst %s hoplimit %d", e.Dst, e.TTL)
}

func (e *ipEncap) Equal(x netlink.Encap) bool {
	o, ok := x.(*ipEncap)
	return ok && *o == *e
}

// The methods' tunnel sets.

func greSet() keyedSet {
	return keyedSet{suffix: greSuffix, stem: "gk", kind: "gre", tunnel: greTunnel}
}

func gretapSet(family string, key uint32) keyedSet {
	return keyedSet{suffix: gretapSuffix, stem: "gt", kind: gretapKind(family), key: key,
		tunnel: func(k uint32) kernelTunnel { return gretapTunnel(family, k) }}
}

func ip6greSet() keyedSet {
	return keyedSet{suffix: ip6greSuffix, stem: "6g", kind: "ip6gre", tunnel: ip6greTunnel}
}

func ipipSet() flowSet {
	return flowSet{measured: ipipTunnel(), suffix: "-ipmd", kind: "ipip", config: "CONFIG_NET_IPIP",
		link: func(name string) netlink.Link {
			return &netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: name}, FlowBased: true}
		}}
}

func ip6ip6Set() flowSet {
	return flowSet{measured: ip6ip6Tunnel(), suffix: "-6md", kind: "ip6tnl", config: "CONFIG_IPV6_TUNNEL",
		link: func(name string) netlink.Link {
			return &netlink.Ip6tnl{LinkAttrs: netlink.LinkAttrs{Name: name}, FlowBased: true}
		}}
}

// The methods' Grow (method.Grower).

func (GRE) Grow(_ context.Context, env *method.Env) (string, error) {
	return growTunnels(env, greSet())
}

func (g Gretap) Grow(_ context.Context, env *method.Env) (string, error) {
	opts, err := method.ParseOptions(g, env.Options)
	if err != nil {
		return "", err
	}
	key := uint32(opts.Uint64("key"))
	if uint64(key)+1+uint64(env.N()) > uint64(^uint32(0)) {
		return "", fmt.Errorf("grow to %d tunnels: %s", env.N()+1, keyedScale("gretap", env.Family, key).Why)
	}
	return growTunnels(env, gretapSet(env.Family, key))
}

func (IP6GRE) Grow(_ context.Context, env *method.Env) (string, error) {
	return growTunnels(env, ip6greSet())
}

func (IPIP) Grow(_ context.Context, env *method.Env) (string, error) {
	return growTunnels(env, ipipSet())
}

func (IP6IP6) Grow(_ context.Context, env *method.Env) (string, error) {
	return growTunnels(env, ip6ip6Set())
}
