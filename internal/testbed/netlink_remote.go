package testbed

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"strings"

	"github.com/tunbench/tunbench/internal/nic"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// A remote endpoint's netlink calls are ops: the agent makes each call on
// its own handle. Links travel as their concrete types when a caller
// builds one to add (Vxlan, Veth, Wireguard...) and come back as
// GenericLink (attributes and kind), which is what every caller reads.

// The types every testbed itself passes; a method family registers its
// own (RegisterWireTypes).
func init() {
	RegisterWireTypes(&netlink.Device{}, &netlink.Dummy{}, &netlink.Veth{}, &netlink.Bridge{},
		&netlink.GenericLink{}, &netlink.Macvlan{}, &netlink.Vlan{},
		&netlink.Via{}, netlink.NsFd(0), netlink.NsPid(0))
}

// RegisterWireTypes registers the concrete types a method family passes
// through an endpoint's netlink calls (the links it adds, the encaps of
// its routes), so that they travel to a remote agent: a family calls it
// from its package's init, next to the code that builds them. The agent
// is this same binary, so it knows them too. A type passed unregistered
// fails the call on a remote endpoint only ("type not registered for
// interface"), which TestMethodsThroughAgents catches.
func RegisterWireTypes(values ...any) {
	for _, v := range values {
		gob.Register(v)
	}
}

// wireLink is a link as it travels to the agent.
type wireLink struct{ L netlink.Link }

// generic reduces a link to its attributes and kind for the way back.
func generic(l netlink.Link) netlink.Link {
	if l == nil {
		return nil
	}
	attrs := *l.Attrs()
	attrs.Slave, attrs.Namespace = nil, nil
	return &netlink.GenericLink{LinkAttrs: attrs, LinkType: l.Type()}
}

type nlArgs struct {
	Link   wireLink
	Name   string
	Int    int
	Mask   uint64
	Addr   *netlink.Addr
	Route  *netlink.Route
	Rule   *netlink.Rule
	Neigh  *netlink.Neigh
	State  *netlink.XfrmState
	Policy *netlink.XfrmPolicy
	Proto  netlink.Proto
}

type nlReply struct {
	Link     wireLink
	Links    []wireLink
	Addrs    []netlink.Addr
	Routes   []netlink.Route
	Rules    []netlink.Rule
	States   []netlink.XfrmState
	Policies []netlink.XfrmPolicy
	Family   *netlink.GenlFamily
}

// opNetlink runs one netlink call on the agent's handle.
//
// An address added to a device of the host's own (lo, the underlay: not
// a device of the run, which takes its addresses with it) goes into the
// site's journal in the same op, before it is added (UndoDelAddr), and
// out once deleted, so that whatever ends the run in between, the
// agent's end or clean takes it off. An add that fails takes its entry
// out: the address may be the host's own.
var opNetlink = NewOp("netlink", func(_ context.Context, ep *Endpoint, a nlCall) (nlReply, error) {
	name := journaledAddr(ep, a)
	if name != "" && a.Method == "AddrAdd" {
		u := Undo{Kind: UndoDelAddr, Dev: a.A.Link.L.Attrs().Name, Addrs: []string{a.A.Addr.IPNet.String()}}
		if err := WriteUndo(ep.Dir, name, u); err != nil {
			return nlReply{}, err
		}
	}
	r, err := a.run(ep.NL)
	added := a.Method == "AddrAdd" && err == nil
	deleted := a.Method == "AddrDel" && (err == nil || errors.Is(err, unix.EADDRNOTAVAIL))
	if name != "" && !added && (a.Method == "AddrAdd" || deleted) {
		if derr := DropUndo(ep.Dir, name); derr != nil && err == nil {
			err = derr
		}
	}
	return r, err
})

// journaledAddr names the journal entry of the address an AddrAdd or
// AddrDel call a changes, or "" when it needs none.
func journaledAddr(ep *Endpoint, a nlCall) string {
	if ep.Dir == "" || (a.Method != "AddrAdd" && a.Method != "AddrDel") || a.A.Addr == nil || a.A.Addr.IPNet == nil || a.A.Link.L == nil {
		return ""
	}
	dev := a.A.Link.L.Attrs().Name
	// A device of the run (RunOfDevice) goes with the run, its
	// addresses with it: it needs no journal.
	if dev == "" || RunOfDevice(dev) != "" {
		return ""
	}
	return "addr-" + dev + "-" + strings.ReplaceAll(a.A.Addr.IPNet.String(), "/", "_")
}

type nlCall struct {
	Method string
	A      nlArgs
}

func wrapLinks(ls []netlink.Link) []wireLink {
	out := make([]wireLink, len(ls))
	for i, l := range ls {
		out[i] = wireLink{generic(l)}
	}
	return out
}

func (c nlCall) run(h Netlink) (r nlReply, err error) {
	a := c.A
	switch c.Method {
	case "LinkByName":
		var l netlink.Link
		l, err = h.LinkByName(a.Name)
		r.Link = wireLink{generic(l)}
	case "LinkByIndex":
		var l netlink.Link
		l, err = h.LinkByIndex(a.Int)
		r.Link = wireLink{generic(l)}
	case "LinkList":
		var ls []netlink.Link
		ls, err = h.LinkList()
		r.Links = wrapLinks(ls)
	case "LinkAdd":
		err = h.LinkAdd(a.Link.L)
	case "LinkDel":
		err = h.LinkDel(a.Link.L)
	case "LinkSetUp":
		err = h.LinkSetUp(a.Link.L)
	case "LinkSetDown":
		err = h.LinkSetDown(a.Link.L)
	case "LinkSetMTU":
		err = h.LinkSetMTU(a.Link.L, a.Int)
	case "AddrList":
		r.Addrs, err = nic.Dump(func() ([]netlink.Addr, error) { return h.AddrList(a.Link.L, a.Int) })
	case "AddrAdd":
		err = h.AddrAdd(a.Link.L, a.Addr)
	case "AddrDel":
		err = h.AddrDel(a.Link.L, a.Addr)
	case "RouteAdd":
		err = h.RouteAdd(a.Route)
	case "RouteReplace":
		err = h.RouteReplace(a.Route)
	case "RouteDel":
		err = h.RouteDel(a.Route)
	case "RouteListFiltered":
		r.Routes, err = nic.Dump(func() ([]netlink.Route, error) { return h.RouteListFiltered(a.Int, a.Route, a.Mask) })
	case "RuleList":
		r.Rules, err = nic.Dump(func() ([]netlink.Rule, error) { return h.RuleList(a.Int) })
	case "RuleAdd":
		err = h.RuleAdd(a.Rule)
	case "RuleDel":
		err = h.RuleDel(a.Rule)
	case "NeighAdd":
		err = h.NeighAdd(a.Neigh)
	case "NeighAppend":
		err = h.NeighAppend(a.Neigh)
	case "XfrmStateAdd":
		err = h.XfrmStateAdd(a.State)
	case "XfrmStateDel":
		err = h.XfrmStateDel(a.State)
	case "XfrmStateList":
		r.States, err = h.XfrmStateList(a.Int)
	case "XfrmStateFlush":
		err = h.XfrmStateFlush(a.Proto)
	case "XfrmPolicyAdd":
		err = h.XfrmPolicyAdd(a.Policy)
	case "XfrmPolicyDel":
		err = h.XfrmPolicyDel(a.Policy)
	case "XfrmPolicyList":
		r.Policies, err = h.XfrmPolicyList(a.Int)
	case "XfrmPolicyFlush":
		err = h.XfrmPolicyFlush()
	case "GenlFamilyGet":
		r.Family, err = h.GenlFamilyGet(a.Name)
	default:
		err = fmt.Errorf("unknown netlink call %q", c.Method)
	}
	return r, err
}

// remoteNetlink sends each call to the endpoint's agent.
type remoteNetlink struct{ ep *Endpoint }

func (n remoteNetlink) do(method string, a nlArgs) (nlReply, error) {
	return opNetlink.Call(context.Background(), n.ep, nlCall{Method: method, A: a})
}

func unwrapLinks(ws []wireLink) []netlink.Link {
	out := make([]netlink.Link, len(ws))
	for i, w := range ws {
		out[i] = w.L
	}
	return out
}

func (n remoteNetlink) LinkByName(name string) (netlink.Link, error) {
	r, err := n.do("LinkByName", nlArgs{Name: name})
	return r.Link.L, err
}
func (n remoteNetlink) LinkByIndex(index int) (netlink.Link, error) {
	r, err := n.do("LinkByIndex", nlArgs{Int: index})
	return r.Link.L, err
}
func (n remoteNetlink) LinkList() ([]netlink.Link, error) {
	r, err := n.do("LinkList", nlArgs{})
	return unwrapLinks(r.Links), err
}
func (n remoteNetlink) LinkAdd(l netlink.Link) error {
	_, err := n.do("LinkAdd", nlArgs{Link: wireLink{l}})
	return err
}
func (n remoteNetlink) LinkDel(l netlink.Link) error {
	_, err := n.do("LinkDel", nlArgs{Link: wireLink{generic(l)}})
	return err
}
func (n remoteNetlink) LinkSetUp(l netlink.Link) error {
	_, err := n.do("LinkSetUp", nlArgs{Link: wireLink{generic(l)}})
	return err
}
func (n remoteNetlink) LinkSetDown(l netlink.Link) error {
	_, err := n.do("LinkSetDown", nlArgs{Link: wireLink{generic(l)}})
	return err
}
func (n remoteNetlink) LinkSetMTU(l netlink.Link, mtu int) error {
	_, err := n.do("LinkSetMTU", nlArgs{Link: wireLink{generic(l)}, Int: mtu})
	return err
}
func (n remoteNetlink) AddrList(l netlink.Link, family int) ([]netlink.Addr, error) {
	r, err := n.do("AddrList", nlArgs{Link: wireLink{generic(l)}, Int: family})
	return r.Addrs, err
}
func (n remoteNetlink) AddrAdd(l netlink.Link, addr *netlink.Addr) error {
	_, err := n.do("AddrAdd", nlArgs{Link: wireLink{generic(l)}, Addr: addr})
	return err
}
func (n remoteNetlink) AddrDel(l netlink.Link, addr *netlink.Addr) error {
	_, err := n.do("AddrDel", nlArgs{Link: wireLink{generic(l)}, Addr: addr})
	return err
}
func (n remoteNetlink) RouteAdd(route *netlink.Route) error {
	_, err := n.do("RouteAdd", nlArgs{Route: route})
	return err
}
func (n remoteNetlink) RouteReplace(route *netlink.Route) error {
	_, err := n.do("RouteReplace", nlArgs{Route: route})
	return err
}
func (n remoteNetlink) RouteDel(route *netlink.Route) error {
	_, err := n.do("RouteDel", nlArgs{Route: route})
	return err
}
func (n remoteNetlink) RouteListFiltered(family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	r, err := n.do("RouteListFiltered", nlArgs{Int: family, Route: filter, Mask: mask})
	return r.Routes, err
}
func (n remoteNetlink) RuleList(family int) ([]netlink.Rule, error) {
	r, err := n.do("RuleList", nlArgs{Int: family})
	return r.Rules, err
}
func (n remoteNetlink) RuleAdd(rule *netlink.Rule) error {
	_, err := n.do("RuleAdd", nlArgs{Rule: rule})
	return err
}
func (n remoteNetlink) RuleDel(rule *netlink.Rule) error {
	_, err := n.do("RuleDel", nlArgs{Rule: rule})
	return err
}
func (n remoteNetlink) NeighAdd(neigh *netlink.Neigh) error {
	_, err := n.do("NeighAdd", nlArgs{Neigh: neigh})
	return err
}
func (n remoteNetlink) NeighAppend(neigh *netlink.Neigh) error {
	_, err := n.do("NeighAppend", nlArgs{Neigh: neigh})
	return err
}
func (n remoteNetlink) XfrmStateAdd(s *netlink.XfrmState) error {
	_, err := n.do("XfrmStateAdd", nlArgs{State: s})
	return err
}
func (n remoteNetlink) XfrmStateDel(s *netlink.XfrmState) error {
	_, err := n.do("XfrmStateDel", nlArgs{State: s})
	return err
}
func (n remoteNetlink) XfrmStateList(family int) ([]netlink.XfrmState, error) {
	r, err := n.do("XfrmStateList", nlArgs{Int: family})
	return r.States, err
}
func (n remoteNetlink) XfrmStateFlush(proto netlink.Proto) error {
	_, err := n.do("XfrmStateFlush", nlArgs{Proto: proto})
	return err
}
func (n remoteNetlink) XfrmPolicyAdd(p *netlink.XfrmPolicy) error {
	_, err := n.do("XfrmPolicyAdd", nlArgs{Policy: p})
	return err
}
func (n remoteNetlink) XfrmPolicyDel(p *netlink.XfrmPolicy) error {
	_, err := n.do("XfrmPolicyDel", nlArgs{Policy: p})
	return err
}
func (n remoteNetlink) XfrmPolicyList(family int) ([]netlink.XfrmPolicy, error) {
	r, err := n.do("XfrmPolicyList", nlArgs{Int: family})
	return r.Policies, err
}
func (n remoteNetlink) XfrmPolicyFlush() error {
	_, err := n.do("XfrmPolicyFlush", nlArgs{})
	return err
}
func (n remoteNetlink) GenlFamilyGet(name string) (*netlink.GenlFamily, error) {
	r, err := n.do("GenlFamilyGet", nlArgs{Name: name})
	return r.Family, err
}

// Close is a no-op: the agent owns the handle.
func (remoteNetlink) Close() {}
