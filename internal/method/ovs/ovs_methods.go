package ovs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// OVS is an Open vSwitch tunnel port (vxlan, geneve or gre) between two
// private OVS instances, one per side: an ovsdb-server and an ovs-vswitchd
// started in the side's namespace, with database, sockets, pid files and
// logs in the run directory, driven by ovs-vsctl and ovs-appctl.
//
// Each side has a bridge <prefix>-ovs ("br-int") whose internal port
// carries the overlay address with MTU Env.OverlayMTU (mtu_request), and a
// tunnel port <prefix>-tun to the peer's underlay address. Both bridges
// forward with OVS's default NORMAL flow (MAC learning).
//
// Datapaths (option "datapath", recorded as Path.Variant):
//   - "netdev", the userspace datapath. The underlay device becomes a port
//     of a second bridge <prefix>-phy ("br-phy"), and the underlay
//     addresses move from the device to br-phy's internal port, where
//     ovs-vswitchd's native tunnelling finds its route and neighbour;
//     the device gets arp_ignore=1 so that only br-phy answers ARP.
//     The kernel drops the host's routes through the device with its
//     addresses; they are journaled (every table, both families) before
//     the move (see moveAddrs for why the addresses cannot stay).
//     Teardown puts addresses, routes and arp_ignore back exactly.
//   - "system", the kernel datapath (CONFIG_OPENVSWITCH): the tunnel port
//     is the kernel's flow-based vxlan_sys_<port>, genev_sys_<port>,
//     gre_sys or ip6gre_sys device and the underlay addresses stay where
//     they are.
//   - "auto" (the default): system when the kernel has the datapath
//     (after "modprobe openvswitch"), else netdev.
//
// Options: "datapath" (above); "key", the VXLAN or Geneve VNI or the GRE
// key (default 42); "vni" is the same as "key" for vxlan and geneve;
// "tunnels", what one tunnel of the tunnels dimension is (ovs_scale.go).
//
// Performance (netdev): the veth and tap ports are polled by
// ovs-vswitchd's main thread (PMD settings do not apply, and OVS 3.1's
// userspace TSO cannot encapsulate), so each side costs about half a core
// per 0.6 Gbit/s and the result falls steeply when other processes want
// the CPU. The receiving ovs-vswitchd drops packets on its AF_PACKET
// socket (rcvbuf = net.core.rmem_default, a global sysctl, 208 KiB here):
// those drops are all of iperf3's retransmits.
//
// OVS is safe for concurrent use by runs with distinct Env.Dir.
type OVS struct {
	tunnel string // OVS interface type: vxlan, geneve, gre
	port   int    // UDP destination port; 0 for gre

	mu   sync.Mutex
	runs map[string]*ovsRun // by Env.Dir
}

type ovsRun struct {
	datapath string
	sides    []*ovsSide
}

// NewOVSVXLAN returns the ovs-vxlan method: an OVS vxlan port, UDP 4789.
func NewOVSVXLAN() *OVS { return newOVS("vxlan", method.VXLANPort) }

// NewOVSGeneve returns the ovs-geneve method: an OVS geneve port, UDP
// 6081, no options.
func NewOVSGeneve() *OVS { return newOVS("geneve", 6081) }

// NewOVSGRE returns the ovs-gre method: an OVS gre port (ip6gre over
// IPv6) with a key, carrying Ethernet frames (like gretap).
func NewOVSGRE() *OVS { return newOVS("gre", 0) }

func newOVS(tunnel string, port int) *OVS {
	return &OVS{tunnel: tunnel, port: port, runs: map[string]*ovsRun{}}
}

func (m *OVS) Name() string { return "ovs-" + m.tunnel }

// Implementation names the installed Open vSwitch, e.g. "Open vSwitch
// 3.1.0 vxlan port (netdev or system datapath)".
func (m *OVS) Implementation() string { return m.implementation(programVersion.Local()) }

// ImplementationOn names the Open vSwitch of ep's host.
func (m *OVS) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return m.implementation(programVersion.On(ctx, ep))
}

func (m *OVS) implementation(version string) string {
	return version + " " + m.tunnel + " port (netdev or system datapath)"
}

// Families: both, for the underlay and the overlay alike.
func (m *OVS) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead is what the tunnel adds to each overlay packet. OVS tunnel
// ports carry Ethernet frames, so every packet also carries the inner
// Ethernet header (14):
//   - vxlan:  outer IP (20 or 40) + UDP (8) + VXLAN (8) + 14 = 50 or 70
//   - geneve: outer IP + UDP (8) + Geneve base header without options
//     (8) + 14 = 50 or 70
//   - gre:    outer IP + GRE with key (4 + 4; no checksum, no sequence
//     number) + 14 = 42 or 62
func (m *OVS) Overhead(family string) int {
	ip := 20
	if family == method.IPv6 {
		ip = 40
	}
	if m.tunnel == "gre" {
		return ip + 4 + 4 + 14
	}
	return ip + 8 + 8 + 14
}

// Requirements: the OVS programs and ping (Setup waits for the first
// packet through the tunnel); netdev's internal ports are tap devices. The
// kernel datapath is optional: without it "auto" uses netdev.
func (m *OVS) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_TUN", Module: "tun"},
		{Program: "ovs-vswitchd", Package: "openvswitch-switch"},
		{Program: "ovs-vsctl", Package: "openvswitch-switch"},
		{Program: "ovs-dpctl", Package: "openvswitch-switch"},
		{Program: "ovsdb-server", Package: "openvswitch-common"},
		{Program: "ovsdb-tool", Package: "openvswitch-common"},
		{Program: "ovs-appctl", Package: "openvswitch-common"},
		{Program: "ovs-ofctl", Package: "openvswitch-common"},
		{Program: "ping", Package: "iputils-ping"},
	}
}

// programVersion turns the first line of "ovs-vswitchd --version"
// ("ovs-vswitchd (Open vSwitch) 3.1.0") into "Open vSwitch 3.1.0";
// another first line stays as it is.
var programVersion = &method.ProgramVersion{Program: "ovs-vswitchd", Parse: func(out []byte) string {
	line := method.FirstLine(out)
	if _, rest, ok := strings.Cut(line, "(Open vSwitch) "); ok {
		return "Open vSwitch " + rest
	}
	return line
}}

// ovsNames are the names of what Setup creates on each side.
type ovsNames struct {
	integ, phy, tun string
}

func ovsNamesOf(env *method.Env) ovsNames {
	return ovsNames{integ: env.Prefix + "-ovs", phy: env.Prefix + "-phy", tun: env.Prefix + "-tun"}
}

// portType is the OVS interface type of the tunnel port: OVS's "gre" is
// GRE over IPv4 only (on the kernel datapath an IPv6 remote_ip is
// accepted but nothing arrives); over IPv6 it is "ip6gre", which carries
// Ethernet frames just the same.
func (m *OVS) portType(family string) string {
	if m.tunnel == "gre" && family == method.IPv6 {
		return "ip6gre"
	}
	return m.tunnel
}

// kernelDevs are the kernel devices behind the tunnel port on the system
// datapath (whichever family).
func (m *OVS) kernelDevs() []string {
	switch m.tunnel {
	case "vxlan":
		return []string{"vxlan_sys_" + strconv.Itoa(m.port)}
	case "geneve":
		return []string{"genev_sys_" + strconv.Itoa(m.port)}
	}
	return []string{"gre_sys", "ip6gre_sys"}
}

// Options declares the scenario options (see Option): "datapath",
// "tunnels", and "key", the VXLAN or Geneve VNI or the GRE key; vxlan and
// geneve also take "vni", as the kernel methods call it.
func (m *OVS) Options() []method.Option {
	key := method.Option{Name: "key", Default: "42", Min: 1, Max: 1<<24 - 1, Help: "tunnel key: the VNI"}
	opts := []method.Option{{Name: "datapath", Default: OVSAuto, Values: []string{OVSAuto, OVSNetdev, OVSSystem},
		Help: "netdev (userspace, in ovs-vswitchd), system (kernel module), or system when the kernel has it (auto)"},
		{Name: "tunnels", Default: scalePorts, Values: []string{scalePorts, scaleFlows},
			Help: "what one tunnel of the tunnels dimension is: a tunnel port with its own key (ports, at most 1000), or a tun_id on one key=flow port (flows)"}}
	if m.tunnel == "gre" {
		key.Max, key.Help = 1<<32-1, "GRE key"
		return append(opts, key)
	}
	return append(opts, key, method.Option{Name: "vni", Default: "42", Min: 1, Max: 1<<24 - 1, Help: "the same as key"})
}

// CheckOptions refuses key and vni together.
func (m *OVS) CheckOptions(v method.Values) error {
	if v.Given("key") && v.Given("vni") {
		return fmt.Errorf("options key and vni name the same thing: give one of them")
	}
	return nil
}

// key returns the tunnel key the options select.
func (m *OVS) key(v method.Values) uint64 {
	if v.Given("vni") {
		return v.Uint64("vni")
	}
	return v.Uint64("key")
}

// datapath resolves option "datapath".
func (m *OVS) datapath(ctx context.Context, env *method.Env, dp string) (string, error) {
	switch dp {
	case OVSAuto, OVSSystem:
		// Each side runs its own OVS on its own host: system only where
		// both kernels have the datapath.
		for _, ep := range env.Endpoints() {
			ok, err := ovsKernelDatapath(ctx, ep)
			if err != nil {
				return "", err
			}
			switch {
			case ok:
				continue
			case dp == OVSSystem:
				where := ep.Side
				if ep.Host != "" {
					where += " (host " + ep.Host + ")"
				}
				return "", fmt.Errorf("%s: datapath=system: %w: the kernel of %s lacks CONFIG_OPENVSWITCH (no openvswitch module); use datapath=netdev, or run it in the kernel lab (--testbed vm)", m.Name(), method.ErrNotSupported, where)
			}
			return OVSNetdev, nil
		}
		return OVSSystem, nil
	case OVSNetdev:
		return OVSNetdev, nil
	}
	return "", fmt.Errorf("%s: option datapath=%q: want auto, netdev or system", m.Name(), dp)
}

// ovsDatapathName is dp as Path.Datapath names it: the system datapath
// is the kernel's.
func ovsDatapathName(dp string) string {
	if dp == OVSNetdev {
		return method.DatapathNetdev
	}
	return method.DatapathKernel
}

// tunnelArgs are the ovs-vsctl arguments that set the tunnel interface up
// toward remote.
func (m *OVS) tunnelArgs(name, family, remote string, key uint64) []string {
	args := []string{"--", "set", "Interface", name, "type=" + m.portType(family),
		"options:remote_ip=" + remote, "options:key=" + strconv.FormatUint(key, 10)}
	if m.port != 0 {
		args = append(args, "options:dst_port="+strconv.Itoa(m.port))
	}
	return args
}

// bridgeArgs are the ovs-vsctl arguments that create a bridge on
// datapath dp whose internal port has MTU mtu.
func bridgeArgs(name, dp string, mtu int) []string {
	return []string{
		"--", "add-br", name,
		"--", "set", "Bridge", name, "datapath_type=" + dp,
		"--", "set", "Interface", name, "mtu_request=" + strconv.Itoa(mtu),
	}
}

func (m *OVS) record(env *method.Env, r *ovsRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[env.Dir] = r
}

func (m *OVS) take(env *method.Env) *ovsRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.runs[env.Dir]
	delete(m.runs, env.Dir)
	return r
}

// Setup starts OVS on both sides, creates the bridges and the tunnel
// port, moves addresses as the datapath needs, and waits (at most 15 s)
// until a ping crosses the tunnel.
func (m *OVS) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	key := m.key(opts)
	dp, err := m.datapath(ctx, env, opts.String("datapath"))
	if err != nil {
		return nil, err
	}
	run := &ovsRun{datapath: dp}
	m.record(env, run)
	n := ovsNamesOf(env)
	oa, ob := method.Overlay(env.Family)
	path := &method.Path{A: oa.Addr(), B: ob.Addr(), Devices: map[string][]string{}, Variant: dp, Datapath: ovsDatapathName(dp)}
	for i, ep := range env.Endpoints() {
		dir, err := method.SideDir(env, m.Name(), ep)
		if err != nil {
			return nil, err
		}
		s := &ovsSide{ep: ep, dir: dir}
		run.sides = append(run.sides, s)
		if err := s.start(ctx); err != nil {
			return nil, err
		}
		path.Daemons = append(path.Daemons, s.vsd.Daemon(), s.db.Daemon())

		remote := env.Peer(ep).Addr(env.Family).String()
		args := bridgeArgs(n.integ, dp, env.OverlayMTU)
		args = append(args, "--", "add-port", n.integ, n.tun)
		args = append(args, m.tunnelArgs(n.tun, env.Family, remote, key)...)
		ports := []string{n.integ, n.tun}
		if dp == OVSNetdev {
			if err := s.recordPromisc(); err != nil {
				return nil, err
			}
			args = append(args, bridgeArgs(n.phy, dp, env.UnderlayMTU)...)
			args = append(args, "--", "add-port", n.phy, ep.Dev)
			ports = append(ports, n.phy, ep.Dev)
		}
		if _, err := s.vsctl(ctx, args...); err != nil {
			return nil, s.vsd.Failure("configure bridges", err)
		}
		if err := s.checkPorts(ctx, ports...); err != nil {
			return nil, err
		}

		devs := []string{n.integ}
		if dp == OVSNetdev {
			if err := s.setArpIgnore(); err != nil {
				return nil, err
			}
			if err := s.moveAddrs(ctx, n.phy); err != nil {
				return nil, err
			}
			if err := ovsLinkUp(ep, n.phy); err != nil {
				return nil, err
			}
			devs = append(devs, n.phy)
		} else {
			for _, d := range m.kernelDevs() {
				if _, err := ep.NL.LinkByName(d); err == nil {
					devs = append(devs, d)
				}
			}
		}
		path.Devices[ep.Side] = append(devs, ep.Dev)

		addr := oa
		if i == 1 {
			addr = ob
		}
		link, err := ep.NL.LinkByName(n.integ)
		if err != nil {
			return nil, fmt.Errorf("%s: find %s: %w", ep.Side, n.integ, err)
		}
		if got := link.Attrs().MTU; got != env.OverlayMTU {
			return nil, s.vsd.Failure(fmt.Sprintf("%s has mtu %d, want %d (mtu_request)", n.integ, got, env.OverlayMTU), nil)
		}
		if err := method.AddAddr(ep, link, addr); err != nil {
			return nil, err
		}
		if err := ovsLinkUp(ep, n.integ); err != nil {
			return nil, err
		}
	}
	if err := m.waitPath(ctx, env, run, path); err != nil {
		return nil, err
	}
	if env.N() > 1 {
		if path.Adds, err = m.setupScaled(ctx, env, run, key, opts.String("tunnels") == scaleFlows); err != nil {
			return nil, err
		}
	}
	return path, nil
}

// waitPath pings B's overlay address from A until it answers: the
// userspace datapath drops the first packets while it resolves the
// peer's underlay neighbour.
func (m *OVS) waitPath(ctx context.Context, env *method.Env, run *ovsRun, path *method.Path) error {
	err := method.WaitFor(ctx, ovsPathTimeout, "ping "+path.B.String()+" through "+m.Name(), func() (bool, error) {
		for _, s := range run.sides {
			for _, p := range []*method.Process{s.db, s.vsd} {
				if err := p.Alive(); err != nil {
					return false, p.Failure("waiting for the path", err)
				}
			}
		}
		_, err := env.A.Run(ctx, "ping", "-c", "1", "-W", "1", "-q", path.B.String())
		return err == nil, nil
	})
	if err == nil {
		return nil
	}
	errs := []error{fmt.Errorf("a: %s (%s datapath): %w", m.Name(), run.datapath, err)}
	for _, s := range run.sides {
		errs = append(errs, s.vsd.Failure("no path", nil))
	}
	return errors.Join(errs...)
}

// Teardown stops both OVS instances (removing their datapaths and
// ports), deletes whatever device is left, puts the underlay addresses
// and arp_ignore back, and removes the side directories.
func (m *OVS) Teardown(ctx context.Context, env *method.Env) error {
	var errs []error
	if run := m.take(env); run != nil {
		// The addresses go back on the underlay while OVS still holds it,
		// so a host reached over the underlay (ssh) stays reachable.
		for _, s := range run.sides {
			errs = append(errs, s.restoreAddrs(ctx))
		}
		for _, s := range run.sides {
			errs = append(errs, s.stop(ctx))
		}
		m.deleteLinks(ctx, env, &errs)
		for _, s := range run.sides {
			errs = append(errs, s.restoreArpIgnore(), s.restorePromisc(), s.ep.ForgetUndo(ovsNetdevUndo))
		}
	} else {
		m.deleteLinks(ctx, env, &errs)
	}
	for _, ep := range env.Endpoints() {
		if ep == nil {
			continue
		}
		if err := ep.RemoveAll(filepath.Join(method.SideRoot(env, ep), m.Name()+"-"+ep.Side)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteLinks deletes the devices OVS leaves when it could not clean up
// (ovs-vswitchd died): the netdev datapath's persistent tap devices, or
// the kernel datapath, which only the openvswitch netlink family removes.
func (m *OVS) deleteLinks(ctx context.Context, env *method.Env, errs *[]error) {
	n := ovsNamesOf(env)
	for _, ep := range env.Endpoints() {
		if ep == nil || ep.NL == nil {
			continue
		}
		if _, err := ep.NL.LinkByName("ovs-system"); err == nil {
			if _, err := ep.Run(ctx, "ovs-dpctl", "-vsyslog:off", "del-dp", "system@ovs-system"); err != nil {
				*errs = append(*errs, fmt.Errorf("delete the kernel datapath: %w", err))
			}
		}
		names := append([]string{n.integ, n.phy, ovsNetdev}, m.kernelDevs()...)
		*errs = append(*errs, method.DelLinks(ep, names...))
	}
}
