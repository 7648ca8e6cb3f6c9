package kernel

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// vxlan with scale=fdb: one VXLAN device per side with no fixed remote
// (an FDB-driven VTEP, as an EVPN or flannel node is), and one FDB remote
// per tunnel. Tunnel i is, on each side, a unicast FDB entry for the far
// end's MAC toward its underlay address and a permanent neighbour entry
// that resolves the far end's overlay address to that MAC, so that every
// packet the device sends is one lookup in a table of N entries. The
// measured tunnel's entries point at the peer: its MAC is the peer
// device's own, its overlay address the single tunnel's (method.Overlay).
// The others are fillers: their far ends are MACs nobody has, with
// overlay addresses from method.ScaleOverlay (the scale block is routed
// onto the device), toward distinct underlay addresses that nothing
// answers and no route leads to (fdbFiller). No entry is the all-zero
// MAC: "bridge fdb append 00:00:00:00:00:00 dst X" makes X a flood
// destination, and every broadcast, and every unknown unicast, would be
// sent once to each of them.

// The underlay addresses of the filler remotes: unused blocks of the
// benchmarking ranges (the testbeds' underlays are 198.18.0.0/24 and
// 2001:2::/64), one address per filler.
var (
	fdbFillers4 = netip.MustParsePrefix("198.18.128.0/18")
	fdbFillers6 = netip.MustParsePrefix("2001:2:0:fd::/64")
)

// fdbFiller is the underlay address of filler tunnel i (i != measured):
// the (i)th address of the block, or the (i-1)th above the measured one,
// so that n tunnels use n addresses (16384 fill the IPv4 /18).
func fdbFiller(family string, i, measured int) netip.Addr {
	j := i
	if i > measured {
		j--
	}
	block := fdbFillers4
	if family == method.IPv6 {
		block = fdbFillers6
	}
	a := block.Addr().As16()
	binary.BigEndian.PutUint64(a[8:], binary.BigEndian.Uint64(a[8:])+uint64(j))
	if family == method.IPv6 {
		return netip.AddrFrom16(a)
	}
	return netip.AddrFrom16(a).Unmap()
}

// fdbMAC is the MAC of side s's end (0 a, 1 b) of tunnel i: locally
// administered, 02:74:62 ("tb"), 0a or 0b, and the index.
func fdbMAC(s, i int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x74, 0x62, 0x0a + byte(s), byte(i >> 8), byte(i)}
}

// vxlanFDBPlan is side s's device: no remote, its own MAC (the measured
// tunnel's end), the overlay address, and the scale block routed onto
// it. It is pure.
func vxlanFDBPlan(env *method.Env, s int, vni int) method.Plan {
	var local net.IP
	dev := ""
	if ep := env.Endpoints()[s]; ep != nil {
		local, dev = net.IP(ep.Addr(env.Family).AsSlice()), ep.Dev
	}
	oa, ob := method.Overlay(env.Family)
	block := method.ScaleBlock4
	if env.Family == method.IPv6 {
		block = method.ScaleBlock6
	}
	name := vxlanName(env)
	return method.Plan{
		Links: []method.PlanLink{{
			Link: &netlink.Vxlan{
				LinkAttrs: netlink.LinkAttrs{Name: name, MTU: env.OverlayMTU, HardwareAddr: fdbMAC(s, env.Measured())},
				VxlanId:   vni,
				SrcAddr:   local,
				Port:      method.VXLANPort,
				Learning:  false,
				TTL:       64,
			},
			Parent: dev,
			Config: "CONFIG_VXLAN",
			MTU:    env.OverlayMTU,
			Addr:   [2]netip.Prefix{oa, ob}[s],
		}},
		Routes: []method.PlanRoute{{Dev: name, Route: netlink.Route{Dst: testbed.PrefixNet(block)}}},
	}
}

// vxlanFDBTunnel is side s's entries of tunnel i: the FDB remote of the
// far end's MAC and the neighbour entry of its overlay address. It is
// pure.
func vxlanFDBTunnel(env *method.Env, s, i int) method.Plan {
	m := env.Measured()
	far := 1 - s
	remote := env.Endpoints()[far].Addr(env.Family)
	if i != m {
		remote = fdbFiller(env.Family, i, m)
	}
	oa, ob := method.ScaleOverlay(env.Family, i, m)
	overlay := [2]netip.Prefix{oa, ob}[far].Addr()
	mac, name := fdbMAC(far, i), vxlanName(env)
	return method.Plan{Neighs: []method.PlanNeigh{
		{Dev: name, Neigh: netlink.Neigh{Family: unix.AF_BRIDGE, Flags: unix.NTF_SELF, State: unix.NUD_PERMANENT,
			HardwareAddr: mac, IP: net.IP(remote.AsSlice())}},
		{Dev: name, Neigh: netlink.Neigh{Family: method.FamilyOf(overlay), State: unix.NUD_PERMANENT,
			HardwareAddr: mac, IP: net.IP(overlay.AsSlice())}},
	}}
}

// vxlanFDB sets scale=fdb up: each side's device, then its N tunnels'
// entries, each timed (the first with the device).
func vxlanFDB(m method.Method, env *method.Env, vni int, scale method.Scale) (*method.Path, error) {
	if err := checkTunnels(m, env, scale); err != nil {
		return nil, err
	}
	var adds []time.Duration
	for s, ep := range env.Endpoints() {
		var t method.AddTimer
		t.Start()
		if err := vxlanFDBPlan(env, s, vni).Apply(env, ep); err != nil {
			return nil, err
		}
		for i := range env.N() {
			if err := vxlanFDBTunnel(env, s, i).Apply(env, ep); err != nil {
				return nil, err
			}
			t.Done()
		}
		adds = append(adds, t.Adds()...)
	}
	oa, ob := method.Overlay(env.Family)
	name := vxlanName(env)
	p := &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: "kernel fdb",
	}
	if env.N() > 1 {
		p.Adds = adds
	}
	return p, nil
}

// growVXLANFDB adds FDB remote env.N() (a filler) on both sides.
func growVXLANFDB(env *method.Env) (string, error) {
	if err := growRoom(env); err != nil {
		return "", err
	}
	i := env.N()
	for s, ep := range env.Endpoints() {
		if err := vxlanFDBTunnel(env, s, i).Apply(env, ep); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("added FDB remote %d (toward %s) on both sides", i, fdbFiller(env.Family, i, env.Measured())), nil
}

// teardownVXLANFDB deletes each side's device, with its FDB and
// neighbour entries, and the route of the scale block.
func teardownVXLANFDB(env *method.Env) error {
	return method.EachSide(env, func(ep *testbed.Endpoint) error {
		s := 0
		if ep == env.B {
			s = 1
		}
		return vxlanFDBPlan(env, s, 0).Undo(ep)
	})
}
