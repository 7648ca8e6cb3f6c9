package ebpftun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// EBPF is tunbench's own eBPF tunnel data path (package ebpf) with one
// encapsulation: ebpf-geneve, ebpf-vxlan, ebpf-gre or ebpf-ipip. Each side
// gets one tc egress and one tc ingress program on its underlay device, a
// rule for the peer's overlay address (a map entry, not a device), a decap
// entry for the VNI or key, its overlay address on lo and one route for
// the overlay prefix through the underlay with the overlay MTU. The
// programs' maps are pinned under ebpf.PinRoot/<prefix>-<side>, where
// "tunbench ebpf stats" reads their counters.
//
// The packets are those of the kernel's devices: Geneve with no options
// and VXLAN on UDP 6081 and 4789 with an inner Ethernet header, GRE and
// IPIP with the inner IP packet. Geneve and VXLAN use an underlay of the
// measured family; GRE and IPIP an IPv4 one (like the kernel's gre and
// ipip methods).
type EBPF struct{ encap ebpf.Encap }

// The four eBPF methods.
var (
	EBPFGeneve = EBPF{ebpf.Geneve}
	EBPFVXLAN  = EBPF{ebpf.VXLAN}
	EBPFGRE    = EBPF{ebpf.GRE}
	EBPFIPIP   = EBPF{ebpf.IPIP}
)

func (m EBPF) Name() string { return "ebpf-" + m.encap.String() }

// Listens declares no socket (method.Listener): the tc program on the
// underlay device decapsulates the packets, UDP ones included, before
// they reach a socket. With decap=device (ebpf-vxlan) the kernel's
// collect_md VXLAN device receives them: its sockets on UDP 4789, on
// 0.0.0.0 and :: (an external device opens both families).
func (m EBPF) Listens(opts method.Values, _ string) []method.Listen {
	if m.encap != ebpf.VXLAN || opts.String("decap") != decapDevice {
		return nil
	}
	return []method.Listen{{Proto: "udp", Port: method.VXLANPort, Addr: method.ListenWildcard, Families: "both",
		Program: "kernel (collect_md vxlan device, decap=device)",
		Why:     "an external (collect_md) VXLAN device has no local address: the kernel opens its port on 0.0.0.0 and ::"}}
}

func (m EBPF) Implementation() string {
	return "tunbench eBPF " + m.encap.String() + " (tc clsact egress encap + ingress decap, rule map)"
}

func (m EBPF) Families() []string {
	if m.encap == ebpf.IPIP {
		return []string{method.IPv4}
	}
	return []string{method.IPv4, method.IPv6}
}

// underlay is the outer family for the measured family.
func (m EBPF) underlay(family string) string {
	if m.encap == ebpf.GRE || m.encap == ebpf.IPIP {
		return method.IPv4
	}
	return family
}

// UnderlayFamily is the outer family for the measured family (Underlayer).
func (m EBPF) UnderlayFamily(family string) string { return m.underlay(family) }

// Overhead is outer IP + UDP (8) + Geneve or VXLAN (8) + inner Ethernet
// (14), outer IPv4 + GRE (4, no key), or outer IPv4 (IPIP). A GRE key adds
// 4 bytes, which Setup reports as Path.OverlayMTU.
func (m EBPF) Overhead(family string) int {
	return m.encap.Overhead(m.underlay(family), false)
}

// The tunnels dimension (Env.Tunnels, docs/scale.md): one tunnel of an
// ebpf method is one rule in each side's map. The measured one is the
// peer's (rule 1, as with a single tunnel); the other N-1 are filler
// rules, host prefixes around the peer's overlay address that carry no
// traffic: IPv4 ones in 198.19.0.0/17, IPv6 ones in the overlay /64.
// They are spread over the block (see ebpf.FillerAddrs), so the peer's
// own lookup walks a trie as deep as that many rules make it, as it
// would in a mesh of that many sites, rather than branching off above
// them. (Before the dimension, the option rules set their number.)
var (
	fillerBlock4 = netip.MustParsePrefix("198.19.0.0/17")
	fillerBlock6 = netip.MustParsePrefix("2001:2:0:1::/64")
)

// maxFillers4 is how many IPv4 fillers fit: the /17 less the two overlay
// addresses.
const maxFillers4 = 1<<15 - 2

var srcportOption = method.Option{Name: "srcport", Default: "0", Min: 0, Max: 65535,
	Help: "outer UDP source port; 0 derives it from the inner flow hash (49152-65535)"}

// Values of ebpf-vxlan's option decap: where the receive side
// decapsulates (issue 41, docs/performance.md).
const (
	decapTC     = "tc"
	decapDevice = "device"
)

var decapOption = method.Option{Name: "decap", Default: decapTC, Values: []string{decapTC, decapDevice},
	Help: "where the receive side decapsulates: the tc ingress program (tc, bpf_skb_adjust_room), or a kernel VXLAN device in external (collect_md) mode on UDP 4789 with the kernel's GRO (device); the send side is the tc egress program either way"}

// Options declares the scenario options (see Option).
func (m EBPF) Options() []method.Option {
	switch m.encap {
	case ebpf.Geneve:
		return []method.Option{method.VNIOption, srcportOption}
	case ebpf.VXLAN:
		return []method.Option{method.VNIOption, srcportOption, decapOption}
	case ebpf.GRE:
		return []method.Option{{Name: "key", Default: "0", Min: 0, Max: 1<<32 - 1,
			Help: "GRE key; 0 sends no key (like the kernel's gre method)"}}
	}
	return nil
}

// MovedOption refuses the former option rules (method.OptionMover): the
// number of rules is the tunnels dimension now.
func (m EBPF) MovedOption(name string) (string, bool) {
	if name != "rules" {
		return "", false
	}
	return "the number of rules is the tunnels dimension now: give tunnels: [N] in the scenario (or --tunnels N) instead of options: {" +
		m.Name() + ": {rules: N}}", true
}

// Scale: one tunnel is one rule in each side's map (the peer's, or a
// filler); at most what the map holds, or over IPv4 what the filler block
// holds beside the peer's rule (method.Scaler).
// Its Cost: 10,000 rules set up in 180 to 452 ms here (docs/performance.md).
func (m EBPF) Scale(family string, _ method.Values) method.Scale {
	if family == method.IPv6 {
		return method.Scale{Unit: "rule", Max: ebpf.DefaultMaxRules, Cost: 50 * time.Microsecond,
			Why: fmt.Sprintf("the rule map holds %d entries", ebpf.DefaultMaxRules)}
	}
	return method.Scale{Unit: "rule", Max: 1 + maxFillers4, Cost: 50 * time.Microsecond,
		Why: fmt.Sprintf("the IPv4 filler rules fit %d host prefixes in %s beside the peer's (ipv6 takes more)", maxFillers4, fillerBlock4)}
}

func (m EBPF) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_BPF_SYSCALL", Bool: true},
		{Kernel: "CONFIG_NET_CLS_BPF", Module: "cls_bpf"},
		{Kernel: "CONFIG_NET_SCH_INGRESS", Module: "sch_ingress"},
		{Feature: ebpf.Requirement, Probe: ebpf.Probe},
	}
}

// pinDir is where side ep pins its maps.
func ebpfPinDir(env *method.Env, ep *testbed.Endpoint) string {
	return filepath.Join(ebpf.PinRoot, env.Prefix+"-"+ep.Side)
}

// ebpfParams are a Setup's options, resolved.
type ebpfParams struct {
	underlay   string // outer family
	vni        uint32 // VNI or GRE key
	greKey     bool
	srcPort    uint16 // 0: from the flow hash
	rules      int    // env.N(): the peer's and the fillers
	overlayMTU int
	device     bool // decap=device: a collect_md VXLAN device receives
}

func (m EBPF) params(env *method.Env) (ebpfParams, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return ebpfParams{}, err
	}
	if !method.Supports(m, env.Family) {
		return ebpfParams{}, method.UnsupportedFamily(m, env.Family)
	}
	p := ebpfParams{underlay: m.underlay(env.Family), vni: uint32(opts.Uint64("vni")),
		srcPort: uint16(opts.Int("srcport")), rules: env.N()}
	if m.encap == ebpf.VXLAN {
		p.device = opts.String("decap") == decapDevice
	}
	if s := m.Scale(env.Family, opts); p.rules > s.Max {
		return p, fmt.Errorf("%s: tunnels=%d: at most %d over %s: %s", m.Name(), p.rules, s.Max, env.Family, s.Why)
	}
	if m.encap == ebpf.GRE {
		p.vni = uint32(opts.Uint64("key"))
		p.greKey = p.vni != 0
	}
	p.overlayMTU = env.UnderlayMTU - m.encap.Overhead(p.underlay, p.greKey)
	return p, nil
}

// Setup loads and attaches the programs on both sides and writes the rules.
// Each side's kernel is probed first, on its own host (two hosts may run
// two kernels).
func (m EBPF) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	p, err := m.params(env)
	if err != nil {
		return nil, err
	}
	for _, ep := range env.Endpoints() {
		if err := probe(ctx, m, env, ep, false); err != nil {
			return nil, err
		}
		if p.underlay != env.Family {
			if err := probe(ctx, m, env, ep, true); err != nil {
				return nil, err
			}
		}
	}
	var adds []time.Duration
	for _, ep := range env.Endpoints() {
		took, err := m.setupSide(ctx, env, ep, p)
		if err != nil {
			return nil, err
		}
		adds = append(adds, took...)
	}
	oa, ob := method.Overlay(env.Family)
	path := &method.Path{
		A:       oa.Addr(),
		B:       ob.Addr(),
		Devices: map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}},
		Variant: "tc clsact " + m.encap.String() + " over " + p.underlay,
	}
	if p.device {
		path.Variant = "tc clsact " + m.encap.String() + " encap, vxlan device decap, over " + p.underlay
		for side, devs := range path.Devices {
			path.Devices[side] = append(devs, deviceName(env))
		}
	}
	if p.overlayMTU != env.OverlayMTU {
		path.OverlayMTU = p.overlayMTU
	}
	if env.N() > 1 {
		path.Adds = adds
	}
	return path, nil
}

// sides returns ep's overlay prefix and its peer's.
func sides(env *method.Env, ep *testbed.Endpoint) (mine, theirs netip.Prefix) {
	oa, ob := method.Overlay(env.Family)
	if ep == env.B {
		return ob, oa
	}
	return oa, ob
}

// peerRule is ep's rule toward its peer: the measured tunnel's, rule 1.
// The fillers are shaped like it.
func (m EBPF) peerRule(env *method.Env, ep *testbed.Endpoint, p ebpfParams) ebpf.Rule {
	_, theirs := sides(env, ep)
	return ebpf.Rule{
		ID: 1, Dst: method.HostPrefix(theirs.Addr()), Encap: m.encap, VNI: p.vni, GREKey: p.greKey,
		Local: ep.Addr(p.underlay), Remote: env.Peer(ep).Addr(p.underlay),
		SrcPortMin: p.srcPort, SrcPortMax: p.srcPort,
	}
}

// setupSide sets one endpoint up toward its peer, and returns how long
// each rule's write took (the peer's first, then the fillers').
func (m EBPF) setupSide(ctx context.Context, env *method.Env, ep *testbed.Endpoint, p ebpfParams) ([]time.Duration, error) {
	peer := env.Peer(ep)
	mine, theirs := sides(env, ep)
	lo, err := ep.NL.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("%s: find lo: %w", ep.Side, err)
	}
	if err := method.AddAddr(ep, lo, method.HostPrefix(mine.Addr())); err != nil {
		return nil, err
	}
	rules := []ebpf.Rule{m.peerRule(env, ep, p)}
	rules = append(rules, fillerRules(env.Family, p.rules-1, rules[0])...)
	// With decap=device the ingress program gets no decap entry (it
	// passes every packet on untouched) and the device does the work.
	var decaps []ebpf.Decap
	if !p.device {
		decaps = []ebpf.Decap{{ID: 1, Encap: m.encap, VNI: p.vni}}
	}
	adds, err := opAttach.Call(ctx, ep, attachArgs{
		PinDir: ebpfPinDir(env, ep), Dev: ep.Dev, Rules: rules, Decaps: decaps,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", hostOf(ep), err)
	}
	// The overlay prefix goes to the underlay; its next hop (the peer's
	// underlay address of the inner family) gives the Ethernet header the
	// egress program keeps.
	link, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		return nil, fmt.Errorf("%s: find underlay %s: %w", ep.Side, ep.Dev, err)
	}
	if p.device {
		if err := devicePlan(env, p).Apply(env, ep); err != nil {
			return nil, err
		}
	}
	return adds, method.RouteAdd(ep, &netlink.Route{
		LinkIndex: link.Attrs().Index,
		Dst:       testbed.PrefixNet(theirs.Masked()),
		Gw:        net.IP(peer.Addr(env.Family).AsSlice()),
		Src:       net.IP(mine.Addr().AsSlice()),
		MTU:       p.overlayMTU,
	})
}

// Grow adds one more rule on both sides while the programs run
// (method.Grower): filler number N, the next of ebpf.FillerAddrs, written
// into the pinned map. Teardown removes it with the map.
func (m EBPF) Grow(ctx context.Context, env *method.Env) (string, error) {
	p, err := m.params(env)
	if err != nil {
		return "", err
	}
	var dst netip.Prefix
	for _, ep := range env.Endpoints() {
		fillers := fillerRules(env.Family, p.rules, m.peerRule(env, ep, p))
		if len(fillers) < p.rules {
			s := m.Scale(env.Family, method.Values{})
			return "", fmt.Errorf("%s: grow past %d rules: %s", m.Name(), s.Max, s.Why)
		}
		r := fillers[p.rules-1]
		if _, err := opPutRules.Call(ctx, ep, putRulesArgs{PinDir: ebpfPinDir(env, ep), Rules: []ebpf.Rule{r}}); err != nil {
			return "", fmt.Errorf("%s: %w", hostOf(ep), err)
		}
		dst = r.Dst
	}
	return fmt.Sprintf("rule %d (%s) written into both sides' maps", p.rules+1, dst), nil
}

// fillerRules returns n rules shaped like like for filler host prefixes
// (ebpf.FillerAddrs), with IDs from 2.
func fillerRules(family string, n int, like ebpf.Rule) []ebpf.Rule {
	block, skip := fillerBlock4, []netip.Addr{method.OverlayA4.Addr(), method.OverlayB4.Addr()}
	if family == method.IPv6 {
		block, skip = fillerBlock6, []netip.Addr{method.OverlayA6.Addr(), method.OverlayB6.Addr()}
	}
	addrs := ebpf.FillerAddrs(block, n, skip...)
	rules := make([]ebpf.Rule, len(addrs))
	for i, a := range addrs {
		r := like
		r.ID = uint32(i + 2)
		r.Dst = method.HostPrefix(a)
		rules[i] = r
	}
	return rules
}

// Teardown detaches the programs, removes the route, the lo address and
// the pins on both sides.
func (m EBPF) Teardown(ctx context.Context, env *method.Env) error {
	return method.EachSide(env, func(ep *testbed.Endpoint) error { return m.teardownSide(ctx, env, ep) })
}

func (m EBPF) teardownSide(ctx context.Context, env *method.Env, ep *testbed.Endpoint) error {
	if ep == nil || ep.NL == nil {
		return nil
	}
	mine, theirs := sides(env, ep)
	var errs []error
	// The pins go with the programs; without a prefix (an interop test's
	// side set up by hand) nothing was pinned by this run.
	pins := ""
	if env.Prefix != "" {
		pins = ebpfPinDir(env, ep)
	}
	if _, err := opDetach.Call(ctx, ep, detachArgs{PinDir: pins, Dev: ep.Dev}); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", hostOf(ep), err))
	}
	routes, err := ep.NL.RouteListFiltered(method.FamilyOf(theirs.Addr()), &netlink.Route{Dst: testbed.PrefixNet(theirs.Masked())}, netlink.RT_FILTER_DST)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: list routes to %s: %w", ep.Side, theirs.Masked(), err))
	}
	for _, r := range routes {
		// Only the route Setup added: from this side's overlay address.
		// A host's own route to the same prefix is not the run's.
		if !r.Src.Equal(net.IP(mine.Addr().AsSlice())) {
			continue
		}
		if err := ep.NL.RouteDel(&r); err != nil {
			errs = append(errs, fmt.Errorf("%s: delete route %s: %w", ep.Side, r, err))
		}
	}
	if lo, err := ep.NL.LinkByName("lo"); err == nil {
		_ = ep.NL.AddrDel(lo, &netlink.Addr{IPNet: testbed.PrefixNet(method.HostPrefix(mine.Addr()))})
	}
	if p, err := m.params(env); err == nil && p.device {
		errs = append(errs, devicePlan(env, p).Undo(ep))
	}
	return errors.Join(errs...)
}

// deviceName is decap=device's VXLAN device, with the run's prefix.
func deviceName(env *method.Env) string { return env.Prefix + "-evx" }

// devicePlan is decap=device's receive side on one endpoint: a VXLAN
// device in external (collect_md) mode on UDP 4789, which the kernel's
// VXLAN socket feeds (with its GRO) once the ingress program passes the
// packets on. The egress program writes the inner Ethernet destination
// ebpf.InnerMAC: the device carries that address, so the inner packets it
// hands up are the host's own and reach the overlay address on lo. It
// carries no address and no route: the send path stays the egress
// program's. It accepts IPv6 packets with a zero UDP checksum, which the
// egress program sends.
func devicePlan(env *method.Env, p ebpfParams) method.Plan {
	return method.Plan{Links: []method.PlanLink{{
		Link: &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: deviceName(env), MTU: p.overlayMTU, HardwareAddr: ebpf.InnerMAC},
			FlowBased: true,
			Port:      method.VXLANPort,
			Learning:  false,
			// The egress program sends a zero UDP checksum over IPv6
			// too (as the kernel's udp6zerocsumtx would).
			UDP6ZeroCSumRx: true,
		},
		Kind:   "vxlan (external, decap=device)",
		Config: "CONFIG_VXLAN",
		MTU:    p.overlayMTU,
	}}}
}

// Counters reads the counters of both sides (before Teardown), one line
// per rule or decap entry, for the cell's metadata.
func (m EBPF) Counters(ctx context.Context, env *method.Env) (map[string]string, error) {
	out := map[string]string{}
	for _, ep := range env.Endpoints() {
		s, err := Stats(ctx, ep, ebpfPinDir(env, ep))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ep.Side, err)
		}
		for _, r := range s.Rules {
			if r.ID == 1 {
				out["ebpf."+ep.Side+".rule"] = fmt.Sprintf("%s %s vni %d: %s", r.Dst, r.Encap, r.VNI, r.Counters)
			}
		}
		for _, d := range s.Decaps {
			out["ebpf."+ep.Side+".decap"] = fmt.Sprintf("%s vni %d: %s", d.Encap, d.VNI, d.Counters)
		}
		out["ebpf."+ep.Side+".drops"] = ebpf.Counters{Drops: s.Drops}.DropString()
		out["ebpf."+ep.Side+".not-ours"] = fmt.Sprintf("passed %d", s.NotOurs)
		if p, err := m.params(env); err == nil && p.device {
			// decap=device: what the device handed up, after the
			// kernel's GRO (bytes / packets is its superpacket size).
			link, err := ep.NL.LinkByName(deviceName(env))
			if err != nil {
				return nil, fmt.Errorf("%s: find %s: %w", ep.Side, deviceName(env), err)
			}
			if st := link.Attrs().Statistics; st != nil {
				out["ebpf."+ep.Side+".device"] = fmt.Sprintf("%s rx packets %d bytes %d dropped %d", deviceName(env), st.RxPackets, st.RxBytes, st.RxDropped)
			}
		}
	}
	return out, nil
}
