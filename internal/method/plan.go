package method

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Plan is what a kernel method sets up on one side's host, as data: a pure
// function of the Env computes it (no lookup, no effect), and the shared
// Apply carries it out on the endpoint, Undo takes it back. The golden
// tests of the methods (testbedtest.Recorder) show what Apply does with
// each method's plan as ip-style lines.
type Plan struct {
	// Links are created in order; each gets its MTU and address and is
	// brought up.
	Links []PlanLink
	// Addrs are added to devices that exist already (lo).
	Addrs []PlanAddr
	// Routes are added after the addresses, in order.
	Routes []PlanRoute
	// Neighs are neighbour and bridge FDB entries, added last, in order,
	// on devices that exist by then. They live on their device and go
	// with it: Undo deletes the device, not each entry.
	Neighs []PlanNeigh
}

// PlanLink is a device to create.
type PlanLink struct {
	// Link is the device; its name is Link.Attrs().Name. Its MTU, when
	// set, is part of the creation request; MTU is set after it anyway.
	Link netlink.Link
	// Kind names the device in messages (Link.Type() when empty).
	Kind string
	// Parent, when set, names the existing device Link is bound to: a
	// VXLAN's VtepDevIndex is its index, looked up by Apply.
	Parent string
	// Add, when set, creates the device in place of LinkAdd(Link): a raw
	// request the netlink package cannot express (ip6gre's flags).
	Add func(ep *testbed.Endpoint) error
	// Detail says more about the device in a creation error ("from A to
	// B").
	Detail string
	// Config is the kernel option that provides the device kind: a
	// creation the kernel refuses with EOPNOTSUPP is ErrNotSupported
	// naming it.
	Config string
	MTU    int
	// Addr, when valid, is added to the device.
	Addr netip.Prefix
}

// PlanAddr is an address to add to an existing device.
type PlanAddr struct {
	Dev  string
	Addr netip.Prefix
}

// PlanNeigh is a neighbour entry ("ip neigh add") or, with Family
// AF_BRIDGE and flag NTF_SELF, a bridge FDB entry ("bridge fdb add")
// whose LinkIndex is the index of device Dev (looked up by Apply).
type PlanNeigh struct {
	Dev   string
	Neigh netlink.Neigh
}

// PlanRoute is a route whose LinkIndex is the index of device Dev (looked
// up by Apply).
type PlanRoute struct {
	Dev   string
	Route netlink.Route
}

func (l PlanLink) name() string { return l.Link.Attrs().Name }

func (l PlanLink) kind() string {
	if l.Kind != "" {
		return l.Kind
	}
	return l.Link.Type()
}

// Apply carries p out on ep, env's endpoint: links, then addresses, then
// routes, then neighbour entries. It stops at the first error; Undo removes what was done.
func (p Plan) Apply(env *Env, ep *testbed.Endpoint) error {
	for _, l := range p.Links {
		if err := applyLink(env, ep, l); err != nil {
			return err
		}
	}
	for _, a := range p.Addrs {
		link, err := ep.NL.LinkByName(a.Dev)
		if err != nil {
			return fmt.Errorf("%s: find %s: %w", ep.Side, a.Dev, err)
		}
		if err := AddAddr(ep, link, a.Addr); err != nil {
			return err
		}
	}
	for _, r := range p.Routes {
		link, err := ep.NL.LinkByName(r.Dev)
		if err != nil {
			return fmt.Errorf("%s: find %s: %w", ep.Side, r.Dev, err)
		}
		route := r.Route
		route.LinkIndex = link.Attrs().Index
		if err := RouteAdd(ep, &route); err != nil {
			return err
		}
	}
	index := map[string]int{}
	for _, n := range p.Neighs {
		if _, ok := index[n.Dev]; !ok {
			link, err := ep.NL.LinkByName(n.Dev)
			if err != nil {
				return fmt.Errorf("%s: find %s: %w", ep.Side, n.Dev, err)
			}
			index[n.Dev] = link.Attrs().Index
		}
		neigh := n.Neigh
		neigh.LinkIndex = index[n.Dev]
		if err := ep.NL.NeighAdd(&neigh); err != nil {
			what := "neighbour " + neigh.IP.String()
			if neigh.Family == unix.AF_BRIDGE {
				what = "fdb entry " + neigh.HardwareAddr.String()
			}
			return fmt.Errorf("%s: add %s dev %s: %w", ep.Side, what, n.Dev, err)
		}
	}
	return nil
}

func applyLink(env *Env, ep *testbed.Endpoint, l PlanLink) error {
	name := l.name()
	err := env.FakeKernelErr(l.Config, unix.EOPNOTSUPP)
	if err == nil {
		err = createLink(ep, l)
	}
	if err != nil {
		if l.Config != "" && errors.Is(err, unix.EOPNOTSUPP) {
			// rtnetlink's answer to a link kind the kernel does not have.
			return fmt.Errorf("%s: create %s %s: %w: kernel lacks %s (%w)", ep.Side, l.kind(), name, ErrNotSupported, l.Config, err)
		}
		if l.Detail != "" {
			name += " " + l.Detail
		}
		return fmt.Errorf("%s: create %s %s: %w", ep.Side, l.kind(), name, err)
	}
	link, err := ep.NL.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", ep.Side, name, err)
	}
	if err := ep.NL.LinkSetMTU(link, l.MTU); err != nil {
		return fmt.Errorf("%s: set mtu %d on %s: %w", ep.Side, l.MTU, name, err)
	}
	if l.Addr.IsValid() {
		if err := AddAddr(ep, link, l.Addr); err != nil {
			return err
		}
	}
	if err := ep.NL.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: set %s up: %w", ep.Side, name, err)
	}
	return nil
}

func createLink(ep *testbed.Endpoint, l PlanLink) error {
	if l.Add != nil {
		return l.Add(ep)
	}
	link := l.Link
	if l.Parent != "" {
		parent, err := ep.NL.LinkByName(l.Parent)
		if err != nil {
			return fmt.Errorf("find %s: %w", l.Parent, err)
		}
		vx, ok := link.(*netlink.Vxlan)
		if !ok {
			return fmt.Errorf("a parent device for a %s link", link.Type())
		}
		c := *vx
		c.VtepDevIndex = parent.Attrs().Index
		link = &c
	}
	return ep.NL.LinkAdd(link)
}

// JoinPlans is one plan of ps in order: their links, addresses, routes
// and neighbour entries, each in the order the plans give them (the
// plans of N tunnels, undone at once).
func JoinPlans(ps ...Plan) Plan {
	var j Plan
	for _, p := range ps {
		j.Links = append(j.Links, p.Links...)
		j.Addrs = append(j.Addrs, p.Addrs...)
		j.Routes = append(j.Routes, p.Routes...)
		j.Neighs = append(j.Neighs, p.Neighs...)
	}
	return j
}

// Undo takes p back on ep: it deletes the routes (every route to each
// planned destination), the addresses and the links. What is missing
// already is fine, so Undo after a failed or partial Apply, or twice,
// succeeds. It lists each family's routes once, so that a plan of
// thousands of routes (the tunnels dimension) is not thousands of dumps.
func (p Plan) Undo(ep *testbed.Endpoint) error {
	if ep == nil || ep.NL == nil {
		return nil
	}
	var errs []error
	listed := map[int]map[string][]netlink.Route{} // family -> destination -> routes
	for _, r := range p.Routes {
		dst := r.Route.Dst
		if dst == nil {
			continue
		}
		family := netlink.FAMILY_V4
		if dst.IP.To4() == nil {
			family = netlink.FAMILY_V6
		}
		if listed[family] == nil {
			routes, err := ep.NL.RouteListFiltered(family, &netlink.Route{}, 0)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: list routes: %w", ep.Side, err))
				continue
			}
			listed[family] = map[string][]netlink.Route{}
			for _, rt := range routes {
				if rt.Dst != nil {
					listed[family][rt.Dst.String()] = append(listed[family][rt.Dst.String()], rt)
				}
			}
		}
		key := dst.String()
		for _, rt := range listed[family][key] {
			if err := ep.NL.RouteDel(&rt); err != nil {
				errs = append(errs, fmt.Errorf("%s: delete route %s: %w", ep.Side, rt, err))
			}
		}
		delete(listed[family], key)
	}
	for _, a := range p.Addrs {
		if link, err := ep.NL.LinkByName(a.Dev); err == nil {
			_ = ep.NL.AddrDel(link, &netlink.Addr{IPNet: testbed.PrefixNet(a.Addr)})
		}
	}
	var names []string
	for _, l := range p.Links {
		names = append(names, l.name())
	}
	errs = append(errs, DelLinks(ep, names...))
	return errors.Join(errs...)
}
