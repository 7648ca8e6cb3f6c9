// Package fou holds the kernel's UDP encapsulations of ip tunnels: fou
// (Foo-over-UDP, the inner packet right after the UDP header) and gue
// (Generic UDP Encapsulation, a 4-byte header with the inner protocol
// between UDP and the inner packet). Each carries an ipip-style or a GRE
// tunnel (option payload) over an underlay of the measured family:
//
//	family ipv4: ipip (payload ipip) or gre (payload gre), encap fou|gue
//	family ipv6: ip6tnl mode ip6ip6 or ip6gre, both encaplimit none, encap fou|gue
//
// Both sides open a receive port in their namespace ("ip fou add port P
// ipproto N" for fou, "ip fou add port P gue" for gue): the kernel's UDP
// socket that strips the encapsulation and hands the inner packet to the
// tunnel. The port is per-namespace kernel state no device name leads to,
// so it is journaled on its host (testbed.UndoDelFou) before it is opened
// and taken out once closed: an agent that ends, or "tunbench clean",
// closes it after a crash.
package fou

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The links the methods pass to a remote agent.
func init() {
	testbed.RegisterWireTypes(&netlink.Iptun{}, &netlink.Gretun{}, &netlink.Ip6tnl{})
}

// DefaultPort is the UDP port of both methods unless option port says
// otherwise. Neither encapsulation has an IANA port; 5555 is the one
// ip-fou(8) uses in its examples.
const DefaultPort = 5555

// Payloads (option payload).
const (
	PayloadIPIP = "ipip"
	PayloadGRE  = "gre"
)

// Options of both methods.
var options = []method.Option{
	{Name: "payload", Values: []string{PayloadIPIP, PayloadGRE}, Default: PayloadIPIP,
		Help: "the tunnel inside UDP: ipip (ipip over IPv4, ip6tnl mode ip6ip6 over IPv6) or gre (gre over IPv4, ip6gre over IPv6; 4 bytes more)"},
	{Name: "port", Min: 1, Max: 65535, Default: "5555",
		Help: "UDP destination port, the receive port both sides open"},
}

// Overhead bytes: outer header, UDP, GUE, GRE.
const (
	ipv4Header = 20
	ipv6Header = 40
	udpHeader  = 8
	gueHeader  = 4 // version 0, no optional fields
	greHeader  = 4 // no key, checksum or sequence number
)

// encap is what tells the two methods apart.
type encap struct {
	name   string
	typ    netlink.TunnelEncapType // netlink.FOU or netlink.GUE
	suffix string                  // after env.Prefix in the device name
	extra  int                     // bytes between UDP and the payload
}

var (
	fouEncap = encap{name: "fou", typ: netlink.FOU, suffix: "-fou", extra: 0}
	gueEncap = encap{name: "gue", typ: netlink.GUE, suffix: "-gue", extra: gueHeader}
)

// headerOverhead is what e adds to each packet of family with payload:
// the outer IP header of the family (the underlay is of the measured
// family), UDP, GUE's header (gue only) and GRE's (payload gre only).
func (e encap) headerOverhead(family, payload string) int {
	n := ipv4Header
	if family == method.IPv6 {
		n = ipv6Header
	}
	n += udpHeader + e.extra
	if payload == PayloadGRE {
		n += greHeader
	}
	return n
}

// requirements: the encapsulation (fou, fou6 and their tunnel support)
// and the four tunnels it can carry.
var requirements = []method.Requirement{
	{Kernel: "CONFIG_NET_FOU", Module: "fou"},
	{Kernel: "CONFIG_NET_FOU_IP_TUNNELS", Bool: true},
	{Kernel: "CONFIG_IPV6_FOU", Module: "fou6"},
	{Kernel: "CONFIG_IPV6_FOU_TUNNEL", Module: "fou6"},
	{Kernel: "CONFIG_NET_IPIP", Module: "ipip"},
	{Kernel: "CONFIG_NET_IPGRE", Module: "ip_gre"},
	{Kernel: "CONFIG_IPV6_TUNNEL", Module: "ip6_tunnel"},
	{Kernel: "CONFIG_IPV6_GRE", Module: "ip6_gre"},
}

// FOU is ipip or GRE in UDP without a header of its own (Foo-over-UDP):
// the receive port says which IP protocol follows the UDP header.
//
// Options: "payload" (ipip, gre; default ipip) and "port" (default 5555).
type FOU struct{}

func (FOU) Name() string { return "fou" }
func (FOU) Implementation() string {
	return "kernel ipip/gre (IPv4) or ip6tnl/ip6gre (IPv6) with encap fou and a fou receive port (netlink)"
}
func (FOU) Families() []string                 { return []string{method.IPv4, method.IPv6} }
func (FOU) Options() []method.Option           { return options }
func (FOU) Requirements() []method.Requirement { return requirements }

// Overhead is that of payload gre, the larger: outer IP (20 or 40) + UDP
// (8) + GRE (4): 32 over IPv4, 52 over IPv6. Payload ipip adds 4 fewer
// (28 / 48), and its overlay gets those 4 bytes (Path.OverlayMTU).
func (FOU) Overhead(family string) int { return fouEncap.headerOverhead(family, PayloadGRE) }

// HeaderOverhead is the overhead of the payload the method ran with.
func (m FOU) HeaderOverhead(family string, opts map[string]string, _ string) int {
	return fouEncap.headerOverhead(family, payloadOf(m, opts))
}

func (m FOU) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	return setup(m, fouEncap, env)
}

func (m FOU) Teardown(_ context.Context, env *method.Env) error { return teardown(m, fouEncap, env) }

// GUE is ipip or GRE in UDP behind a GUE header (version 0, 4 bytes,
// draft-ietf-intarea-gue) whose proto field names the payload's IP
// protocol; one receive port takes every protocol.
//
// Options: "payload" (ipip, gre; default ipip) and "port" (default 5555).
type GUE struct{}

func (GUE) Name() string { return "gue" }
func (GUE) Implementation() string {
	return "kernel ipip/gre (IPv4) or ip6tnl/ip6gre (IPv6) with encap gue and a gue receive port (netlink)"
}
func (GUE) Families() []string                 { return []string{method.IPv4, method.IPv6} }
func (GUE) Options() []method.Option           { return options }
func (GUE) Requirements() []method.Requirement { return requirements }

// Overhead is that of payload gre, the larger: outer IP (20 or 40) + UDP
// (8) + GUE (4) + GRE (4): 36 over IPv4, 56 over IPv6. Payload ipip adds
// 4 fewer (32 / 52), and its overlay gets those 4 bytes
// (Path.OverlayMTU).
func (GUE) Overhead(family string) int { return gueEncap.headerOverhead(family, PayloadGRE) }

// HeaderOverhead is the overhead of the payload the method ran with.
func (m GUE) HeaderOverhead(family string, opts map[string]string, _ string) int {
	return gueEncap.headerOverhead(family, payloadOf(m, opts))
}

func (m GUE) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	return setup(m, gueEncap, env)
}

func (m GUE) Teardown(_ context.Context, env *method.Env) error { return teardown(m, gueEncap, env) }

// payloadOf is option payload of opts, or the default when opts do not
// parse.
func payloadOf(m method.Method, opts map[string]string) string {
	v, err := method.ParseOptions(m, opts)
	if err != nil {
		return PayloadIPIP
	}
	return v.String("payload")
}

// tunnel is one side's plan: the receive port, then the device.
type tunnel struct {
	port Port
	plan method.Plan
}

// plan is m's set-up of each side of env, as data: the receive port and
// the measured tunnel's device with its overlay address and MTU. The MTU
// is the runner's overlay MTU plus the bytes the payload does not use of
// Overhead (4 for ipip), so that a full-size packet fills the underlay
// MTU exactly. It is pure: it reads env and touches no host.
func plan(m method.Method, e encap, env *method.Env, v method.Values) ([2]tunnel, int) {
	oa, ob := method.Overlay(env.Family)
	return planDevice(m, e, env, v, env.Prefix+e.suffix, oa, ob, 0)
}

// planDevice is plan for a device called name with the overlay addresses
// oa and ob and, with payload gre, GRE key key (0: none).
func planDevice(m method.Method, e encap, env *method.Env, v method.Values, name string, oa, ob netip.Prefix, key uint32) ([2]tunnel, int) {
	payload, port := v.String("payload"), v.Int("port")
	mtu := env.OverlayMTU + m.Overhead(env.Family) - e.headerOverhead(env.Family, payload)
	var out [2]tunnel
	for i, ep := range env.Endpoints() {
		local, remote := ep.Addr(env.Family), env.Peer(ep).Addr(env.Family)
		l := method.PlanLink{
			Detail: fmt.Sprintf("from %s to %s, encap %s port %d", local, remote, e.name, port),
			MTU:    mtu,
			Addr:   [2]netip.Prefix{oa, ob}[i],
		}
		lip, rip := net.IP(local.AsSlice()), net.IP(remote.AsSlice())
		typ, dport := uint16(e.typ), uint16(port)
		p := Port{Family: env.Family, Port: port, GUE: e.typ == netlink.GUE}
		switch {
		case env.Family == method.IPv4 && payload == PayloadIPIP:
			p.Proto = unix.IPPROTO_IPIP
			l.Config = "CONFIG_NET_IPIP"
			l.Link = &netlink.Iptun{LinkAttrs: netlink.LinkAttrs{Name: name}, Local: lip, Remote: rip,
				Ttl: tunnelTTL, PMtuDisc: 1, Proto: unix.IPPROTO_IPIP, EncapType: typ, EncapDport: dport}
		case env.Family == method.IPv4:
			p.Proto = unix.IPPROTO_GRE
			l.Config = "CONFIG_NET_IPGRE"
			l.Link = &netlink.Gretun{LinkAttrs: netlink.LinkAttrs{Name: name}, Local: lip, Remote: rip,
				IKey: key, OKey: key, Ttl: tunnelTTL, PMtuDisc: 1, EncapType: typ, EncapDport: dport}
		case payload == PayloadIPIP:
			p.Proto = unix.IPPROTO_IPV6
			l.Config = "CONFIG_IPV6_TUNNEL"
			l.Link = &netlink.Ip6tnl{LinkAttrs: netlink.LinkAttrs{Name: name}, Local: lip, Remote: rip,
				Ttl: tunnelTTL, Flags: ip6TnlIgnEncapLimit, Proto: unix.IPPROTO_IPV6, EncapType: typ, EncapDport: dport}
		default:
			p.Proto = unix.IPPROTO_GRE
			l.Config = "CONFIG_IPV6_GRE"
			l.Link = &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: name}, LinkType: "ip6gre"}
			a := ip6greArgs{Name: name, Local: local, Remote: remote, EncapType: typ, EncapDport: dport, Key: key}
			l.Add = func(ep *testbed.Endpoint) error {
				_, err := opAddIP6GRE.Call(context.Background(), ep, a)
				return err
			}
		}
		if p.GUE {
			p.Proto = 0 // the GUE header names it per packet
		}
		out[i] = tunnel{port: p, plan: method.Plan{Links: []method.PlanLink{l}}}
	}
	return out, mtu
}

// tunnelTTL is the outer TTL or hop limit, set rather than inherited.
const tunnelTTL = 64

// ip6TnlIgnEncapLimit is IP6_TNL_F_IGN_ENCAP_LIMIT: ip6tnl and ip6gre
// add no 8-byte encapsulation limit option.
const ip6TnlIgnEncapLimit = 0x1

// kind is the device kind of a plan's link, for Path.Variant.
func kind(l method.PlanLink) string {
	if g, ok := l.Link.(*netlink.GenericLink); ok {
		return g.LinkType
	}
	return l.Link.Type()
}

// setup opens the receive port and creates env.N() tunnels on each side,
// timing each one's add (Path.Adds).
func setup(m method.Method, e encap, env *method.Env) (*method.Path, error) {
	v, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	if !method.Supports(m, env.Family) {
		return nil, method.UnsupportedFamily(m, env.Family)
	}
	if s := scale(e, env.Family, v); env.N() > s.Max {
		return nil, fmt.Errorf("%s: %d tunnels: at most %d (%s)", m.Name(), env.N(), s.Max, s.Why)
	}
	sides, mtu := plan(m, e, env, v)
	tunnels := planTunnels(m, e, env, v)
	var adds []time.Duration
	for i, ep := range env.Endpoints() {
		if err := openPort(env, ep, sides[i].port); err != nil {
			return nil, err
		}
		timer := &method.AddTimer{}
		timer.Start()
		for _, p := range tunnels[i] {
			if err := p.Apply(env, ep); err != nil {
				return nil, err
			}
			timer.Done()
		}
		adds = append(adds, timer.Adds()...)
	}
	oa, ob := method.Overlay(env.Family)
	name := env.Prefix + e.suffix
	path := &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}},
		Variant: fmt.Sprintf("%s in %s, udp port %d", kind(sides[0].plan.Links[0]), e.name, v.Int("port")),
	}
	if mtu != env.OverlayMTU {
		path.OverlayMTU = mtu
	}
	if env.N() > 1 {
		path.Adds = adds
	}
	return path, nil
}

// teardown deletes the devices and closes the ports this run opened, on
// both sides. With options that do not parse, Setup created nothing.
func teardown(m method.Method, e encap, env *method.Env) error {
	names := devices(e, env)
	errs := []error{method.EachSide(env, func(ep *testbed.Endpoint) error { return method.DelLinks(ep, names...) })}
	v, err := method.ParseOptions(m, env.Options)
	if err != nil || !method.Supports(m, env.Family) {
		return errors.Join(errs...)
	}
	for _, ep := range env.Endpoints() {
		if ep == nil || ep.NL == nil {
			continue
		}
		errs = append(errs, closePort(ep, Port{Family: env.Family, Port: v.Int("port"), GUE: e.typ == netlink.GUE}))
	}
	return errors.Join(errs...)
}
