package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// congestionSysctl is the default TCP congestion control of new
// connections. It is per network namespace, so setting it in a testbed's
// own namespaces leaves the host's setting alone.
const congestionSysctl = "/proc/sys/net/ipv4/tcp_congestion_control"

// setCongestion makes cc the default congestion control inside the
// namespaces of tb's endpoints on this machine (the local testbed and the
// kernel lab), so that every TCP connection of the cell uses it, whatever
// tool opens it. On endpoints on other hosts (the ssh testbed) tunbench
// changes no host-wide default: the routes the method creates there carry
// cc (RouteCongestion), and pinCongestion gives the host a route of its
// own to the peer that carries it, for the cell. The load tools also set
// it per connection (iperf3 -C, the rr tool's --cc), on every testbed;
// that alone is not enough, since iperf3 sets it after connect (client)
// and accept (server), when the host's default algorithm was already
// initialised on the socket and left its traits (BBR's pacing, which cost
// cubic a quarter to half of its throughput over a veth between ssh
// hosts whose default is BBR).
//
// The kernel lets a namespace other than the host's default only to an
// algorithm in net.ipv4.tcp_allowed_congestion_control (a host-wide
// setting tunbench does not touch), and answers EPERM otherwise; then the
// per-connection setting alone applies, and note says so.
func setCongestion(tb *testbed.Pair, cc string) (note string, err error) {
	if cc == "" {
		return "", nil
	}
	note = "namespace default and per connection"
	for _, ep := range tb.Endpoints() {
		if !ep.Local() {
			ep.RouteCongestion = cc
			note = "route metric congctl (the method's routes and a host route to the peer) and per connection"
			continue
		}
		err := ep.WriteFile(congestionSysctl, []byte(cc+"\n"), 0o644)
		switch {
		case errors.Is(err, unix.EPERM):
			// Routes then carry it (the congctl metric), which the kernel
			// applies to a connection before it starts, whichever
			// algorithm the namespace's default is: the load tools' own
			// setting (iperf3 -C) comes after the default algorithm was
			// initialised, and that one's traits stay (BBR's pacing).
			ep.RouteCongestion = cc
			note = "route metric congctl and per connection: the kernel lets a namespace's default be only one of net.ipv4.tcp_allowed_congestion_control"
		case err != nil:
			return "", fmt.Errorf("set TCP congestion control %s in %s's namespace: %w", cc, ep.Side, err)
		}
	}
	return note, nil
}

// routeCongestion puts the endpoints' RouteCongestion on the plain
// unicast routes of every table (connected routes of the underlay and of
// the method's devices, which the kernel created; routes a daemon added,
// such as charon's routing table). Routes the method
// created itself (encapsulation, nexthop groups) already carry it
// (method.routeAdd); a route with an encapsulation or several next hops
// and without it is left as it is, since rewriting it could lose what the
// method configured, and is returned so that the cell says so. Only
// endpoints on this machine, whose namespaces the testbed owns: a remote
// host's tables are its own (pinCongestion).
func routeCongestion(tb *testbed.Pair) (skipped []string, err error) {
	for _, ep := range tb.Endpoints() {
		cc := ep.RouteCongestion
		if cc == "" || !ep.Local() {
			continue
		}
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			routes, err := ep.NL.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_UNSPEC, Type: unix.RTN_UNICAST},
				netlink.RT_FILTER_TABLE|netlink.RT_FILTER_TYPE)
			if err != nil {
				return skipped, fmt.Errorf("%s: list routes: %w", ep.Side, err)
			}
			for _, r := range routes {
				switch {
				case r.Congctl == cc:
				case r.Encap != nil || len(r.MultiPath) > 0 || r.Congctl != "":
					skipped = append(skipped, ep.Side+": "+r.String())
				default:
					r.Congctl = cc
					if err := ep.NL.RouteReplace(&r); err != nil {
						return skipped, fmt.Errorf("%s: set congctl %s on route %s: %w", ep.Side, cc, r, err)
					}
				}
			}
		}
	}
	return skipped, nil
}

// usedCongestion is the congestion control the cell's connections used,
// as the load tools read it from their sockets: one name, or the distinct
// names joined with "+" when they disagree; "" when no TCP test reported
// one.
func usedCongestion(c *result.Cell) string {
	var seen []string
	add := func(names ...string) {
		for _, n := range names {
			if n != "" && !slices.Contains(seen, n) {
				seen = append(seen, n)
			}
		}
	}
	if t := c.Throughput; t != nil {
		add(t.SenderCongestion, t.ReceiverCongestion)
	}
	if p := c.Parallel; p != nil {
		for _, pt := range p.Processes {
			add(pt.Congestion)
		}
	}
	if l := c.Latency; l != nil {
		add(l.Congestion)
	}
	if l := c.LatencyUnderLoad; l != nil {
		for _, x := range []*result.Latency{l.Idle, l.Loaded} {
			if x != nil {
				add(x.Congestion)
			}
		}
	}
	return strings.Join(seen, "+")
}

// checkCongestion reports a cell whose connections did not use the
// algorithm asked for: its figures would be labelled with the wrong one.
func checkCongestion(asked, used string) error {
	if asked == "" || used == "" || used == asked {
		return nil
	}
	return fmt.Errorf("congestion control: asked for %s, but the connections used %s", asked, used)
}

// congestionPin is a host route pinCongestion added on an endpoint's host.
type congestionPin struct {
	ep    *testbed.Endpoint
	dst   netip.Prefix
	table int
}

// pinArgs and pinReply are opPinCongestion's.
type pinArgs struct {
	Dst     netip.Addr
	CC      string
	Journal string
	// Devices are the method's devices on this side (Path.Devices).
	Devices []string
}

type pinReply struct {
	// Dst and Table are the route added (Dst invalid when none was).
	Dst   netip.Prefix
	Table int
	// Left describes a route that could not be pinned, "" otherwise.
	Left string
}

// opPinCongestion, on the endpoint's host, makes the connections to Dst
// start with CC: it looks up the route the kernel uses for Dst (in
// whichever table the host's rules lead to) and adds, in the same table,
// a host route to Dst with the same device, gateway, source and metrics
// (the path MTU among them) and the congctl metric, marked with
// testbed.RouteProtocol and recorded in the site's journal first. A
// route to Dst that carries CC already needs nothing. A host route to Dst
// through one of the method's devices (a daemon's, such as charon's in
// the run's table to kernel-libipsec's TUN device) is the method's: it gets CC
// in place (its metrics kept) and goes with the method.
// Any other route with another algorithm, an encapsulation or several
// next hops, or that is a host route itself, is left as it is and
// described.
var opPinCongestion = testbed.NewOp("congestion.pin", func(_ context.Context, ep *testbed.Endpoint, a pinArgs) (pinReply, error) {
	h, ok := ep.NL.(*netlink.Handle)
	if !ok {
		return pinReply{}, errors.New("no netlink handle on this host")
	}
	dst := a.Dst.Unmap()
	fib, err := h.RouteGetWithOptions(dst.AsSlice(), &netlink.RouteGetOptions{FIBMatch: true})
	if err != nil {
		return pinReply{}, fmt.Errorf("look up the route to %s: %w", dst, err)
	}
	if len(fib) == 0 {
		return pinReply{}, fmt.Errorf("look up the route to %s: no route", dst)
	}
	r := fib[0]
	host := netip.PrefixFrom(dst, dst.BitLen())
	exact := r.Dst != nil && r.Dst.String() == testbed.PrefixNet(host).String()
	if exact && r.Congctl == "" && r.Encap == nil && len(r.MultiPath) == 0 {
		if link, err := h.LinkByIndex(r.LinkIndex); err == nil && slices.Contains(a.Devices, link.Attrs().Name) {
			same := withMetrics(&netlink.Route{LinkIndex: r.LinkIndex, Dst: r.Dst, Gw: r.Gw, Src: r.Src, Table: r.Table, Scope: r.Scope,
				Type: unix.RTN_UNICAST, Protocol: r.Protocol, Priority: r.Priority, Congctl: a.CC}, &r)
			if err := h.RouteReplace(same); err != nil {
				return pinReply{}, fmt.Errorf("set congctl %s on route %s: %w", a.CC, r, err)
			}
			return pinReply{}, nil
		}
	}
	switch {
	case r.Congctl == a.CC:
		return pinReply{}, nil
	case r.Congctl != "" || r.Encap != nil || len(r.MultiPath) > 0 || exact:
		return pinReply{Left: r.String()}, nil
	}
	pin := withMetrics(&netlink.Route{LinkIndex: r.LinkIndex, Dst: testbed.PrefixNet(host), Gw: r.Gw, Src: r.Src, Table: r.Table,
		Scope: r.Scope, Type: unix.RTN_UNICAST, Protocol: testbed.RouteProtocol, Congctl: a.CC}, &r)
	if ep.Dir != "" {
		if err := testbed.WriteUndo(ep.Dir, a.Journal, testbed.Undo{Kind: testbed.UndoRoute, Addrs: []string{host.String()}, Table: r.Table}); err != nil {
			return pinReply{}, err
		}
	}
	if err := h.RouteAdd(pin); err != nil {
		if ep.Dir != "" {
			_ = testbed.DropUndo(ep.Dir, a.Journal)
		}
		return pinReply{}, fmt.Errorf("add route %s congctl %s to table %d: %w", host, a.CC, r.Table, err)
	}
	return pinReply{Dst: host, Table: r.Table}, nil
})

// withMetrics gives route the metrics of from besides the congestion
// control: the path MTU above all. A method's overlay route through the
// underlay (the ebpf-* methods') carries the overlay MTU as its mtu
// metric; a pin without it let TCP size its segments for the underlay
// device, 50 bytes too large once encapsulated (docs/performance.md).
func withMetrics(route, from *netlink.Route) *netlink.Route {
	route.MTU, route.MTULock = from.MTU, from.MTULock
	route.AdvMSS, route.Hoplimit, route.Window = from.AdvMSS, from.Hoplimit, from.Window
	route.Rtt, route.RttVar, route.Ssthresh, route.Cwnd = from.Rtt, from.RttVar, from.Ssthresh, from.Cwnd
	route.Reordering, route.InitCwnd, route.InitRwnd, route.QuickACK = from.Reordering, from.InitCwnd, from.InitRwnd, from.QuickACK
	route.Features, route.RtoMin, route.RtoMinLock, route.FastOpenNoCookie = from.Features, from.RtoMin, from.RtoMinLock, from.FastOpenNoCookie
	return route
}

// unpinArgs are opUnpinCongestion's.
type unpinArgs struct {
	Dst     netip.Prefix
	Table   int
	Journal string
}

// opUnpinCongestion deletes a route opPinCongestion added (one gone
// already, with its device, is fine) and takes it out of the journal.
var opUnpinCongestion = testbed.NewOp("congestion.unpin", func(_ context.Context, ep *testbed.Endpoint, a unpinArgs) (struct{}, error) {
	h, ok := ep.NL.(*netlink.Handle)
	if !ok {
		return struct{}{}, errors.New("no netlink handle on this host")
	}
	if _, err := testbed.DelHostRoute(h, a.Dst, a.Table); err != nil {
		return struct{}{}, err
	}
	if ep.Dir != "" {
		return struct{}{}, testbed.DropUndo(ep.Dir, a.Journal)
	}
	return struct{}{}, nil
})

// pinJournal names a pin's entry in the site's journal.
func pinJournal(dst netip.Addr) string { return "congctl-" + dst.Unmap().String() }

// pinCongestion gives each endpoint on another host that has a
// RouteCongestion a host route to the other end of path carrying it
// (opPinCongestion), so that the cell's connections start with the
// algorithm asked for there as they do on the local testbed. It returns
// the routes added, for unpinCongestion (also with an error), and those it
// had to leave without the algorithm.
func pinCongestion(tb *testbed.Pair, path *method.Path) (pins []congestionPin, left []string, err error) {
	for _, side := range []struct {
		ep  *testbed.Endpoint
		dst netip.Addr
	}{{tb.A, path.B}, {tb.B, path.A}} {
		ep := side.ep
		if ep.Local() || ep.RouteCongestion == "" || !side.dst.IsValid() {
			continue
		}
		r, err := opPinCongestion.Call(context.Background(), ep, pinArgs{Dst: side.dst, CC: ep.RouteCongestion,
			Journal: pinJournal(side.dst), Devices: path.Devices[ep.Side]})
		if err != nil {
			return pins, left, fmt.Errorf("%s: congestion control %s on the route to %s: %w", ep.Side, ep.RouteCongestion, side.dst, err)
		}
		if r.Left != "" {
			left = append(left, ep.Side+": "+r.Left)
		}
		if r.Dst.IsValid() {
			pins = append(pins, congestionPin{ep: ep, dst: r.Dst, table: r.Table})
		}
	}
	return pins, left, nil
}

// unpinCongestion deletes the routes pinCongestion added.
func unpinCongestion(pins []congestionPin) error {
	var errs []error
	for _, p := range pins {
		if _, err := opUnpinCongestion.Call(context.Background(), p.ep, unpinArgs{Dst: p.dst, Table: p.table, Journal: pinJournal(p.dst.Addr())}); err != nil {
			errs = append(errs, fmt.Errorf("%s: remove the route to %s: %w", p.ep.Side, p.dst, err))
		}
	}
	return errors.Join(errs...)
}
