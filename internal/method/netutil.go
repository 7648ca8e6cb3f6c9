package method

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// AddLink creates link in ep's namespace, sets its MTU, adds addr (when
// valid) and brings it up.
func AddLink(ep *testbed.Endpoint, link netlink.Link, mtu int, addr netip.Prefix) error {
	name := link.Attrs().Name
	link.Attrs().MTU = mtu
	if err := ep.NL.LinkAdd(link); err != nil {
		return fmt.Errorf("%s: create %s %s: %w", ep.Side, link.Type(), name, err)
	}
	created, err := ep.NL.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", ep.Side, name, err)
	}
	if err := ep.NL.LinkSetMTU(created, mtu); err != nil {
		return fmt.Errorf("%s: set mtu %d on %s: %w", ep.Side, mtu, name, err)
	}
	if addr.IsValid() {
		if err := AddAddr(ep, created, addr); err != nil {
			return err
		}
	}
	if err := ep.NL.LinkSetUp(created); err != nil {
		return fmt.Errorf("%s: set %s up: %w", ep.Side, name, err)
	}
	return nil
}

func AddAddr(ep *testbed.Endpoint, link netlink.Link, addr netip.Prefix) error {
	a := &netlink.Addr{IPNet: testbed.PrefixNet(addr)}
	if addr.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	if err := ep.NL.AddrAdd(link, a); err != nil {
		return fmt.Errorf("%s: add %s to %s: %w", ep.Side, addr, link.Attrs().Name, err)
	}
	return nil
}

// DelLinks deletes the named links in ep's namespace; missing ones are fine.
func DelLinks(ep *testbed.Endpoint, names ...string) error {
	if ep == nil || ep.NL == nil {
		return nil
	}
	var errs []error
	for _, n := range names {
		link, err := ep.NL.LinkByName(n)
		if err != nil {
			if testbed.IsLinkNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("%s: find %s: %w", ep.Side, n, err))
			continue
		}
		if err := ep.NL.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("%s: delete %s: %w", ep.Side, n, err))
		}
	}
	return errors.Join(errs...)
}

// host returns addr as a full-length prefix (/32 or /128).
func HostPrefix(addr netip.Addr) netip.Prefix {
	return netip.PrefixFrom(addr, addr.BitLen())
}

// EachSide runs fn for both endpoints at once and joins their errors.
// Deleting a device waits for an RCU grace period in the kernel (tens of
// milliseconds); doing both sides concurrently lets the waits overlap.
func EachSide(env *Env, fn func(ep *testbed.Endpoint) error) error {
	errc := make(chan error, 2)
	for _, ep := range env.Endpoints() {
		go func() { errc <- fn(ep) }()
	}
	return errors.Join(<-errc, <-errc)
}

// LocalHandle returns ep's netlink handle for what needs a real one in
// this process (tc filters carrying BPF programs loaded here); nil, which
// the callers report, on a remote endpoint.
func LocalHandle(ep *testbed.Endpoint) *netlink.Handle {
	h, _ := ep.NL.(*netlink.Handle)
	return h
}

// RouteAdd adds r on ep's host. The route carries the endpoint's
// RouteCongestion, if any (the congctl metric).
func RouteAdd(ep *testbed.Endpoint, r *netlink.Route) error {
	if r.Congctl == "" {
		r.Congctl = ep.RouteCongestion
	}
	if err := ep.NL.RouteAdd(r); err != nil {
		return fmt.Errorf("%s: add route %s: %w", ep.Side, r, err)
	}
	return nil
}

func FamilyOf(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// UnsupportedFamily is the error of a method asked for a family it cannot
// carry.
func UnsupportedFamily(m Method, family string) error {
	return fmt.Errorf("%s carries only %s, not %s", m.Name(), strings.Join(m.Families(), " and "), family)
}

// The address ranges tunbench's namespaces, underlays and overlays use:
// RFC 2544's 198.18.0.0/15 and RFC 5180's 2001:2::/48, reserved for
// benchmarking (docs/methods.md).
var benchmarking = []netip.Prefix{
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("2001:2::/48"),
}

// Benchmarking reports whether a is in the ranges tunbench uses, so that
// a teardown on a host's own namespace (the ssh testbed) removes only
// what is tunbench's.
func Benchmarking(a netip.Addr) bool {
	for _, p := range benchmarking {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// DeviceUp reports whether ep's device dev exists, is not down and has
// the address addr: what a userspace daemon's TUN device looks like once
// the daemon has set it up (nebula, tailscale).
func DeviceUp(ep *testbed.Endpoint, dev string, addr netip.Addr) (bool, error) {
	link, err := ep.NL.LinkByName(dev)
	if testbed.IsLinkNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: find %s: %w", ep.Side, dev, err)
	}
	if link.Attrs().OperState.String() == "down" {
		return false, nil
	}
	addrs, err := ep.NL.AddrList(link, FamilyOf(addr))
	if err != nil {
		return false, fmt.Errorf("%s: addresses of %s: %w", ep.Side, dev, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
			return true, nil
		}
	}
	return false, nil
}
