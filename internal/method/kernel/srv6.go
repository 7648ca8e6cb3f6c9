package kernel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// SRv6 encapsulates the measured traffic in an outer IPv6 header with a
// segment routing header holding one segment: the far side's SID. The far
// side decapsulates with End.DX4 (IPv4 traffic, next hop its own overlay
// address) or End.DT6 in the local table (IPv6 traffic). The underlay is
// always IPv6. The overlay addresses live on lo as host addresses.
type SRv6 struct{}

// SIDs of the two sides: a prefix of their own, routed over the underlay.
var (
	SIDA = netip.MustParseAddr("2001:2:0:ff::1")
	SIDB = netip.MustParseAddr("2001:2:0:ff::2")
)

// tableLocal is the kernel's local routing table, where local addresses live
// (End.DT6 in table main cannot find them).
const tableLocal = 255

func (SRv6) Name() string       { return "srv6" }
func (SRv6) Families() []string { return []string{method.IPv4, method.IPv6} }
func (SRv6) Implementation() string {
	return "kernel seg6 encap + seg6local End.DX4/End.DT6 (netlink)"
}

// UnderlayFamily is IPv6: the segments are IPv6 whatever the measured
// family.
func (SRv6) UnderlayFamily(string) string { return method.IPv6 }

// Overhead is the outer IPv6 header (40) plus an SRH with one segment (8+16),
// whatever the inner family.
func (SRv6) Overhead(string) int { return 40 + 8 + 16 }

// Options declares the scenario options (see Option).
func (SRv6) Options() []method.Option { return nil }

func (SRv6) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_IPV6_SEG6_LWTUNNEL", Bool: true}}
}

// sids are the SIDs of sides a and b.
var sids = [2]netip.Addr{SIDA, SIDB}

// Scale is what one tunnel is, a segment (a SID per side, the encap
// route toward the far one and the decapsulation at each), and how many
// fit: the address plan's; the SID block holds far more, and the kernel
// bounds neither the seg6 routes nor the seg6local ones.
func (SRv6) Scale(family string, _ method.Values) method.Scale {
	// Cost: 1,000 segments set up in 0.68 s, torn down in 0.50 s.
	return method.Scale{Unit: "segment", Max: method.MaxScaleTunnels(family), Why: method.ScaleWhy(family), Cost: 1200 * time.Microsecond, Carries: true}
}

// srv6SID is side s's SID of tunnel i: the single tunnel's (SIDA, SIDB)
// for the measured one, 2001:2:0:ff:a::i and 2001:2:0:ff:b::i for the
// others, all in the SID block 2001:2:0:ff::/64.
func srv6SID(s, i, measured int) netip.Addr {
	if i == measured {
		return sids[s]
	}
	a := SIDA.As16()
	a[8], a[9] = 0, 0x0a+byte(s)
	a[12], a[13], a[14], a[15] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
	return netip.AddrFrom16(a)
}

// plan is SRv6's plan for each side of env (a, b), one per tunnel:
// tunnel i's (tunnel) in index order. It is pure.
func (m SRv6) plan(env *method.Env) [][2]method.Plan {
	plans := make([][2]method.Plan, env.N())
	for i := range plans {
		plans[i] = m.tunnel(env, i)
	}
	return plans
}

// tunnel is tunnel i's plan for each side of env (a, b): the overlay
// host address on lo, a route to the peer's SID over the underlay, an
// encap route to the peer's overlay address, and a seg6local route that
// decapsulates packets for its own SID. The measured tunnel has the
// single tunnel's SIDs and addresses, the others their own (srv6SID,
// method.ScaleOverlay). It is pure.
func (SRv6) tunnel(env *method.Env, t int) [2]method.Plan {
	oa, ob := method.ScaleOverlay(env.Family, t, env.Measured())
	overlay := [2]netip.Addr{oa.Addr(), ob.Addr()}
	var plans [2]method.Plan
	for i, ep := range env.Endpoints() {
		mine, theirs := overlay[i], overlay[1-i]
		peerSID, ownSID := srv6SID(1-i, t, env.Measured()), srv6SID(i, t, env.Measured())
		var gw net.IP
		if peer := env.Peer(ep); peer != nil {
			gw = net.IP(peer.Addr6.Addr().AsSlice())
		}
		dev := ""
		if ep != nil {
			dev = ep.Dev
		}
		// Packets to our own SID are decapsulated and delivered locally.
		local := &netlink.SEG6LocalEncap{}
		if env.Family == method.IPv6 {
			local.Action = nl.SEG6_LOCAL_ACTION_END_DT6
			local.Flags[nl.SEG6_LOCAL_TABLE] = true
			local.Table = tableLocal
		} else {
			local.Action = nl.SEG6_LOCAL_ACTION_END_DX4
			local.Flags[nl.SEG6_LOCAL_NH4] = true
			local.InAddr = net.IP(mine.AsSlice())
		}
		plans[i] = method.Plan{
			Addrs: []method.PlanAddr{{Dev: "lo", Addr: method.HostPrefix(mine)}},
			Routes: []method.PlanRoute{
				// The peer's SID is reached over the underlay.
				{Dev: dev, Route: netlink.Route{
					Dst: testbed.PrefixNet(method.HostPrefix(peerSID)),
					Gw:  gw,
				}},
				// Traffic to the peer's overlay address is encapsulated
				// toward its SID. The kernel subtracts the encapsulation
				// (outer header and SRH) from the route's MTU, so the
				// route carries the underlay MTU and the inner packets
				// get exactly env.OverlayMTU.
				{Dev: dev, Route: netlink.Route{
					Dst: testbed.PrefixNet(method.HostPrefix(theirs)),
					Src: net.IP(mine.AsSlice()),
					MTU: env.OverlayMTU + (SRv6{}).Overhead(env.Family),
					Encap: &netlink.SEG6Encap{
						Mode:     nl.SEG6_IPTUN_MODE_ENCAP,
						Segments: []net.IP{net.IP(peerSID.AsSlice())},
					},
				}},
				{Dev: dev, Route: netlink.Route{
					Dst:   testbed.PrefixNet(method.HostPrefix(ownSID)),
					Encap: local,
				}},
			},
		}
	}
	return plans
}

// Setup applies the plan on each side: every tunnel of side a, timed,
// then side b's.
func (m SRv6) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	// The segments are IPv6 whatever the measured family: both sides need
	// an IPv6 underlay address (an ssh site names it with ipv6:).
	for _, ep := range env.Endpoints() {
		if !ep.Addr6.IsValid() {
			return nil, fmt.Errorf("srv6: %s has no IPv6 underlay address on %s: SRv6 carries every family over IPv6; give the site one (ssh: ipv6: on the site)", hostName(ep), ep.Dev)
		}
	}
	if err := checkTunnels(m, env, m.Scale(env.Family, method.Values{})); err != nil {
		return nil, err
	}
	plans := m.plan(env)
	var adds []time.Duration
	for i, ep := range env.Endpoints() {
		var t method.AddTimer
		t.Start()
		for _, p := range plans {
			if err := p[i].Apply(env, ep); err != nil {
				return nil, err
			}
			t.Done()
		}
		adds = append(adds, t.Adds()...)
	}
	oa, ob := method.Overlay(env.Family)
	p := &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}},
		Variant: map[string]string{method.IPv4: "End.DX4", method.IPv6: "End.DT6"}[env.Family],
	}
	if env.N() > 1 {
		p.Adds = adds
	}
	return p, nil
}

// Grow adds tunnel env.N() on both sides (method.Grower).
func (m SRv6) Grow(_ context.Context, env *method.Env) (string, error) {
	if err := growRoom(env); err != nil {
		return "", err
	}
	i := env.N()
	plans := m.tunnel(env, i)
	for s, ep := range env.Endpoints() {
		if err := plans[s].Apply(env, ep); err != nil {
			return "", err
		}
	}
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	return fmt.Sprintf("added segment %d (SIDs %s and %s, %s - %s) on both sides",
		i, srv6SID(0, i, env.Measured()), srv6SID(1, i, env.Measured()), oa.Addr(), ob.Addr()), nil
}

// Teardown takes the plan back, every tunnel's at once, and the one Grow
// added where its address is on lo: the routes and the lo addresses go
// with the namespace anyway, but a method leaves the testbed as it found
// it.
func (m SRv6) Teardown(_ context.Context, env *method.Env) error {
	plans := m.plan(env)
	grown := m.tunnel(env, env.N())
	var errs []error
	for i, ep := range env.Endpoints() {
		side := make([]method.Plan, 0, len(plans)+1)
		for _, p := range plans {
			side = append(side, p[i])
		}
		if hasAddr(ep, "lo", grown[i].Addrs[0].Addr) {
			side = append(side, grown[i])
		}
		errs = append(errs, method.JoinPlans(side...).Undo(ep))
	}
	return errors.Join(errs...)
}

// hasAddr reports whether device dev of ep has address a.
func hasAddr(ep *testbed.Endpoint, dev string, a netip.Prefix) bool {
	if ep == nil || ep.NL == nil {
		return false
	}
	link, err := ep.NL.LinkByName(dev)
	if err != nil {
		return false
	}
	addrs, err := ep.NL.AddrList(link, method.FamilyOf(a.Addr()))
	if err != nil {
		return false
	}
	for _, x := range addrs {
		if x.IP.Equal(net.IP(a.Addr().AsSlice())) {
			return true
		}
	}
	return false
}

// hostName names ep's side and, when it is on another machine, that host.
func hostName(ep *testbed.Endpoint) string {
	if ep.Host != "" {
		return ep.Side + " (host " + ep.Host + ")"
	}
	return ep.Side
}
