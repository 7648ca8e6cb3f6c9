package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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
// tool opens it. Endpoints on other hosts (the ssh testbed) are left
// alone: there the load tools set it per connection (iperf3 -C, the rr
// tool's --cc), never host-wide; they do so on every testbed.
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
// such as strongSwan's table 220). Routes the method
// created itself (encapsulation, nexthop groups) already carry it
// (method.routeAdd); a route with an encapsulation or several next hops
// and without it is left as it is, since rewriting it could lose what the
// method configured, and is returned so that the cell says so.
func routeCongestion(tb *testbed.Pair) (skipped []string, err error) {
	for _, ep := range tb.Endpoints() {
		cc := ep.RouteCongestion
		if cc == "" {
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
