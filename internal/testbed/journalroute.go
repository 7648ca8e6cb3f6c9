package testbed

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// JournalRoute is a route through a host's device as a journal keeps it,
// to be put back should the run die after taking the device down (which
// makes the kernel drop every route through it): what "ip route" shows
// of a host's usual static routes (destination, gateway, source, table,
// metric, scope, protocol, type, onlink, and the MTU, advmss, initcwnd,
// initrwnd and congestion control metrics).
type JournalRoute struct {
	Family   int    `json:"family"`
	Dst      string `json:"dst,omitempty"` // prefix; empty: default
	Gw       string `json:"gw,omitempty"`
	Src      string `json:"src,omitempty"`
	Table    int    `json:"table,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Scope    int    `json:"scope,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
	Type     int    `json:"type,omitempty"`
	Flags    int    `json:"flags,omitempty"`
	MTU      int    `json:"mtu,omitempty"`
	AdvMSS   int    `json:"advmss,omitempty"`
	InitCwnd int    `json:"initcwnd,omitempty"`
	InitRwnd int    `json:"initrwnd,omitempty"`
	Congctl  string `json:"congctl,omitempty"`
}

// JournalRoutes turns routes into journal entries.
func JournalRoutes(routes []netlink.Route) []JournalRoute {
	var out []JournalRoute
	for _, r := range routes {
		j := JournalRoute{Family: r.Family, Table: r.Table, Priority: r.Priority, Scope: int(r.Scope),
			Protocol: int(r.Protocol), Type: r.Type, Flags: r.Flags, MTU: r.MTU, AdvMSS: r.AdvMSS,
			InitCwnd: r.InitCwnd, InitRwnd: r.InitRwnd, Congctl: r.Congctl}
		if r.Dst != nil {
			j.Dst = r.Dst.String()
		}
		if r.Gw != nil {
			j.Gw = r.Gw.String()
		}
		if r.Src != nil {
			j.Src = r.Src.String()
		}
		out = append(out, j)
	}
	return out
}

// Route is j as a route through the device of index link.
func (j JournalRoute) Route(link int) (netlink.Route, error) {
	r := netlink.Route{LinkIndex: link, Family: j.Family, Table: j.Table, Priority: j.Priority,
		Scope: netlink.Scope(j.Scope), Protocol: netlink.RouteProtocol(j.Protocol), Type: j.Type, Flags: j.Flags,
		MTU: j.MTU, AdvMSS: j.AdvMSS, InitCwnd: j.InitCwnd, InitRwnd: j.InitRwnd, Congctl: j.Congctl}
	if j.Dst != "" {
		_, dst, err := net.ParseCIDR(j.Dst)
		if err != nil {
			return r, fmt.Errorf("route destination %q: %w", j.Dst, err)
		}
		r.Dst = dst
	}
	for _, ip := range []struct {
		s   string
		dst *net.IP
	}{{j.Gw, &r.Gw}, {j.Src, &r.Src}} {
		if ip.s == "" {
			continue
		}
		if *ip.dst = net.ParseIP(ip.s); *ip.dst == nil {
			return r, fmt.Errorf("route address %q: not an IP address", ip.s)
		}
	}
	return r, nil
}

// String is the route as "ip route" would name it.
func (j JournalRoute) String() string {
	return routeString(j.Dst, j.Gw, j.Table)
}

// RouteString is r as "ip route" would name it: destination, gateway,
// and the table when it is not main.
func RouteString(r netlink.Route) string {
	var dst, gw string
	if r.Dst != nil {
		dst = r.Dst.String()
	}
	if r.Gw != nil {
		gw = r.Gw.String()
	}
	return routeString(dst, gw, r.Table)
}

func routeString(dst, gw string, table int) string {
	s := dst
	if s == "" {
		s = "default"
	}
	if gw != "" {
		s += " via " + gw
	}
	if table != 0 && table != unix.RT_TABLE_MAIN {
		s += fmt.Sprintf(" table %d", table)
	}
	return s
}

// RouteAdder adds routes: a *netlink.Handle, or an endpoint's Netlink.
type RouteAdder interface {
	RouteAdd(*netlink.Route) error
}

// PutRoutesBack adds, through h, every route of rs through link that is
// not there (as AddRoutes does); it returns the ones it added, as "ip
// route" names them.
func PutRoutesBack(h RouteAdder, link netlink.Link, rs []JournalRoute) ([]string, error) {
	var routes []netlink.Route
	var errs []error
	for _, j := range rs {
		r, err := j.Route(link.Attrs().Index)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		routes = append(routes, r)
	}
	added, err := AddRoutes(h, routes)
	var back []string
	for _, r := range added {
		back = append(back, RouteString(r))
	}
	return back, errors.Join(append(errs, err)...)
}

// routeGatewayWait bounds how long AddRoutes waits, for all of its
// routes together, for the gateway of a route to become reachable.
const routeGatewayWait = 3 * time.Second

// AddRoutes adds, through h, every route of routes that is not there
// (one that is, EEXIST, is left alone), and returns those it added. The
// routes without a gateway (the device's own: link scope, or a prefix on
// the link) go first, then those through a gateway, each in the order
// given: the kernel takes a gateway route only when its gateway is
// reachable through the route's device. A route whose gateway is not
// reachable yet (EHOSTUNREACH or ENETUNREACH) is tried again every 50 ms
// for up to 3 s in all (routeGatewayWait): after a device comes up the
// kernel puts back the prefix routes of the addresses it kept by itself,
// IPv6's perhaps a moment later. The routes go back as they were, never with
// the onlink flag they did not have.
func AddRoutes(h RouteAdder, routes []netlink.Route) ([]netlink.Route, error) {
	order := slices.Clone(routes)
	slices.SortStableFunc(order, func(a, b netlink.Route) int {
		return cmp.Compare(viaGateway(a), viaGateway(b))
	})
	deadline := time.Now().Add(routeGatewayWait)
	var added []netlink.Route
	var errs []error
	for _, r := range order {
		err := h.RouteAdd(&r)
		for (errors.Is(err, unix.EHOSTUNREACH) || errors.Is(err, unix.ENETUNREACH)) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			err = h.RouteAdd(&r)
		}
		switch {
		case err == nil:
			added = append(added, r)
		case errors.Is(err, unix.EEXIST):
		default:
			errs = append(errs, fmt.Errorf("put route %s back: %w", RouteString(r), err))
		}
	}
	return added, errors.Join(errs...)
}

// viaGateway is 1 for a route through a gateway (or several), else 0.
func viaGateway(r netlink.Route) int {
	if r.Gw != nil || r.Via != nil || len(r.MultiPath) > 0 {
		return 1
	}
	return 0
}

// routesNote is what PutRoutesBack put back, for a restore's message.
func routesNote(back []string) string {
	if len(back) == 0 {
		return ""
	}
	return "routes " + strings.Join(back, ", ")
}
