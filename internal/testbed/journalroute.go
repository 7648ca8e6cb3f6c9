package testbed

import (
	"errors"
	"fmt"
	"net"
	"strings"

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
	s := j.Dst
	if s == "" {
		s = "default"
	}
	if j.Gw != "" {
		s += " via " + j.Gw
	}
	if j.Table != 0 && j.Table != unix.RT_TABLE_MAIN {
		s += fmt.Sprintf(" table %d", j.Table)
	}
	return s
}

// RouteAdder adds routes: a *netlink.Handle, or an endpoint's Netlink.
type RouteAdder interface {
	RouteAdd(*netlink.Route) error
}

// PutRoutesBack adds, through h, every route of rs through link that is
// not there; it returns the ones it added, as "ip route" names them.
func PutRoutesBack(h RouteAdder, link netlink.Link, rs []JournalRoute) ([]string, error) {
	var back []string
	var errs []error
	for _, j := range rs {
		r, err := j.Route(link.Attrs().Index)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch err := h.RouteAdd(&r); {
		case err == nil:
			back = append(back, j.String())
		case errors.Is(err, unix.EEXIST):
		default:
			errs = append(errs, fmt.Errorf("put route %s back: %w", j, err))
		}
	}
	return back, errors.Join(errs...)
}

// routesNote is what PutRoutesBack put back, for a restore's message.
func routesNote(back []string) string {
	if len(back) == 0 {
		return ""
	}
	return "routes " + strings.Join(back, ", ")
}
