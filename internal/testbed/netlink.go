package testbed

import (
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// Netlink is the part of a netlink handle that methods and samplers use on
// an endpoint. A local endpoint's is a *netlink.Handle bound to its
// namespace; a remote endpoint's sends each call to the agent on its host,
// which makes it on a handle there.
type Netlink interface {
	LinkByName(name string) (netlink.Link, error)
	LinkByIndex(index int) (netlink.Link, error)
	LinkList() ([]netlink.Link, error)
	LinkAdd(link netlink.Link) error
	LinkDel(link netlink.Link) error
	LinkSetUp(link netlink.Link) error
	LinkSetDown(link netlink.Link) error
	LinkSetMTU(link netlink.Link, mtu int) error
	AddrList(link netlink.Link, family int) ([]netlink.Addr, error)
	AddrAdd(link netlink.Link, addr *netlink.Addr) error
	AddrDel(link netlink.Link, addr *netlink.Addr) error
	RouteAdd(route *netlink.Route) error
	RouteReplace(route *netlink.Route) error
	RouteDel(route *netlink.Route) error
	RouteListFiltered(family int, filter *netlink.Route, filterMask uint64) ([]netlink.Route, error)
	RuleList(family int) ([]netlink.Rule, error)
	RuleAdd(rule *netlink.Rule) error
	RuleDel(rule *netlink.Rule) error
	NeighAdd(neigh *netlink.Neigh) error
	NeighAppend(neigh *netlink.Neigh) error
	XfrmStateAdd(state *netlink.XfrmState) error
	XfrmStateDel(state *netlink.XfrmState) error
	XfrmStateList(family int) ([]netlink.XfrmState, error)
	XfrmStateFlush(proto netlink.Proto) error
	XfrmPolicyAdd(policy *netlink.XfrmPolicy) error
	XfrmPolicyDel(policy *netlink.XfrmPolicy) error
	XfrmPolicyList(family int) ([]netlink.XfrmPolicy, error)
	XfrmPolicyFlush() error
	GenlFamilyGet(name string) (*netlink.GenlFamily, error)
	Close()
}

var _ Netlink = (*netlink.Handle)(nil)

// ErrLinkNotFound is a device lookup on a remote endpoint that found no
// such device (netlink.LinkNotFoundError on this machine).
var ErrLinkNotFound = errors.New("link not found")

// IsLinkNotFound reports whether err is a lookup of a device that does
// not exist, on either kind of endpoint.
func IsLinkNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, ErrLinkNotFound)
}

// PrefixNet converts a prefix (address plus length) to the *net.IPNet netlink wants,
// keeping the host bits.
func PrefixNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}
