package ipsec

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// IPsecECMP is N parallel IPsec tunnels between the same two endpoints,
// with the overlay traffic spread over them by an ECMP route that hashes
// on the L4 5-tuple (fib_multipath_hash_policy 1), so that each TCP flow
// stays on one tunnel and several flows use several tunnels. This is the
// technique of scaling encryption with several tunnels, each processed
// independently, instead of one tunnel that one core must carry.
//
// On kernel-libipsec (this machine: no kernel ESP) every tunnel is its own
// charon pair: charon i per side has its own TUN device, its own IKE_SA
// and CHILD_SA, and its own UDP ports (NAT-T port 4500+i), so the tunnels
// differ on the wire by port and each is carried by its own daemon. On the
// kernel xfrm path one charon per side negotiates N CHILD_SAs, each bound
// to its own xfrm interface (if_id i+1); that needs CONFIG_XFRM_INTERFACE
// (the kernel lab). Either way the ECMP route is a nexthop group over the
// N devices (IPv6 cannot build device-only multipath routes any other way).
// CHILD_SAs are not rekeyed (rekey_time 0), so that charon never
// reinstalls its single-device route over the ECMP route.
//
// Options: tunnels (default 2, at most 8), cipher, natt and datapath as for
// ipsec; tunnel mode only.
type IPsecECMP struct{ runs ipsecRuns }

// NewIPsecECMP returns the "ipsec-ecmp" method.
func NewIPsecECMP() *IPsecECMP { return &IPsecECMP{} }

func (*IPsecECMP) Name() string       { return "ipsec-ecmp" }
func (*IPsecECMP) Families() []string { return []string{method.IPv4, method.IPv6} }

func (*IPsecECMP) Implementation() string { return ecmpImplementation(programVersion.Local()) }

// ImplementationOn names the strongSwan of ep's host.
func (*IPsecECMP) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return ecmpImplementation(programVersion.On(ctx, ep))
}

func ecmpImplementation(version string) string {
	return version + " charon, N IPsec tunnels behind an ECMP nexthop group (L4 hash); kernel-libipsec: a charon and TUN device per tunnel; kernel xfrm: an xfrm interface per CHILD_SA"
}

// Overhead is that of ipsec: each packet goes through one tunnel.
func (*IPsecECMP) Overhead(family string) int { return ipsecOverhead(family, "tunnel", true) }

// HeaderOverhead is IPsec's.
func (*IPsecECMP) HeaderOverhead(family string, opts map[string]string, variant string) int {
	return ipsecHeaderOverhead(family, opts, variant)
}

// Scale refuses the tunnels dimension (method.Scaler; ecmpScale): the
// method's tunnels are its own option.
func (*IPsecECMP) Scale(string, method.Values) method.Scale { return ecmpScale() }

// Options declares the scenario options (see Option).
func (*IPsecECMP) Options() []method.Option { return ipsecDeclared(true) }

// Listens declares the sockets a run opens (method.Listener): with the
// xfrm data path one charon a side on 500 and 4500; with kernel-libipsec
// one charon a tunnel, tunnel i on a port it picks for IKE and on 4500+i,
// all on the wildcard address of the run's family only. With datapath
// auto, which picks one of the two at set-up, the ports of either: IKE at
// 500 or ports charon picks, 4500, and tunnel i's 4500+i only when
// kernel-libipsec was picked (declared at any port).
func (*IPsecECMP) Listens(opts method.Values, _ string) []method.Listen {
	dp := opts.String("datapath")
	if dp == ipsecXfrm {
		return []method.Listen{charonListen(500, ""), charonListen(4500, "")}
	}
	var ls []method.Listen
	for i := range opts.Int("tunnels") {
		t := "tunnel " + strconv.Itoa(i)
		nat := charonListen(4500+i, t)
		if dp == ipsecAuto {
			t = "xfrm: 500 once a side; kernel-libipsec: " + t
			if i > 0 {
				nat.Port = 0
				nat.Program += " at 4500+" + strconv.Itoa(i) + " (kernel-libipsec only)"
			}
		}
		ls = append(ls, charonListen(0, t), nat)
	}
	return ls
}

func (*IPsecECMP) Requirements() []method.Requirement {
	return append(ipsecRequirements(),
		method.Requirement{Kernel: "CONFIG_IP_ROUTE_MULTIPATH", Bool: true},
		// ip nexthop: netlink has no nexthop objects. The kernel xfrm path
		// also needs CONFIG_XFRM_INTERFACE (Setup says so when missing).
		method.Requirement{Program: "ip", Package: "iproute2"},
	)
}

// ecmpNexthopBase is the id of the nexthop group; its members are
// ecmpNexthopBase+1 ... +N.
const ecmpNexthopBase = 4600

// ecmpXfrmName is the name of the xfrm interface of tunnel i.
func ecmpXfrmName(env *method.Env, i int) string { return env.Prefix + "-x" + strconv.Itoa(i) }

// ecmpAddrs are a side's own overlay address and its peer's.
type ecmpAddrs struct{ local, remote netip.Addr }

// ecmpSetup is the state of one IPsecECMP.Setup.
type ecmpSetup struct {
	env   *method.Env
	o     ipsecOptions
	dp    string
	psk   string
	encap bool
	mtu   int
	run   *ipsecRun
	path  *method.Path
	addrs map[*testbed.Endpoint]ecmpAddrs
}

// Setup starts the tunnels, initiates every CHILD_SA from a, and installs
// the ECMP route on both sides.
func (m *IPsecECMP) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	o, err := parseIPsecOptions(env.Options, true)
	if err != nil {
		return nil, err
	}
	if err := checkScale("ipsec-ecmp", env, ecmpScale()); err != nil {
		return nil, err
	}
	dp, err := chooseDatapath(ctx, env, o)
	if err != nil {
		return nil, err
	}
	psk, err := newPSK()
	if err != nil {
		return nil, err
	}
	s := &ecmpSetup{env: env, o: o, dp: dp, psk: psk, run: &ipsecRun{}}
	m.runs.put(env, s.run)
	s.encap = o.NATT || dp == ipsecLibipsec
	s.mtu = ipsecMTU(env, dp)
	oa, ob := method.Overlay(env.Family)
	s.addrs = map[*testbed.Endpoint]ecmpAddrs{env.A: {oa.Addr(), ob.Addr()}, env.B: {ob.Addr(), oa.Addr()}}
	s.path = &method.Path{
		A: oa.Addr(), B: ob.Addr(),
		Devices:    map[string][]string{},
		Variant:    ipsecVariant(dp, s.encap, s.mtu, env.OverlayMTU) + fmt.Sprintf(", %d tunnels, ECMP L4 hash", o.Tunnels),
		Datapath:   ipsecDatapath(dp),
		OverlayMTU: s.mtu,
	}
	for _, ep := range env.Endpoints() {
		if err := addLoAddr(ep, s.addrs[ep].local); err != nil {
			return nil, err
		}
	}
	if dp == ipsecLibipsec {
		err = s.libipsec(ctx)
	} else {
		err = s.xfrm(ctx)
	}
	if err != nil {
		return nil, err
	}
	for _, ep := range env.Endpoints() {
		devs := s.path.Devices[ep.Side]
		table := 0 // main
		if dp == ipsecLibipsec {
			// kernel-libipsec always routes into charon's table (the
			// run's, runTable); replace its single-device route there.
			t, _ := s.run.tableOf(ep.Side)
			table = t.Table
		}
		if err := ecmpRoute(ctx, ep, s.run, env.Family, devs, s.addrs[ep].local, s.addrs[ep].remote, s.mtu, table); err != nil {
			return nil, err
		}
		s.path.Devices[ep.Side] = append(devs, ep.Dev)
	}
	return s.path, nil
}

// child is the CHILD_SA of tunnel i.
func (s *ecmpSetup) child(ep *testbed.Endpoint, i int) swanctlChild {
	return swanctlChild{
		Name: "t" + strconv.Itoa(i), Mode: "tunnel",
		LocalTS: ipsecTS(s.addrs[ep].local), RemoteTS: ipsecTS(s.addrs[ep].remote),
		ESPProposal: espProposal(s.o.Cipher), NoRekey: true,
	}
}

// conn is ep's connection name with children.
func (s *ecmpSetup) conn(ep *testbed.Endpoint, name string, remotePort int, children ...swanctlChild) swanctlConfig {
	peer := s.env.Peer(ep)
	return swanctlConfig{
		Name: name, LocalAddr: ep.Addr(s.env.Family).String(), RemoteAddr: peer.Addr(s.env.Family).String(),
		RemotePort: remotePort, LocalID: ipsecID(ep), RemoteID: ipsecID(peer),
		Encap: s.encap, Children: children, PSK: s.psk,
	}
}

// started records a charon that startCharon started, even when it failed.
func (s *ecmpSetup) started(c *charon, err error) error {
	if c != nil && c.proc != nil {
		s.run.add(c)
		s.path.Daemons = append(s.path.Daemons, c.proc.Daemon())
	}
	return err
}

// libipsec starts tunnel i as charon i on each side, with its own TUN
// device and NAT-T port 4500+i, and initiates it.
func (s *ecmpSetup) libipsec(ctx context.Context) error {
	for i := 0; i < s.o.Tunnels; i++ {
		name := "t" + strconv.Itoa(i)
		var pair []*charon
		for _, ep := range s.env.Endpoints() {
			sideDir, err := method.SideDir(s.env, "ipsec-ecmp", ep)
			if err != nil {
				return err
			}
			table, err := s.run.table(ep, s.env.Prefix)
			if err != nil {
				return err
			}
			c, err := startCharon(ctx, ep, filepath.Join(sideDir, name), charonConfig{
				Datapath: s.dp, Port: 0, PortNATT: 4500 + i, RouteMTU: s.mtu, InstallRoutes: true, Table: table, Family: s.env.Family,
			})
			if err := s.started(c, err); err != nil {
				return err
			}
			if c.tun, err = c.tunDevice(ctx); err != nil {
				return err
			}
			if err := setLinkMTU(ep, c.tun, s.mtu); err != nil {
				return err
			}
			s.path.Devices[ep.Side] = append(s.path.Devices[ep.Side], c.tun)
			if err := c.load(ctx, s.conn(ep, name, 4500+i, s.child(ep, i))); err != nil {
				return err
			}
			pair = append(pair, c)
		}
		if err := handshake(ctx, pair[0], pair[1], name); err != nil {
			return err
		}
	}
	return nil
}

// xfrm starts one charon per side. Tunnel i is connection t<i> with its
// own IKE_SA and identities (the responder picks the connection by
// identity: the CHILD_SAs' traffic selectors are all alike) and a
// CHILD_SA bound to xfrm interface i (if_id i+1).
func (s *ecmpSetup) xfrm(ctx context.Context) error {
	var pair []*charon
	for _, ep := range s.env.Endpoints() {
		under, err := ep.NL.LinkByName(ep.Dev)
		if err != nil {
			return fmt.Errorf("%s: find underlay %s: %w", ep.Side, ep.Dev, err)
		}
		var conns []swanctlConfig
		for i := 0; i < s.o.Tunnels; i++ {
			dev := ecmpXfrmName(s.env, i)
			x := &netlink.Xfrmi{LinkAttrs: netlink.LinkAttrs{Name: dev, ParentIndex: under.Attrs().Index}, Ifid: uint32(i + 1)}
			if err := method.AddLink(ep, x, s.mtu, netip.Prefix{}); err != nil {
				return fmt.Errorf("%w: kernel xfrm ECMP needs xfrm interfaces (CONFIG_XFRM_INTERFACE): %v", method.ErrNotSupported, err)
			}
			s.path.Devices[ep.Side] = append(s.path.Devices[ep.Side], dev)
			ch := s.child(ep, i)
			ch.IfID = i + 1
			conn := s.conn(ep, ch.Name, 0, ch)
			conn.LocalID += "-" + ch.Name
			conn.RemoteID += "-" + ch.Name
			conns = append(conns, conn)
		}
		sideDir, err := method.SideDir(s.env, "ipsec-ecmp", ep)
		if err != nil {
			return err
		}
		table, err := s.run.table(ep, s.env.Prefix)
		if err != nil {
			return err
		}
		c, err := startCharon(ctx, ep, sideDir, charonConfig{Datapath: s.dp, Port: 500, PortNATT: 4500, Table: table, Family: s.env.Family})
		if err := s.started(c, err); err != nil {
			return err
		}
		if err := c.load(ctx, conns...); err != nil {
			return err
		}
		pair = append(pair, c)
	}
	for i := 0; i < s.o.Tunnels; i++ {
		if err := handshake(ctx, pair[0], pair[1], "t"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// ecmpRoute sets the multipath hash policy of family to L4 and routes dst
// (from src) over a nexthop group of devs, with the given MTU. Both are
// undone by run's restore functions.
func ecmpRoute(ctx context.Context, ep *testbed.Endpoint, run *ipsecRun, family string, devs []string, src, dst netip.Addr, mtu, table int) error {
	if err := setMultipathHash(ep, run, family); err != nil {
		return err
	}
	fam := "-4"
	if family == method.IPv6 {
		fam = "-6"
	}
	run.mu.Lock()
	run.restore = append(run.restore, func() error { return delNexthops(ep, len(devs)) })
	run.mu.Unlock()
	var members []string
	for i, dev := range devs {
		id := strconv.Itoa(ecmpNexthopBase + 1 + i)
		if _, err := ep.Run(ctx, "ip", fam, "nexthop", "replace", "id", id, "dev", dev); err != nil {
			return err
		}
		members = append(members, id)
	}
	group := strconv.Itoa(ecmpNexthopBase)
	if _, err := ep.Run(ctx, "ip", "nexthop", "replace", "id", group, "group", strings.Join(members, "/")); err != nil {
		return err
	}
	argv := []string{"ip", fam, "route", "replace", method.HostPrefix(dst).String(), "nhid", group, "src", src.String(), "mtu", strconv.Itoa(mtu)}
	if table != 0 {
		argv = append(argv, "table", strconv.Itoa(table))
	}
	if cc := ep.RouteCongestion; cc != "" {
		argv = append(argv, "congctl", cc)
	}
	_, err := ep.Run(ctx, argv...)
	return err
}

// delNexthops deletes the nexthop group and its n members where they still
// exist (deleting a device deletes its nexthops).
func delNexthops(ep *testbed.Endpoint, n int) error {
	out, err := ep.Run(context.Background(), "ip", "-o", "nexthop", "show")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "id" {
			have[f[1]] = true
		}
	}
	var errs []error
	for i := 0; i <= n; i++ {
		id := strconv.Itoa(ecmpNexthopBase + i)
		if !have[id] {
			continue
		}
		if _, err := ep.Run(context.Background(), "ip", "nexthop", "del", "id", id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setMultipathHash sets fib_multipath_hash_policy of family to 1 (L4
// 5-tuple) in ep's namespace and records the old value in run. The
// endpoint's file operations run inside its namespace, on its host.
func setMultipathHash(ep *testbed.Endpoint, run *ipsecRun, family string) error {
	file := "/proc/sys/net/ipv4/fib_multipath_hash_policy"
	if family == method.IPv6 {
		file = "/proc/sys/net/ipv6/fib_multipath_hash_policy"
	}
	old, err := ep.ReadFile(file)
	if err != nil {
		return err
	}
	if err := ep.WriteFile(file, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("set %s to 1: %w", file, err)
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	run.restore = append(run.restore, func() error {
		if err := ep.WriteFile(file, old, 0o644); err != nil {
			return fmt.Errorf("restore %s: %w", file, err)
		}
		return nil
	})
	return nil
}

// Teardown stops every charon, undoes the ECMP route and hash policy,
// deletes the xfrm interfaces and cleans up as ipsec does.
func (m *IPsecECMP) Teardown(ctx context.Context, env *method.Env) error {
	err := ipsecTeardown(env, m.runs.take(env), "ipsec-ecmp")
	var errs []error
	for _, ep := range env.Endpoints() {
		var names []string
		for i := 0; i < maxIPsecTunnels; i++ {
			names = append(names, ecmpXfrmName(env, i))
		}
		if err := method.DelLinks(ep, names...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append([]error{err}, errs...)...)
}
