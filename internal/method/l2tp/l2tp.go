// Package l2tp is the l2tpv3 method: the kernel's L2TPv3 Ethernet
// pseudowire (RFC 3931, RFC 4719; l2tp_eth), one static tunnel and one
// session between the two endpoints, over UDP or right over IP.
//
// vishvananda/netlink has no L2TP support, so the tunnel and the session
// are created with iproute2's "ip l2tp", run through the endpoint's
// command runner (on its host, in its namespace, through an agent where
// the endpoint is remote); the l2tpeth device it creates gets its MTU,
// address and state through the endpoint's netlink handle, as every
// kernel method's plan (method.Plan).
package l2tp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Port is the UDP port of both ends over UDP (the IANA L2TP port).
const Port = 1701

// ProtoL2TP is the IP protocol number of L2TPv3 over IP.
const ProtoL2TP = 115

// Encapsulations (option "encap").
const (
	EncapUDP = "udp"
	EncapIP  = "ip"
)

// The cookie is a fixed value, the same in every run and both ways: a
// cookie is no secret (RFC 3931 makes it a guard against misdirected
// packets, sent in the clear), and a known value lets the wire decoder
// tell it from the Ethernet frame behind it. The 4-byte cookie is the
// first half of the 8-byte one.
var cookie = []byte("tunbench")

// L2TPv3 is the l2tpv3 method.
//
// Options: "encap" (udp or ip, default udp), "cookie" (off, 4 or 8 bytes,
// default off).
type L2TPv3 struct{}

func (L2TPv3) Name() string { return "l2tpv3" }
func (L2TPv3) Implementation() string {
	return "kernel L2TPv3 Ethernet pseudowire (l2tp_eth; ip l2tp)"
}
func (L2TPv3) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead is for the default options, UDP without cookie: outer IP (20
// or 40) + UDP (8) + the L2TPv3 data header over UDP (4 bytes of flags
// and version, 4 of session ID) + the inner Ethernet header (14), with no
// L2-specific sublayer: 50 over IPv4, 70 over IPv6. HeaderOverhead gives
// the other options' figures.
func (L2TPv3) Overhead(family string) int { return overhead(family, EncapUDP, 0) }

// HeaderOverhead follows the options: over IP (protocol 115) the header
// is the 4-byte session ID alone (38 over IPv4, 58 over IPv6); a cookie
// adds its 4 or 8 bytes.
func (L2TPv3) HeaderOverhead(family string, opts map[string]string, _ string) int {
	encap := opts["encap"]
	if encap == "" {
		encap = EncapUDP
	}
	n, _ := strconv.Atoi(opts["cookie"])
	return overhead(family, encap, n)
}

func overhead(family, encap string, cookieLen int) int {
	n := 20
	if family == method.IPv6 {
		n = 40
	}
	if encap == EncapUDP {
		n += 8 + 4 // UDP, then flags and version
	}
	return n + 4 + cookieLen + 14 // session ID, cookie, inner Ethernet
}

// Options declares the scenario options (see Option).
func (L2TPv3) Options() []method.Option {
	return []method.Option{
		{Name: "encap", Default: EncapUDP, Values: []string{EncapUDP, EncapIP},
			Help: "udp: L2TPv3 over UDP port 1701; ip: right over IP (protocol 115)"},
		{Name: "cookie", Default: "off", Values: []string{"off", "4", "8"},
			Help: "cookie length in bytes (RFC 3931), a fixed value each way; off sends none"},
	}
}

// Requirements: the core and its generic netlink interface, the Ethernet
// pseudowire, and L2TP over IP (l2tp_ip; l2tp_ip6 over IPv6, which the
// kernel loads with the tunnel's socket) for encap ip.
func (L2TPv3) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_L2TP", Module: "l2tp_core"},
		{Kernel: "CONFIG_L2TP_V3", Module: "l2tp_netlink"},
		{Kernel: "CONFIG_L2TP_ETH", Module: "l2tp_eth"},
		{Kernel: "CONFIG_L2TP_IP", Module: "l2tp_ip"},
		{Program: "ip", Package: "iproute2"},
	}
}

// The l2tpeth device the session creates is a link of kind "l2tp"; it
// reaches this process from a remote agent as a GenericLink.
func init() {
	testbed.RegisterWireTypes(&netlink.GenericLink{})
	wire.RegisterUDP(Port, decodeUDP)
	wire.RegisterProto(ProtoL2TP, decodeIP)
}

// devName is the l2tpeth device of a run.
func devName(env *method.Env) string { return env.Prefix + "-l2tp" }

// ids are the tunnel and session IDs of a run, the same on both sides
// and derived from the run's device prefix, so that runs side by side on
// one host (ssh testbeds) do not collide and Teardown finds them again.
func ids(env *method.Env) (tunnel, session uint32) {
	h := fnv.New32a()
	h.Write([]byte(env.Prefix))
	v := h.Sum32()
	return v%0xfffffffe + 1, (v>>8)%0xfffe + 1
}

// setup is what one side runs: the tunnel, then the session that creates
// the l2tpeth device.
type setup struct {
	encap         string
	cookieLen     int
	local, remote netip.Addr
}

// commands are the "ip l2tp" commands of one side, in order.
func (s setup) commands(name string, tunnel, session uint32) [][]string {
	t, se := strconv.FormatUint(uint64(tunnel), 10), strconv.FormatUint(uint64(session), 10)
	add := []string{"ip", "l2tp", "add", "tunnel", "tunnel_id", t, "peer_tunnel_id", t, "encap", s.encap,
		"local", s.local.String(), "remote", s.remote.String()}
	if s.encap == EncapUDP {
		add = append(add, "udp_sport", strconv.Itoa(Port), "udp_dport", strconv.Itoa(Port))
	}
	sess := []string{"ip", "l2tp", "add", "session", "name", name, "tunnel_id", t,
		"session_id", se, "peer_session_id", se, "l2spec_type", "none"}
	if s.cookieLen > 0 {
		c := fmt.Sprintf("%x", cookie[:s.cookieLen])
		sess = append(sess, "cookie", c, "peer_cookie", c)
	}
	return [][]string{add, sess}
}

// planSession is session i's plan for each side of env (a, b): its
// l2tpeth device with its addresses (the measured session's are the
// single tunnel's, the others' ScaleOverlay's). Session 0 creates the
// tunnel first; the others join it.
func (L2TPv3) planSession(env *method.Env, encap string, cookieLen, mtu, i int) [2]method.Plan {
	oa, ob := method.ScaleOverlay(env.Family, i, env.Measured())
	name := sessionName(env, i)
	tunnel, session := ids(env)
	session = sessionID(session, i, env.Measured())
	var plans [2]method.Plan
	for side, ep := range env.Endpoints() {
		s := setup{encap: encap, cookieLen: cookieLen, local: ep.Addr(env.Family), remote: env.Peer(ep).Addr(env.Family)}
		cmds := s.commands(name, tunnel, session)
		if i != 0 {
			cmds = cmds[1:] // the tunnel is there
		}
		plans[side] = method.Plan{Links: []method.PlanLink{{
			Link:   &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: name}, LinkType: "l2tp"},
			Kind:   "l2tpeth",
			Detail: fmt.Sprintf("from %s to %s over %s", s.local, s.remote, encap),
			Add:    func(ep *testbed.Endpoint) error { return runAll(env, ep, encap, cmds) },
			MTU:    mtu,
			Addr:   [2]netip.Prefix{oa, ob}[side],
		}}}
	}
	return plans
}

// configs are the kernel options each step needs, for the refusals.
func configs(encap string) []string {
	c := []string{"CONFIG_L2TP", "CONFIG_L2TP_V3", "CONFIG_L2TP_ETH"}
	if encap == EncapIP {
		c = append(c, "CONFIG_L2TP_IP")
	}
	return c
}

// runAll runs the "ip l2tp" commands on ep. A kernel without what they
// need is ErrNotSupported naming the option: iproute2 cannot find the
// "l2tp" generic netlink family without l2tp_netlink, the kernel answers
// EPROTONOSUPPORT for a tunnel over IP without l2tp_ip(6) and for an
// Ethernet session without l2tp_eth.
func runAll(env *method.Env, ep *testbed.Endpoint, encap string, cmds [][]string) error {
	for _, c := range configs(encap) {
		if env.FakeKernelErr(c, unix.EOPNOTSUPP) != nil {
			return fmt.Errorf("%w: kernel lacks %s", method.ErrNotSupported, c)
		}
	}
	for _, argv := range cmds {
		out, err := ep.Run(context.Background(), argv...)
		if err == nil {
			continue
		}
		text := string(out)
		switch {
		case strings.Contains(text, "Error talking to the kernel"):
			return fmt.Errorf("%w: kernel lacks CONFIG_L2TP_V3 (no l2tp generic netlink family: %s)", method.ErrNotSupported, oneLine(text))
		case strings.Contains(text, "Protocol not supported") && argv[3] == "tunnel":
			return fmt.Errorf("%w: kernel lacks CONFIG_L2TP_IP (%s)", method.ErrNotSupported, oneLine(text))
		case strings.Contains(text, "Protocol not supported"):
			return fmt.Errorf("%w: kernel lacks CONFIG_L2TP_ETH (%s)", method.ErrNotSupported, oneLine(text))
		}
		return err
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Setup creates the tunnel and env.N() sessions in it on both sides
// (sessions.go), timing each session's add, and puts the overlay
// addresses on the l2tpeth devices. The devices' MTU is the underlay MTU
// less the overhead of the options given (HeaderOverhead): env.OverlayMTU
// for the defaults.
func (m L2TPv3) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	if s := m.Scale(env.Family, opts); env.N() > s.Max {
		return nil, fmt.Errorf("l2tpv3: %d tunnels: at most %d (one tunnel is one %s; %s)", env.N(), s.Max, s.Unit, s.Why)
	}
	encap, cookieLen, mtu := m.shape(env, opts)
	path := &method.Path{Variant: "encap " + encap}
	if mtu != env.OverlayMTU {
		path.OverlayMTU = mtu
	}
	if cookieLen > 0 {
		path.Variant += fmt.Sprintf(", %d-byte cookie", cookieLen)
	}
	var adds []time.Duration
	for side, ep := range env.Endpoints() {
		timer := &method.AddTimer{}
		timer.Start()
		for i := range env.N() {
			if err := m.planSession(env, encap, cookieLen, mtu, i)[side].Apply(env, ep); err != nil {
				return nil, err
			}
			timer.Done()
		}
		adds = append(adds, timer.Adds()...)
	}
	if env.N() > 1 {
		path.Adds = adds
	}
	oa, ob := method.Overlay(env.Family)
	name := devName(env)
	path.A, path.B = oa.Addr(), ob.Addr()
	path.Devices = map[string][]string{"a": {name, env.A.Dev}, "b": {name, env.B.Dev}}
	return path, nil
}

// shape is the encapsulation, the cookie length and the device MTU of
// opts: the underlay MTU less the overhead of the options given
// (HeaderOverhead), env.OverlayMTU for the defaults.
func (L2TPv3) shape(env *method.Env, opts method.Values) (encap string, cookieLen, mtu int) {
	encap = opts.String("encap")
	if c := opts.String("cookie"); c != "off" {
		cookieLen, _ = strconv.Atoi(c)
	}
	mtu = env.OverlayMTU
	if opts.Given("encap") || opts.Given("cookie") {
		mtu = env.UnderlayMTU - overhead(env.Family, encap, cookieLen)
	}
	return encap, cookieLen, mtu
}

// Teardown deletes the tunnel on both sides (the kernel deletes its
// sessions and their l2tpeth devices with it) and waits until the devices
// are gone. A tunnel that is not there (never created, deleted already, a
// kernel without L2TP) is fine.
func (L2TPv3) Teardown(ctx context.Context, env *method.Env) error {
	return method.EachSide(env, func(ep *testbed.Endpoint) error { return teardownSide(ctx, env, ep) })
}

func teardownSide(ctx context.Context, env *method.Env, ep *testbed.Endpoint) error {
	if ep == nil || ep.NL == nil {
		return nil
	}
	tunnel, _ := ids(env)
	out, err := ep.Run(ctx, "ip", "l2tp", "del", "tunnel", "tunnel_id", strconv.FormatUint(uint64(tunnel), 10))
	if err != nil {
		text := string(out)
		switch {
		case strings.Contains(text, "No such device"), // no such tunnel
			strings.Contains(text, "Error talking to the kernel"): // no L2TP at all
		default:
			return err
		}
	}
	// The kernel deletes the sessions and their devices from a work queue:
	// 5 s, and 100 ms more a session. A bound, not a delay: in the kernel
	// lab's emulated guest 100 sessions went in 4.2 s and 1,000 in 51.5 s,
	// which outlived the 7 s an earlier 2 ms a session gave them.
	wait := 5*time.Second + time.Duration(env.N())*100*time.Millisecond
	deadline := time.Now().Add(wait)
	for {
		left, err := sessionsLeft(env, ep)
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			// The kernel is still removing session devices: a
			// thousand of them under emulation kept every dump of
			// nic.Dump's retries interrupted. Wait as for a device
			// still there.
			left, err = "a session device (the link dump was interrupted: devices still going)", nil
		}
		if err != nil {
			return err
		}
		if left == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s is still there %s after its tunnel was deleted", ep.Side, left, wait)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("%s: waiting for %s to go", ep.Side, left))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// EncapL2TPv3 is the wire.Frame Encap of an L2TPv3 data packet.
const EncapL2TPv3 = "l2tpv3"

// decodeUDP recognises an L2TPv3 data message over UDP (RFC 3931 4.1.2.1:
// T bit clear, version 3, then the session ID).
func decodeUDP(f *wire.Frame) error {
	p := f.Payload
	if len(p) < 8 {
		return errors.New("l2tpv3: header truncated")
	}
	if p[0]&0x80 != 0 || p[1]&0x0f != 3 {
		return nil // a control message, or not L2TPv3
	}
	return decodeSession(f, p[4:])
}

// decodeIP recognises an L2TPv3 data message over IP: the session ID
// (0 marks a control message).
func decodeIP(f *wire.Frame) error {
	if len(f.Payload) < 4 {
		return errors.New("l2tpv3: header truncated")
	}
	return decodeSession(f, f.Payload)
}

// decodeSession decodes from the session ID on: the cookie this package
// sends, if any, then the Ethernet frame.
func decodeSession(f *wire.Frame, b []byte) error {
	if binary.BigEndian.Uint32(b) == 0 {
		return nil
	}
	f.Encap = EncapL2TPv3
	b = b[4:]
	for _, n := range []int{8, 4} {
		if len(b) >= n && string(b[:n]) == string(cookie[:n]) {
			b = b[n:]
			break
		}
	}
	return wire.DecodeInner(f, wire.EtherTypeTEB, b)
}

// Session returns the session ID and the cookie length of an L2TPv3 frame
// that decodeUDP or decodeIP recognised, for the wire checks.
func Session(f wire.Frame) (session uint32, cookieLen int, ok bool) {
	if f.Encap != EncapL2TPv3 {
		return 0, 0, false
	}
	b := f.Payload
	if f.Proto == wire.ProtoUDP {
		b = b[4:]
	}
	session, b = binary.BigEndian.Uint32(b), b[4:]
	for _, n := range []int{8, 4} {
		if len(b) >= n && string(b[:n]) == string(cookie[:n]) {
			return session, n, true
		}
	}
	return session, 0, true
}
