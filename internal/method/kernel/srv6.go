package kernel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

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

// plan is SRv6's plan for each side of env (a, b): the overlay host
// address on lo, a route to the peer's SID over the underlay, an encap
// route to the peer's overlay address, and a seg6local route that
// decapsulates packets for its own SID. It is pure.
func (SRv6) plan(env *method.Env) [2]method.Plan {
	oa, ob := method.Overlay(env.Family)
	overlay := [2]netip.Addr{oa.Addr(), ob.Addr()}
	var plans [2]method.Plan
	for i, ep := range env.Endpoints() {
		mine, theirs := overlay[i], overlay[1-i]
		peerSID, ownSID := sids[1-i], sids[i]
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

// Setup applies the plan on each side.
func (m SRv6) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	// The segments are IPv6 whatever the measured family: both sides need
	// an IPv6 underlay address (an ssh site names it with ipv6:).
	for _, ep := range env.Endpoints() {
		if !ep.Addr6.IsValid() {
			return nil, fmt.Errorf("srv6: %s has no IPv6 underlay address on %s: SRv6 carries every family over IPv6; give the site one (ssh: ipv6: on the site)", hostName(ep), ep.Dev)
		}
	}
	plans := m.plan(env)
	for i, ep := range env.Endpoints() {
		if err := plans[i].Apply(env, ep); err != nil {
			return nil, err
		}
	}
	oa, ob := method.Overlay(env.Family)
	return &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}},
		Variant: map[string]string{method.IPv4: "End.DX4", method.IPv6: "End.DT6"}[env.Family],
	}, nil
}

// Teardown takes the plan back: the routes and the lo addresses go with
// the namespace anyway, but a method leaves the testbed as it found it.
func (m SRv6) Teardown(_ context.Context, env *method.Env) error {
	plans := m.plan(env)
	var errs []error
	for i, ep := range env.Endpoints() {
		errs = append(errs, plans[i].Undo(ep))
	}
	return errors.Join(errs...)
}

// hostName names ep's side and, when it is on another machine, that host.
func hostName(ep *testbed.Endpoint) string {
	if ep.Host != "" {
		return ep.Side + " (host " + ep.Host + ")"
	}
	return ep.Side
}
