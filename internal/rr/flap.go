package rr

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// LinkFlap takes a device of this process's network namespace down and
// up again. Going down (IFF_UP cleared) makes the kernel drop every route
// through the device and, unless keep_addr_on_down is set, its IPv6
// addresses: LinkFlap sets keep_addr_on_down for the device while it is
// down, and after the device is up puts back every address and every
// route (all tables, except the kernel's own, which come back by
// themselves) that it had before and lacks. A device that is already down
// is refused.
type LinkFlap struct {
	Dev string

	link       netlink.Link
	addrs      []netlink.Addr
	routes     []netlink.Route
	keepPath   string
	keepBefore string
}

// Down records the device's addresses and routes and takes it down.
func (f *LinkFlap) Down() error {
	l, err := netlink.LinkByName(f.Dev)
	if err != nil {
		return fmt.Errorf("find %s: %w", f.Dev, err)
	}
	if l.Attrs().Flags&unix.IFF_UP == 0 {
		return fmt.Errorf("%s is already down", f.Dev)
	}
	f.link = l
	if f.addrs, err = nic.Dump(func() ([]netlink.Addr, error) { return netlink.AddrList(l, netlink.FAMILY_ALL) }); err != nil {
		return fmt.Errorf("list addresses of %s: %w", f.Dev, err)
	}
	if f.routes, err = RoutesToPutBack(&netlink.Handle{}, l); err != nil {
		return err
	}
	f.keepPath = KeepAddrPath(f.Dev)
	if old, err := os.ReadFile(f.keepPath); err == nil {
		f.keepBefore = strings.TrimSpace(string(old))
		if err := os.WriteFile(f.keepPath, []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", f.keepPath, err)
		}
	} else {
		f.keepPath = "" // no IPv6 here
	}
	if err := netlink.LinkSetDown(l); err != nil {
		return fmt.Errorf("set %s down: %w", f.Dev, err)
	}
	return nil
}

// RouteLister lists routes: a *netlink.Handle (the zero one lists this
// thread's namespace), or an endpoint's Netlink.
type RouteLister interface {
	RouteListFiltered(family int, filter *netlink.Route, filterMask uint64) ([]netlink.Route, error)
}

// RoutesToPutBack lists, through nl, the routes through link (every
// table) that going down removes and coming up does not bring back: all
// but the kernel's own (the prefix routes of its addresses, the local
// table) and but non-unicast ones. An interrupted dump is read again.
func RoutesToPutBack(nl RouteLister, link netlink.Link) ([]netlink.Route, error) {
	all, err := nic.Dump(func() ([]netlink.Route, error) {
		return nl.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: link.Attrs().Index, Table: unix.RT_TABLE_UNSPEC},
			netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, fmt.Errorf("list routes through %s: %w", link.Attrs().Name, err)
	}
	var out []netlink.Route
	for _, r := range all {
		if r.Protocol == unix.RTPROT_KERNEL || r.Table == unix.RT_TABLE_LOCAL || r.Type != unix.RTN_UNICAST {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// KeepAddrPath is dev's keep_addr_on_down sysctl, which LinkFlap sets
// while the device is down.
func KeepAddrPath(dev string) string {
	return filepath.Join("/proc/sys/net/ipv6/conf", dev, "keep_addr_on_down")
}

// Up sets the device up and puts back what going down removed: the
// addresses, then the routes (testbed.AddRoutes: the device's own first,
// then those through a gateway, waiting a moment for a gateway the
// kernel's prefix route does not reach yet).
func (f *LinkFlap) Up() ([]string, error) {
	if f.link == nil {
		return nil, nil
	}
	var errs []error
	var restored []string
	if err := netlink.LinkSetUp(f.link); err != nil {
		errs = append(errs, fmt.Errorf("set %s up: %w", f.Dev, err))
	}
	have, err := nic.Dump(func() ([]netlink.Addr, error) { return netlink.AddrList(f.link, netlink.FAMILY_ALL) })
	if err != nil {
		errs = append(errs, fmt.Errorf("list addresses of %s: %w", f.Dev, err))
	}
	for _, a := range f.addrs {
		if hasAddr(have, a) || a.IP.IsLinkLocalUnicast() {
			continue
		}
		back := netlink.Addr{IPNet: a.IPNet, Flags: a.Flags}
		if err := netlink.AddrAdd(f.link, &back); err != nil && !errors.Is(err, unix.EEXIST) {
			errs = append(errs, fmt.Errorf("put %s back on %s: %w", a.IPNet, f.Dev, err))
			continue
		}
		restored = append(restored, "address "+a.IPNet.String())
	}
	routes := make([]netlink.Route, len(f.routes))
	for i, r := range f.routes {
		routes[i] = r
		routes[i].LinkIndex = f.link.Attrs().Index
	}
	added, err := testbed.AddRoutes(&netlink.Handle{}, routes)
	for _, r := range added {
		restored = append(restored, "route "+testbed.RouteString(r))
	}
	if err != nil {
		errs = append(errs, err)
	}
	if f.keepPath != "" {
		if err := os.WriteFile(f.keepPath, []byte(f.keepBefore+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", f.keepPath, err))
		}
	}
	f.link = nil
	return restored, errors.Join(errs...)
}

func hasAddr(have []netlink.Addr, a netlink.Addr) bool {
	for _, h := range have {
		if h.IPNet.String() == a.IPNet.String() {
			return true
		}
	}
	return false
}
