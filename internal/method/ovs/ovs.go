// Package ovs is the ovs-* methods (ovs-vxlan, ovs-geneve, ...; their
// list in ovs_methods.go): a tunnel port on an Open vSwitch bridge on
// each side, with the shared machinery here: one private ovsdb-server and
// ovs-vswitchd per side (the kernel datapath where the kernel has the
// openvswitch module, the userspace netdev datapath where it does not),
// driven with ovs-vsctl and ovs-appctl, and the parser of "ovs-vsctl
// --format=json list Interface".
package ovs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// OVS datapaths (option "datapath", recorded as Path.Variant).
const (
	// OVSNetdev is the userspace datapath inside ovs-vswitchd: ports are
	// AF_PACKET sockets and tap devices, tunnels are encapsulated in
	// userspace ("native tunnelling").
	OVSNetdev = "netdev"
	// OVSSystem is the kernel datapath (module openvswitch); tunnel ports
	// are the kernel's flow-based vxlan, geneve and gretap devices.
	OVSSystem = "system"
	// OVSAuto picks OVSSystem when the kernel has the openvswitch
	// datapath, else OVSNetdev.
	OVSAuto = "auto"
)

// ovsSchema is Debian's (openvswitch-common) Open_vSwitch schema.
const ovsSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// ovsStartTimeout bounds each daemon's start (method.DaemonStartTimeout:
// in the kernel lab's emulated guest beside a loaded host ovs-vswitchd's
// control socket took more than 10 s to appear, TestLabOVSKernel),
// ovsPathTimeout the wait for the first packet through the tunnel.
// ovsCommandTimeout bounds one ovs-vsctl, ovs-appctl or ovs-ofctl
// command, in seconds: as long as a daemon's start, for the same
// emulated guest (10 s and 5 s timed out there with two lab lanes).
const ovsCommandTimeout = "30"

const (
	ovsStartTimeout = method.DaemonStartTimeout
	ovsPathTimeout  = 15 * time.Second
)

// ovsSide is the OVS instance of one side: its private directory (database,
// sockets, pid files, logs) and daemons, and what Setup changed on the
// underlay device so that Teardown can put it back.
type ovsSide struct {
	ep  *testbed.Endpoint
	dir string
	db  *method.Process // ovsdb-server
	vsd *method.Process // ovs-vswitchd
	// moved are the addresses taken off ep.Dev (netdev datapath), in
	// their original order, to be put back at teardown.
	moved []netlink.Addr
	// routes are the host's routes through ep.Dev (every table, both
	// families) when its addresses moved, which the kernel dropped with
	// them: put back after the addresses.
	routes []testbed.JournalRoute
	// phy is the device the addresses moved to.
	phy string
	// arpIgnore is ep.Dev's arp_ignore before Setup set it to 1, or ""
	// when unchanged.
	arpIgnore string
	// promisc is set once the run journalled that the underlay, not
	// promiscuous before, goes back to that (recordPromisc).
	promisc bool
}

func (s *ovsSide) dbSock() string { return filepath.Join(s.dir, "db.sock") }
func (s *ovsSide) vsdCtl() string { return filepath.Join(s.dir, "ovs-vswitchd.ctl") }

// ovsEnv keeps every OVS program's runtime, log, database and config
// directories inside dir, so nothing touches /run/openvswitch,
// /var/log/openvswitch or /etc/openvswitch.
func ovsEnv(dir string) []string {
	return []string{"OVS_RUNDIR=" + dir, "OVS_LOGDIR=" + dir, "OVS_DBDIR=" + dir, "OVS_SYSCONFDIR=" + dir}
}

// run runs argv in the side's namespace with the side's OVS environment.
// A failure quotes argv and the output.
func (s *ovsSide) run(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := s.ep.Command(ctx, argv...)
	cmd.Env = append(cmd.Env, ovsEnv(s.dir)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := s.ep.Start(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	s.ep.Forget(cmd)
	if err != nil {
		return out.Bytes(), &testbed.CommandError{Side: s.ep.Side, Argv: cmd.Args, Output: out.String(), Err: err}
	}
	return out.Bytes(), nil
}

// vsctl runs ovs-vsctl against the side's database. Without --no-wait in
// args it waits (at most 10 s) until ovs-vswitchd has applied the change.
// Like every OVS program here it does not log to syslog.
func (s *ovsSide) vsctl(ctx context.Context, args ...string) ([]byte, error) {
	return s.run(ctx, append([]string{"ovs-vsctl", "-vsyslog:off", "--db=unix:" + s.dbSock(), "--timeout=" + ovsCommandTimeout}, args...)...)
}

// appctl runs ovs-appctl against the side's ovs-vswitchd.
func (s *ovsSide) appctl(ctx context.Context, args ...string) ([]byte, error) {
	return s.run(ctx, append([]string{"ovs-appctl", "-vsyslog:off", "-t", s.vsdCtl(), "--timeout=" + ovsCommandTimeout}, args...)...)
}

// start creates the side's database and starts ovsdb-server and
// ovs-vswitchd in the foreground (owned by StartDaemon), each with its own
// pid file, control socket and log in the side directory.
func (s *ovsSide) start(ctx context.Context) error {
	db := filepath.Join(s.dir, "conf.db")
	if _, err := s.run(ctx, "ovsdb-tool", "-vsyslog:off", "create", db, ovsSchema); err != nil {
		return fmt.Errorf("create ovs database: %w", err)
	}
	var err error
	s.db, err = method.StartDaemon(s.ep, "ovsdb-server", filepath.Join(s.dir, "ovsdb-server.log"), ovsEnv(s.dir),
		"ovsdb-server", db,
		"--remote=punix:"+s.dbSock(),
		"--unixctl="+filepath.Join(s.dir, "ovsdb-server.ctl"),
		"--pidfile="+filepath.Join(s.dir, "ovsdb-server.pid"),
		"--no-chdir", "-vconsole:info", "-vsyslog:off")
	if err != nil {
		return err
	}
	if err := s.waitSocket(ctx, s.db, s.dbSock()); err != nil {
		return err
	}
	if _, err := s.vsctl(ctx, "--no-wait", "init"); err != nil {
		return s.db.Failure("initialise the database", err)
	}
	// The netdev datapath's tap device outlives an ovs-vswitchd that is
	// killed (the agent's end, a lost host): the journal deletes it then.
	if _, err := s.ep.NL.LinkByName(ovsNetdev); err != nil {
		if err := s.ep.RecordUndo(ovsNetdevUndo, testbed.Undo{Kind: testbed.UndoDelLink, Dev: ovsNetdev}); err != nil {
			return err
		}
	}
	s.vsd, err = method.StartDaemon(s.ep, "ovs-vswitchd", filepath.Join(s.dir, "ovs-vswitchd.log"), ovsEnv(s.dir),
		"ovs-vswitchd", "unix:"+s.dbSock(),
		"--unixctl="+s.vsdCtl(),
		"--pidfile="+filepath.Join(s.dir, "ovs-vswitchd.pid"),
		"--no-chdir", "-vconsole:info", "-vsyslog:off")
	if err != nil {
		return err
	}
	return s.waitSocket(ctx, s.vsd, s.vsdCtl())
}

// waitSocket waits until p accepts connections on its control socket
// sock.
func (s *ovsSide) waitSocket(ctx context.Context, p *method.Process, sock string) error {
	err := method.WaitFor(ctx, ovsStartTimeout, filepath.Base(sock), func() (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		return method.SocketAccepts(ctx, s.ep, sock)
	})
	if err != nil {
		return p.Failure("start", err)
	}
	return nil
}

// ovsInterfaceColumns are the columns ParseOVSInterfaces reads.
const ovsInterfaceColumns = "name,type,ofport,error,link_state,admin_state,mtu"

// interfaces lists the side's OVS interfaces.
func (s *ovsSide) interfaces(ctx context.Context) ([]OVSInterface, error) {
	out, err := s.vsctl(ctx, "--format=json", "--columns="+ovsInterfaceColumns, "list", "Interface")
	if err != nil {
		return nil, err
	}
	ifs, err := ParseOVSInterfaces(out)
	if err != nil {
		return nil, fmt.Errorf("%s: ovs-vsctl list Interface: %w", s.ep.Side, err)
	}
	return ifs, nil
}

// checkPorts fails, quoting the ovs-vswitchd log, unless every interface
// in names exists, has no error and has an OpenFlow port number.
func (s *ovsSide) checkPorts(ctx context.Context, names ...string) error {
	ifs, err := s.interfaces(ctx)
	if err != nil {
		return s.vsd.Failure("list interfaces", err)
	}
	if bad := OVSPortProblems(ifs, names...); len(bad) > 0 {
		return s.vsd.Failure("ports not up", errors.New(strings.Join(bad, "; ")))
	}
	return nil
}

// stop asks ovs-vswitchd to exit removing its datapath and ports
// ("exit --cleanup": the netdev datapath's tap devices are persistent and
// would outlive a plain SIGTERM), then stops both daemons by pid. A
// daemon that does not exit is killed.
func (s *ovsSide) stop(ctx context.Context) error {
	var errs []error
	if s.vsd != nil {
		if exited, _ := s.vsd.Exited(); !exited {
			// A failing cleanup leaves devices that teardown deletes anyway.
			_, _ = s.appctl(ctx, "exit", "--cleanup")
			_ = method.WaitFor(ctx, 3*time.Second, "ovs-vswitchd exit", func() (bool, error) {
				exited, _ := s.vsd.Exited()
				return exited, nil
			})
		}
		errs = append(errs, s.vsd.Stop(3*time.Second))
	}
	if s.db != nil {
		errs = append(errs, s.db.Stop(3*time.Second))
	}
	return errors.Join(errs...)
}

// moveAddrs moves the global addresses of the underlay device to dst (the
// br-phy internal port), recording them, and the host's routes through
// the device that their removal drops, for restoreAddrs. The move is one
// op on the side's host: when the connection to that host runs over the
// underlay (ssh), no reply may have to leave while the address is on
// neither device.
//
// The addresses cannot stay on the device. On the netdev datapath
// ovs-vswitchd sends and receives the tunnel's packets itself and takes
// the tunnel's source address, route and neighbour from its own bridge
// ports (ovs/route, tnl/arp): OVS's native tunnelling guide has the
// underlay address assigned to the physical bridge (br-phy here), and
// OVS's FAQ says a device that is a port of a bridge should have no IP
// address, one it keeps "will not be fully functional" (the kernel would
// still own it on the device, answer ARP for it with the device's MAC
// address, and route the host's traffic out of the device beside OVS).
// So the addresses move (every one, an IPv4 secondary before its
// primary, which would take it with it), and the host's routes through
// the device (which the kernel drops with the addresses, but for IPv6
// routes through a gateway, which the move takes off) are journaled
// first and put back once the addresses are back. While the run holds
// them those routes are missing; moving them to br-phy for the run (as
// the FAQ suggests) would keep the host's own traffic flowing but is not
// done.
func (s *ovsSide) moveAddrs(ctx context.Context, dst string) error {
	moved, err := opMoveAddrs.Call(ctx, s.ep, addrMove{From: s.ep.Dev, To: dst})
	if err != nil {
		return fmt.Errorf("%s: %w", s.ep.Side, err)
	}
	s.moved, s.routes = moved.Addrs, moved.Routes
	s.phy = dst
	return nil
}

// restoreAddrs puts the moved addresses back on the underlay device with
// their original flags, taking them off br-phy in the same op (so they
// are never on both devices, and the host stays reachable over the
// underlay before OVS lets go of it), then the host's routes through
// the device; addresses and routes already there are left alone.
func (s *ovsSide) restoreAddrs(ctx context.Context) error {
	if len(s.moved) == 0 {
		return nil
	}
	if _, err := opRestoreAddrs.Call(ctx, s.ep, addrMove{From: s.phy, To: s.ep.Dev, Addrs: s.moved, Routes: s.routes}); err != nil {
		return fmt.Errorf("%s: %w", s.ep.Side, err)
	}
	s.moved, s.routes = nil, nil
	return nil
}

// addrMove says which addresses go from one device to another: every
// global one of From (opMoveAddrs), or Addrs, and after them Routes
// through To (opRestoreAddrs, where From may be gone already).
type addrMove struct {
	From, To string
	Addrs    []netlink.Addr
	Routes   []testbed.JournalRoute
}

// movedAddrs is what opMoveAddrs took off the device: its global
// addresses, and the host's routes through it that went with them.
type movedAddrs struct {
	Addrs  []netlink.Addr
	Routes []testbed.JournalRoute
}

// hostRoutes lists the routes through link that taking its addresses
// away drops and nothing brings back (rr.RoutesToPutBack: every table,
// both families, not the kernel's own), but for tunbench's own host
// routes (testbed.RouteProtocol), which have journal entries of their
// own that delete them.
func hostRoutes(ep *testbed.Endpoint, link netlink.Link) ([]testbed.JournalRoute, error) {
	routes, err := rr.RoutesToPutBack(ep.NL, link)
	if err != nil {
		return nil, err
	}
	routes = slices.DeleteFunc(routes, func(r netlink.Route) bool { return r.Protocol == testbed.RouteProtocol })
	return testbed.JournalRoutes(routes), nil
}

var (
	// opMoveAddrs moves From's global addresses to To and returns them
	// with the host's routes through From (taken off it); on failure it
	// puts every one back.
	opMoveAddrs = testbed.NewOp("ovs.move-addrs", func(_ context.Context, ep *testbed.Endpoint, a addrMove) (movedAddrs, error) {
		from, err := ep.NL.LinkByName(a.From)
		if err != nil {
			return movedAddrs{}, fmt.Errorf("find underlay %s: %w", a.From, err)
		}
		to, err := ep.NL.LinkByName(a.To)
		if err != nil {
			return movedAddrs{}, fmt.Errorf("find %s: %w", a.To, err)
		}
		addrs, err := ep.NL.AddrList(from, netlink.FAMILY_ALL)
		if err != nil {
			return movedAddrs{}, fmt.Errorf("list addresses of %s: %w", a.From, err)
		}
		routes, err := hostRoutes(ep, from)
		if err != nil {
			return movedAddrs{}, err
		}
		global := slices.DeleteFunc(slices.Clone(addrs), func(a netlink.Addr) bool { return a.Scope != unix.RT_SCOPE_UNIVERSE })
		// The site's journal learns first where the addresses and the
		// routes through the device belong, for a clean after a crash
		// (agent.CleanSite).
		if ep.Dir != "" {
			u := testbed.AddrsUndo(a.From, a.To, global)
			u.Routes = routes
			if err := testbed.WriteUndo(ep.Dir, addrsUndo(a.From), u); err != nil {
				return movedAddrs{}, err
			}
		}
		undo := func(err error) (movedAddrs, error) {
			back := putBack(ep, from, to, global, routes)
			if back == nil && ep.Dir != "" {
				back = testbed.DropUndo(ep.Dir, addrsUndo(a.From))
			}
			return movedAddrs{}, errors.Join(err, back)
		}
		// Every address leaves the device before any goes on To, the
		// secondaries before their primary (testbed.TakeOrder). One the
		// kernel deleted with its primary all the same (EADDRNOTAVAIL:
		// the list was read before) is moved too: it goes on To, and
		// back on the device afterwards.
		for _, i := range testbed.TakeOrder(global) {
			addr := global[i]
			err := ep.NL.AddrDel(from, &addr)
			if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				return undo(fmt.Errorf("remove %s from %s: %w", addr.IPNet, a.From, err))
			}
		}
		for _, i := range phyOrder(global, ep.Addr4.Addr(), ep.Addr6.Addr()) {
			p, err := ovsPrefix(global[i])
			if err != nil {
				return undo(err)
			}
			if err := method.AddAddr(ep, to, p); err != nil {
				return undo(err)
			}
		}
		// The kernel dropped the IPv4 routes through the device with its
		// last address, but not the IPv6 ones through a gateway: they
		// would point through an OVS port, and once the device went down
		// (the recover test's flap) nothing could put them back while the
		// addresses are on To (the gateway is not on the device's link
		// any more). They go too, journalled with the rest.
		for _, j := range routes {
			r, err := j.Route(from.Attrs().Index)
			if err != nil {
				return undo(err)
			}
			if err := ep.NL.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) && !errors.Is(err, unix.ENOENT) {
				return undo(fmt.Errorf("take route %s off %s: %w", j, a.From, err))
			}
		}
		return movedAddrs{Addrs: global, Routes: routes}, nil
	})
	// opRestoreAddrs takes Addrs off From (when it still exists) and puts
	// them back on To, which it sets up, then puts Routes back.
	opRestoreAddrs = testbed.NewOp("ovs.restore-addrs", func(_ context.Context, ep *testbed.Endpoint, a addrMove) (struct{}, error) {
		under, err := ep.NL.LinkByName(a.To)
		if err != nil {
			return struct{}{}, fmt.Errorf("find underlay %s: %w", a.To, err)
		}
		phy, _ := ep.NL.LinkByName(a.From)
		if err := putBack(ep, under, phy, a.Addrs, a.Routes); err != nil {
			return struct{}{}, err
		}
		if ep.Dir == "" {
			return struct{}{}, nil
		}
		return struct{}{}, testbed.DropUndo(ep.Dir, addrsUndo(a.To))
	})
)

// addrsUndo and arpIgnoreUndo name a side's entries in its site's
// journal.
func addrsUndo(dev string) string     { return "ovs-addrs-" + dev }
func arpIgnoreUndo(dev string) string { return "ovs-arp-ignore-" + dev }

// ovsNetdev is the tap device of the netdev datapath; ovsNetdevUndo its
// journal entry.
const (
	ovsNetdev     = "ovs-netdev"
	ovsNetdevUndo = "ovs-netdev"
)

// putBack puts addrs back on under with their original flags (and
// broadcast address: none when they had none), in the order under listed
// them (testbed.RestoreOrder), after taking every one off phy when phy is
// not nil (secondaries first, testbed.TakeOrder, so that none is on both
// devices); addresses already on under are left alone. It sets under up,
// then puts routes back through it (those not there: the kernel dropped
// them with the addresses).
func putBack(ep *testbed.Endpoint, under, phy netlink.Link, addrs []netlink.Addr, routes []testbed.JournalRoute) error {
	have, err := ep.NL.AddrList(under, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses of %s: %w", under.Attrs().Name, err)
	}
	if phy != nil {
		// As phy lists them (phyOrder), its secondaries first; a
		// failed delete leaves an address on a device that goes.
		onPhy, err := ep.NL.AddrList(phy, netlink.FAMILY_ALL)
		if err != nil {
			onPhy = addrs
		}
		for _, a := range testbed.TakeOff(onPhy, addrs) {
			_ = ep.NL.AddrDel(phy, &netlink.Addr{IPNet: a.IPNet})
		}
	}
	var errs []error
	for _, i := range testbed.RestoreOrder(isV6(addrs)) {
		a := addrs[i]
		if slices.ContainsFunc(have, func(h netlink.Addr) bool { return h.IPNet.String() == a.IPNet.String() }) {
			continue
		}
		re := &netlink.Addr{IPNet: a.IPNet, Flags: a.Flags, Scope: a.Scope, Broadcast: a.Broadcast}
		if re.Broadcast == nil && a.IP.To4() != nil {
			// The netlink package would make one up.
			re.Broadcast = net.IPv4zero
		}
		if err := ep.NL.AddrAdd(under, re); err != nil {
			errs = append(errs, fmt.Errorf("restore %s on %s: %w", a.IPNet, under.Attrs().Name, err))
		}
	}
	if err := ep.NL.LinkSetUp(under); err != nil {
		errs = append(errs, fmt.Errorf("set %s up: %w", under.Attrs().Name, err))
	}
	if _, err := testbed.PutRoutesBack(ep.NL, under, routes); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", under.Attrs().Name, err))
	}
	return errors.Join(errs...)
}

// phyOrder is the order in which the underlay's addresses addrs (as it
// lists them) go on br-phy: the device's own (testbed.RestoreOrder, so
// that br-phy lists them as the device did), but for the run's own
// addresses own4 and own6, which go first in their networks (own4 first,
// which makes it the primary of its network; own6 last, as the kernel
// lists the newest IPv6 address first). On the netdev datapath OVS sends
// the tunnel's packets from the first address of br-phy in the remote's
// network (its route has no preferred source; options:local_ip does not
// change that in OVS 3.1), and the peer's tunnel port takes only packets
// from the address it names as remote_ip: the run's own, not another
// address of the host's in that network.
func phyOrder(addrs []netlink.Addr, own4, own6 netip.Addr) []int {
	own := func(i int) bool {
		ip, ok := netip.AddrFromSlice(addrs[i].IP)
		ip = ip.Unmap()
		return ok && (ip == own4 || ip == own6)
	}
	var first, rest, last []int
	for _, i := range testbed.RestoreOrder(isV6(addrs)) {
		switch {
		case own(i) && addrs[i].IP.To4() != nil:
			first = append(first, i)
		case own(i):
			last = append(last, i)
		default:
			rest = append(rest, i)
		}
	}
	return append(append(first, rest...), last...)
}

// isV6 says which of addrs are IPv6 addresses, for testbed.RestoreOrder.
func isV6(addrs []netlink.Addr) []bool {
	v6 := make([]bool, len(addrs))
	for i, a := range addrs {
		v6[i] = a.IP.To4() == nil
	}
	return v6
}

// ovsLinkUp sets the named device up.
func ovsLinkUp(ep *testbed.Endpoint, name string) error {
	link, err := ep.NL.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", ep.Side, name, err)
	}
	if err := ep.NL.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: set %s up: %w", ep.Side, name, err)
	}
	return nil
}

func ovsPrefix(a netlink.Addr) (netip.Prefix, error) {
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("bad address %v", a.IPNet)
	}
	ones, _ := a.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), nil
}

// arpIgnorePath is the per-device arp_ignore sysctl, read and written
// from inside the namespace.
func arpIgnorePath(dev string) string {
	return filepath.Join("/proc/sys/net/ipv4/conf", dev, "arp_ignore")
}

// setArpIgnore makes the kernel stop answering ARP on the underlay device
// for the address that moved to br-phy (Linux answers for any local
// address by default, which would give the peer the veth's MAC address
// instead of br-phy's). The endpoint's file operations run inside its
// namespace, on its host.
func (s *ovsSide) setArpIgnore() error {
	path := arpIgnorePath(s.ep.Dev)
	old, err := s.ep.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(old)) == "1" {
		return nil
	}
	if err := s.ep.RecordUndo(arpIgnoreUndo(s.ep.Dev), testbed.Undo{Kind: testbed.UndoSysctl, Path: path, Value: strings.TrimSpace(string(old))}); err != nil {
		return err
	}
	if err := s.ep.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("set %s: %w", path, err)
	}
	s.arpIgnore = strings.TrimSpace(string(old))
	return nil
}

// promiscUndo names a side's journal entry of the underlay's
// promiscuous mode.
func promiscUndo(dev string) string { return "ovs-promisc-" + dev }

// recordPromisc journals, unless the underlay is promiscuous already,
// that its promiscuous mode goes off again: ovs-vswitchd turns it on for
// a port of its bridge and, killed, leaves it on.
func (s *ovsSide) recordPromisc() error {
	link, err := s.ep.NL.LinkByName(s.ep.Dev)
	if err != nil {
		return fmt.Errorf("%s: find underlay %s: %w", s.ep.Side, s.ep.Dev, err)
	}
	if link.Attrs().Promisc != 0 || link.Attrs().RawFlags&unix.IFF_PROMISC != 0 {
		return nil
	}
	if err := s.ep.RecordUndo(promiscUndo(s.ep.Dev), testbed.Undo{Kind: testbed.UndoPromisc, Dev: s.ep.Dev}); err != nil {
		return err
	}
	s.promisc = true
	return nil
}

// restorePromisc undoes what ovs-vswitchd did to the underlay's
// promiscuous mode, when recordPromisc journalled it.
func (s *ovsSide) restorePromisc() error {
	if !s.promisc {
		return nil
	}
	if _, err := s.ep.ApplyUndo(promiscUndo(s.ep.Dev)); err != nil {
		return fmt.Errorf("%s: %w", s.ep.Side, err)
	}
	s.promisc = false
	return nil
}

// restoreArpIgnore undoes setArpIgnore.
func (s *ovsSide) restoreArpIgnore() error {
	if s.arpIgnore == "" {
		return nil
	}
	path := arpIgnorePath(s.ep.Dev)
	if err := s.ep.WriteFile(path, []byte(s.arpIgnore+"\n"), 0o644); err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	s.arpIgnore = ""
	if err := s.ep.ForgetUndo(arpIgnoreUndo(s.ep.Dev)); err != nil {
		return err
	}
	return nil
}

// ovsKernelDatapath reports whether the kernel's OVS datapath is usable
// from ep: its generic netlink family exists, after "modprobe openvswitch"
// where that is possible (ovs-vswitchd does not load the module itself).
func ovsKernelDatapath(ctx context.Context, ep *testbed.Endpoint) (bool, error) {
	has := func() (bool, error) {
		_, err := ep.NL.GenlFamilyGet("ovs_datapath")
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.ENOENT):
			return false, nil
		}
		return false, fmt.Errorf("%s: look up generic netlink family ovs_datapath: %w", ep.Side, err)
	}
	ok, err := has()
	if ok || err != nil {
		return ok, err
	}
	if _, err := ep.Run(ctx, "modprobe", "-q", "openvswitch"); err != nil {
		return false, nil // no module to load: the kernel lacks the datapath
	}
	return has()
}

// OVSInterface is one row of "ovs-vsctl --format=json list Interface".
type OVSInterface struct {
	Name string
	// Type is empty for an ordinary (system) port, "internal" for a
	// bridge's own port, or the tunnel type.
	Type string
	// OFPort is the OpenFlow port number: -1 when OVS could not add the
	// interface, 0 when not (yet) assigned.
	OFPort int
	// Error is why the interface could not be added, or empty.
	Error                 string
	LinkState, AdminState string
	MTU                   int
}

// ParseOVSInterfaces parses the output of "ovs-vsctl --format=json
// --columns=... list Interface". Columns other than those of OVSInterface
// are ignored; empty optional values ("set" with no element) are zero.
func ParseOVSInterfaces(data []byte) ([]OVSInterface, error) {
	var table struct {
		Headings []string            `json:"headings"`
		Data     [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		return nil, fmt.Errorf("parse ovs-vsctl json: %w", err)
	}
	if table.Headings == nil {
		return nil, errors.New("parse ovs-vsctl json: no headings")
	}
	var ifs []OVSInterface
	for r, row := range table.Data {
		if len(row) != len(table.Headings) {
			return nil, fmt.Errorf("parse ovs-vsctl json: row %d: %d values for %d headings", r+1, len(row), len(table.Headings))
		}
		var i OVSInterface
		for c, h := range table.Headings {
			var dst any
			switch h {
			case "name":
				dst = &i.Name
			case "type":
				dst = &i.Type
			case "error":
				dst = &i.Error
			case "link_state":
				dst = &i.LinkState
			case "admin_state":
				dst = &i.AdminState
			case "ofport":
				dst = &i.OFPort
			case "mtu":
				dst = &i.MTU
			default:
				continue
			}
			if err := ovsAtom(row[c], dst); err != nil {
				return nil, fmt.Errorf("parse ovs-vsctl json: row %d: column %s: %w", r+1, h, err)
			}
		}
		ifs = append(ifs, i)
	}
	return ifs, nil
}

// ovsAtom decodes an OVSDB JSON value into *string or *int: a bare atom,
// or a set of at most one atom (the empty set leaves dst zero).
func ovsAtom(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil {
			return err
		}
		var kind string
		if len(pair) != 2 || json.Unmarshal(pair[0], &kind) != nil || kind != "set" {
			return fmt.Errorf("unexpected value %s", raw)
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(pair[1], &elems); err != nil {
			return err
		}
		switch len(elems) {
		case 0:
			return nil
		case 1:
			raw = elems[0]
		default:
			return fmt.Errorf("want at most one value, got %s", raw)
		}
	}
	return json.Unmarshal(raw, dst)
}

// OVSPortProblems returns, for each interface in names, why it is not
// usable: missing, an error from ovs-vswitchd, or no OpenFlow port.
func OVSPortProblems(ifs []OVSInterface, names ...string) []string {
	var bad []string
	for _, n := range names {
		var found *OVSInterface
		for i := range ifs {
			if ifs[i].Name == n {
				found = &ifs[i]
			}
		}
		switch {
		case found == nil:
			bad = append(bad, "interface "+n+" missing")
		case found.Error != "":
			bad = append(bad, "interface "+n+": "+found.Error)
		case found.OFPort <= 0:
			bad = append(bad, "interface "+n+": no OpenFlow port (ofport "+strconv.Itoa(found.OFPort)+")")
		}
	}
	return bad
}
