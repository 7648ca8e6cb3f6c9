package ovs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/ovs"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func ovsMethods() []*ovs.OVS {
	return []*ovs.OVS{ovs.NewOVSVXLAN(), ovs.NewOVSGeneve(), ovs.NewOVSGRE()}
}

// TestParseOVSInterfaces parses "ovs-vsctl --format=json list Interface"
// output captured from real ovs-vswitchd 3.1 instances.
func TestParseOVSInterfaces(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []ovs.OVSInterface
	}{
		{"ovs_interfaces_errors.json", []ovs.OVSInterface{
			{Name: "ph-a", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1500},
			{Name: "in-a", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1450},
			{Name: "tun", Type: "bogus", OFPort: -1, Error: "could not open network device tun (Address family not supported by protocol)"},
			{Name: "ovp-a", OFPort: 1, LinkState: "up", AdminState: "up", MTU: 1500},
			{Name: "nosuch0", OFPort: -1, Error: "could not open network device nosuch0 (No such device)"},
		}},
		{"ovs_interfaces_netdev_vxlan.json", []ovs.OVSInterface{
			{Name: "tbf90ce6-phy", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1500},
			{Name: "tbf90ce6-ovs", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1450},
			{Name: "tbf90ce6-a", OFPort: 1, LinkState: "up", AdminState: "up", MTU: 1500},
			{Name: "tbf90ce6-tun", Type: "vxlan", OFPort: 1, LinkState: "up", AdminState: "up"},
		}},
		{"ovs_interfaces_netdev_gre_ipv6.json", []ovs.OVSInterface{
			{Name: "tbc74ea4-phy", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1500},
			{Name: "tbc74ea4-tun", Type: "ip6gre", OFPort: 1, LinkState: "up", AdminState: "up"},
			{Name: "tbc74ea4-a", OFPort: 1, LinkState: "up", AdminState: "up", MTU: 1500},
			{Name: "tbc74ea4-ovs", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1438},
		}},
		{"ovs_interfaces_system_gre_ipv6.json", []ovs.OVSInterface{
			{Name: "tb7a2642-tun", Type: "ip6gre", OFPort: 1, LinkState: "up", AdminState: "up"},
			{Name: "tb7a2642-ovs", Type: "internal", OFPort: 65534, LinkState: "up", AdminState: "up", MTU: 1438},
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ovs.ParseOVSInterfaces(data)
			if err != nil {
				t.Fatal(err)
			}
			sortIfs(got)
			sortIfs(tt.want)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
		})
	}
}

func sortIfs(ifs []ovs.OVSInterface) {
	sort.Slice(ifs, func(i, j int) bool { return ifs[i].Name < ifs[j].Name })
}

func TestParseOVSInterfacesErrors(t *testing.T) {
	for _, in := range []string{
		``,
		`{"data":[]}`,
		`{"data":[["a"]],"headings":["name","type"]}`,
		`{"data":[[["set",["x","y"]]]],"headings":["name"]}`,
		`{"data":[[["map",[]]]],"headings":["ofport"]}`,
		`{"data":[["one"]],"headings":["ofport"]}`,
	} {
		if got, err := ovs.ParseOVSInterfaces([]byte(in)); err == nil {
			t.Errorf("ParseOVSInterfaces(%s) = %+v, want an error", in, got)
		}
	}
}

func TestOVSPortProblems(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "ovs_interfaces_errors.json"))
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := ovs.ParseOVSInterfaces(data)
	if err != nil {
		t.Fatal(err)
	}
	got := ovs.OVSPortProblems(ifs, "ph-a", "tun", "ovp-a", "nosuch0", "gone", "in-a")
	want := []string{
		"interface tun: could not open network device tun (Address family not supported by protocol)",
		"interface nosuch0: could not open network device nosuch0 (No such device)",
		"interface gone missing",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if bad := ovs.OVSPortProblems([]ovs.OVSInterface{{Name: "x"}}, "x"); len(bad) != 1 || !strings.Contains(bad[0], "ofport 0") {
		t.Errorf("unassigned port: got %q", bad)
	}
}

func TestOVSDescription(t *testing.T) {
	want := map[string][2]int{"ovs-vxlan": {50, 70}, "ovs-geneve": {50, 70}, "ovs-gre": {42, 62}}
	for _, m := range ovsMethods() {
		w, ok := want[m.Name()]
		if !ok {
			t.Errorf("unexpected method %s", m.Name())
			continue
		}
		if got := [2]int{m.Overhead(method.IPv4), m.Overhead(method.IPv6)}; got != w {
			t.Errorf("%s overhead (ipv4, ipv6) = %v, want %v", m.Name(), got, w)
		}
		if !method.Supports(m, method.IPv4) || !method.Supports(m, method.IPv6) {
			t.Errorf("%s families %v, want ipv4 and ipv6", m.Name(), m.Families())
		}
		if !strings.Contains(m.Implementation(), strings.TrimPrefix(m.Name(), "ovs-")) {
			t.Errorf("%s implementation %q does not name the port type", m.Name(), m.Implementation())
		}
	}
}

// TestOVSOptions checks that bad options fail before anything is created.
func TestOVSOptions(t *testing.T) {
	for _, tt := range []struct {
		m    *ovs.OVS
		opts map[string]string
		want string
	}{
		{ovs.NewOVSVXLAN(), map[string]string{"key": "0"}, `option key="0"`},
		{ovs.NewOVSGeneve(), map[string]string{"key": "16777216"}, "from 1 to 16777215"},
		{ovs.NewOVSGRE(), map[string]string{"key": "x"}, "from 1 to 4294967295"},
		{ovs.NewOVSGRE(), map[string]string{"datapath": "dpdk"}, `option datapath="dpdk"`},
		{ovs.NewOVSVXLAN(), map[string]string{"vni": "16777216"}, `option vni="16777216"`},
		{ovs.NewOVSGeneve(), map[string]string{"vni": "7", "key": "7"}, "give one of them"},
	} {
		_, err := tt.m.Setup(context.Background(), &method.Env{Family: method.IPv4, Options: tt.opts, Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: got %v, want an error containing %q", tt.m.Name(), tt.opts, err, tt.want)
		}
	}
}

// TestOVSNetdev runs the three methods on the userspace datapath, which
// works on the host kernel: ping, the wire format (with a full-size packet
// that proves the overhead), 2 s of iperf3, and a teardown that stops
// every OVS process, leaves no file outside the run directory and gives
// the underlay device its addresses and arp_ignore back.
func TestOVSNetdev(t *testing.T) {
	for _, m := range ovsMethods() {
		for _, family := range []string{method.IPv4, method.IPv6} {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				ovsRun(t, m, family, ovs.OVSNetdev)
			})
		}
	}
}

// TestOVSNetdevKilled checks that Teardown cleans up after ovs-vswitchd
// died: its persistent tap devices go, the underlay gets its addresses
// back.
func TestOVSNetdevKilled(t *testing.T) { ovsKilled(t, ovs.OVSNetdev) }

// ovsKilled sets ovs-vxlan up, kills both ovs-vswitchd with SIGKILL and
// tears down; methodtest compares the links.
func ovsKilled(t *testing.T, datapath string) {
	requireOVS(t)
	m := ovs.NewOVSVXLAN()
	l, env, path := methodtest.Setup(t, m, method.IPv4, 1500, map[string]string{"datapath": datapath})
	for _, d := range path.Daemons {
		if d.Role == "ovs-vswitchd" {
			if err := unix.Kill(d.PID, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Fatalf("Teardown after SIGKILL: %v", err)
	}
	if left := ovsProcessesUsing(env.Dir); len(left) > 0 {
		t.Errorf("processes using %s after Teardown: %v", env.Dir, left)
	}
	for _, ep := range l.Endpoints() {
		ovsCheckUnderlay(t, ep)
	}
}

// TestOVSAuto checks the default datapath: system where the kernel has
// the openvswitch module, netdev elsewhere.
func TestOVSAuto(t *testing.T) {
	requireOVS(t)
	want := ovs.OVSNetdev
	if err := exec.Command("modprobe", "-q", "openvswitch").Run(); err == nil {
		want = ovs.OVSSystem
	}
	l, _, path := methodtest.Setup(t, ovs.NewOVSGeneve(), method.IPv4, 1500, nil)
	if path.Variant != want {
		t.Errorf("variant %q, want %q", path.Variant, want)
	}
	// The report's label names the data path: netdev, or the kernel's.
	if wantDP := map[string]string{ovs.OVSNetdev: method.DatapathNetdev, ovs.OVSSystem: method.DatapathKernel}[want]; path.Datapath != wantDP {
		t.Errorf("datapath %q, want %q", path.Datapath, wantDP)
	}
	methodtest.Ping(t, l, path)
}

// TestOVSNetdevDaemonFails checks that a daemon that cannot start fails
// Setup with the side and the daemon's own words.
func TestOVSNetdevDaemonFails(t *testing.T) {
	requireOVS(t)
	m := ovs.NewOVSVXLAN()
	l := testbedtest.New(t, 1500)
	env := &method.Env{
		A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1450,
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: map[string]string{"datapath": "netdev"},
	}
	// A directory where ovs-vswitchd's pid file belongs makes it exit.
	if err := os.MkdirAll(filepath.Join(l.Dir, m.Name()+"-a", "ovs-vswitchd.pid", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := m.Setup(context.Background(), env)
	if terr := m.Teardown(context.Background(), env); terr != nil {
		t.Errorf("Teardown after failed Setup: %v", terr)
	}
	if left := ovsProcessesUsing(env.Dir); len(left) > 0 {
		t.Errorf("processes using %s after Teardown: %v", env.Dir, left)
	}
	if err == nil {
		t.Fatal("Setup succeeded with a blocked pid file")
	}
	for _, want := range []string{"a: ovs-vswitchd", "last lines of ovs-vswitchd.log (a)", "ovs-vswitchd.pid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}

// TestLabOVSKernel runs the three methods on the kernel datapath, which
// the host kernel lacks (CONFIG_OPENVSWITCH): it runs in the kernel lab.
func TestLabOVSKernel(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	requireOVS(t)
	// Load the modules before any testbed exists: ip_gre creates
	// fallback devices (gre0, gretap0, erspan0) in every existing
	// namespace, which would look like links the method left behind.
	for _, mod := range []string{"openvswitch", "vxlan", "geneve", "ip_gre", "ip6_gre"} {
		if out, err := exec.Command("modprobe", mod).CombinedOutput(); err != nil {
			if methodtest.InLab() {
				t.Fatalf("modprobe %s: %v: %s", mod, err, out)
			}
			t.Skipf("kernel lacks CONFIG_OPENVSWITCH (modprobe %s: %v); runs in the kernel lab", mod, err)
		}
	}
	for _, m := range ovsMethods() {
		for _, family := range []string{method.IPv4, method.IPv6} {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				ovsRun(t, m, family, ovs.OVSSystem)
			})
		}
	}
	t.Run("killed", func(t *testing.T) { ovsKilled(t, ovs.OVSSystem) })
	t.Run("auto", TestOVSAuto)
}

func requireOVS(t *testing.T) {
	t.Helper()
	for _, r := range ovs.NewOVSVXLAN().Requirements() {
		if r.Program == "" {
			continue
		}
		if _, err := exec.LookPath(r.Program); err != nil {
			testenv.SkipMissing(t, "%s not installed: %s", r.Program, r.Fix())
		}
	}
}

// ovsSystemDirs are where a system-wide OVS keeps its state; a run must
// leave them as they were.
var ovsSystemDirs = []string{"/run/openvswitch", "/var/run/openvswitch", "/var/log/openvswitch", "/etc/openvswitch", "/var/lib/openvswitch"}

func listDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			out = append(out, d+": "+errors.Unwrap(err).Error())
			continue
		}
		for _, e := range entries {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out
}

// ovsRun is the whole integration test of one method, family and datapath.
// Over IPv6 it also sets a key other than the default.
func ovsRun(t *testing.T, m *ovs.OVS, family, datapath string) {
	requireOVS(t)
	systemBefore := listDirs(ovsSystemDirs)
	opts := map[string]string{"datapath": datapath}
	key := uint32(42)
	if family == method.IPv6 {
		key = 4242
		opts["key"] = strconv.Itoa(int(key))
	}
	l, env, path := methodtest.Setup(t, m, family, 1500, opts)
	if path.Variant != datapath {
		t.Errorf("variant %q, want %q", path.Variant, datapath)
	}
	roles := map[string]int{}
	for _, d := range path.Daemons {
		roles[d.Role]++
	}
	if roles["ovs-vswitchd"] != 2 {
		t.Errorf("daemons %+v, want an ovs-vswitchd per side", path.Daemons)
	}
	for _, ep := range l.Endpoints() {
		ovsCheckMTU(t, ep, path.Devices[ep.Side][0], env.OverlayMTU)
	}
	ovsSaveInterfaces(t, m, env, path)

	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.Ping(t, l, path)
	ovsPingFull(t, l.A, env, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	ovsCheckWire(t, m, l, env, path, frames, key)

	out := methodtest.Iperf3(t, l, path, 2)
	t.Logf("%s %s %s datapath: %s", m.Name(), family, path.Variant, ovsThroughput(t, out))

	// Tear down now (methodtest's cleanup tears down twice more and
	// compares the links), and check what it left.
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, d := range path.Daemons {
		if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.PID)); err == nil && strings.Contains(string(cmd), env.Dir) {
			t.Errorf("%s of side %s (pid %d) still runs after Teardown", d.Role, d.Side, d.PID)
		}
	}
	if left := ovsProcessesUsing(env.Dir); len(left) > 0 {
		t.Errorf("processes using %s after Teardown: %v", env.Dir, left)
	}
	for _, ep := range l.Endpoints() {
		if _, err := os.Stat(filepath.Join(env.Dir, m.Name()+"-"+ep.Side)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("side directory %s-%s left behind (%v)", m.Name(), ep.Side, err)
		}
		ovsCheckUnderlay(t, ep)
	}
	if diff := cmp.Diff(systemBefore, listDirs(ovsSystemDirs)); diff != "" {
		t.Errorf("system OVS directories changed (-before +after):\n%s", diff)
	}
	// The testbed works as before: the underlay carries a ping, once the
	// addresses put back have passed duplicate address detection and
	// their neighbours resolve again (seconds on a loaded host: a single
	// ping right after Teardown failed so over IPv6).
	var pingOut []byte
	var pingErr error
	for try := 0; try < 10; try++ {
		if pingOut, pingErr = l.A.Run(context.Background(), "ping", "-c", "1", "-W", "2", l.B.Addr(family).String()); pingErr == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if pingErr != nil {
		t.Errorf("underlay ping after Teardown, ten tries: %v\n%s", pingErr, pingOut)
	}
}

// ovsSaveInterfaces lists side a's OVS interfaces with the method's own
// parser and, when TUNBENCH_OVS_SAVE names a directory, saves the
// ovs-vsctl output there as testdata for TestParseOVSInterfaces.
func ovsSaveInterfaces(t *testing.T, m *ovs.OVS, env *method.Env, path *method.Path) {
	t.Helper()
	dir := filepath.Join(env.Dir, m.Name()+"-a")
	cmd := exec.Command("ovs-vsctl", "--db=unix:"+filepath.Join(dir, "db.sock"), "--timeout=5", "--format=json",
		"--columns=name,type,ofport,error,link_state,admin_state,mtu", "list", "Interface")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v", cmd.Args, err)
	}
	ifs, err := ovs.ParseOVSInterfaces(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if bad := ovs.OVSPortProblems(ifs, names...); len(bad) > 0 {
		t.Errorf("side a ports: %v", bad)
	}
	if save := os.Getenv("TUNBENCH_OVS_SAVE"); save != "" {
		name := fmt.Sprintf("ovs_interfaces_%s_%s_%s.json", path.Variant, strings.TrimPrefix(m.Name(), "ovs-"), env.Family)
		if err := os.WriteFile(filepath.Join(save, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ovsCheckMTU(t *testing.T, ep *testbed.Endpoint, dev string, want int) {
	t.Helper()
	link, err := ep.NL.LinkByName(dev)
	if err != nil {
		t.Fatalf("%s: %v", ep.Side, err)
	}
	if got := link.Attrs().MTU; got != want {
		t.Errorf("%s: %s mtu %d, want the overlay MTU %d", ep.Side, dev, got, want)
	}
}

// ovsPingFull sends echo requests that fill the overlay MTU exactly, with
// DF set: their outer packets must be exactly the underlay MTU.
func ovsPingFull(t *testing.T, a *testbed.Endpoint, env *method.Env, path *method.Path) {
	t.Helper()
	hdr := 20 + 8
	if path.B.Is6() {
		hdr = 40 + 8
	}
	size := strconv.Itoa(env.OverlayMTU - hdr)
	if out, err := a.Run(context.Background(), "ping", "-c", "3", "-i", "0.2", "-W", "3", "-M", "do", "-s", size, path.B.String()); err != nil {
		t.Fatalf("full-size ping (-s %s, DF) of %s: %v\n%s", size, path.B, err, out)
	}
}

// ovsCheckWire checks every a-to-b tunnel frame: the outer family and
// addresses, UDP port and VNI or GRE protocol and key, an Ethernet frame
// inside, the tunnel key; the largest echo request must be exactly the
// underlay MTU.
func ovsCheckWire(t *testing.T, m *ovs.OVS, l *localns.Local, env *method.Env, path *method.Path, frames []wire.Frame, key uint32) {
	t.Helper()
	ua, ub := l.A.Addr(env.Family), l.B.Addr(env.Family)
	var tunnel []wire.Frame
	largest := 0
	for _, f := range frames {
		if f.Src != ua || f.Dst != ub || (f.Proto != wire.ProtoUDP && f.Proto != wire.ProtoGRE) {
			continue
		}
		tunnel = append(tunnel, f)
		if f.Family != env.Family {
			t.Errorf("outer family %s, want %s: %s", f.Family, env.Family, f)
		}
		var bad string
		switch m.Name() {
		case "ovs-vxlan":
			if f.Encap != wire.EncapVXLAN || f.DstPort != wire.PortVXLAN || f.VNI != key {
				bad = fmt.Sprintf("want VXLAN VNI %d on UDP 4789", key)
			}
		case "ovs-geneve":
			if f.Encap != wire.EncapGeneve || f.DstPort != wire.PortGeneve || f.VNI != key {
				bad = fmt.Sprintf("want Geneve VNI %d on UDP 6081", key)
			}
		case "ovs-gre":
			g := f.GRE
			if f.Encap != wire.EncapGRE || g == nil || !g.KeyPresent || g.Key != key || g.ChecksumPresent || g.SeqPresent || g.Protocol != wire.EtherTypeTEB {
				bad = fmt.Sprintf("want GRE with key %d, no checksum or sequence number, carrying Ethernet (0x6558)", key)
			}
		}
		if bad == "" && (f.Inner == nil || !f.Inner.Ethernet) {
			bad = "want an inner Ethernet frame"
		}
		if bad != "" {
			t.Errorf("%s frame: %s: %s", m.Name(), bad, f)
			continue
		}
		if f.Inner.Src == path.A && f.Inner.Dst == path.B && (f.Inner.Proto == wire.ProtoICMP || f.Inner.Proto == wire.ProtoICMPv6) {
			largest = max(largest, f.IPLen)
		}
	}
	if len(tunnel) == 0 {
		var all []string
		for _, f := range frames {
			all = append(all, f.String())
		}
		t.Fatalf("no %s frames from %s to %s captured; frames:\n%s", m.Name(), ua, ub, strings.Join(all, "\n"))
	}
	if largest != env.UnderlayMTU {
		t.Errorf("largest echo request is %d bytes on the underlay, want the underlay MTU %d (overhead %d)",
			largest, env.UnderlayMTU, m.Overhead(env.Family))
	}
}

// ovsCheckUnderlay checks that the underlay device has its testbed
// addresses (IPv6 without DAD), nothing else global, and arp_ignore 0,
// through ep (on this machine or through its agent).
func ovsCheckUnderlay(t *testing.T, ep *testbed.Endpoint) {
	t.Helper()
	link, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		t.Fatalf("%s: %v", ep.Side, err)
	}
	if link.Attrs().OperState != netlink.OperUp && link.Attrs().Flags&(1<<0) == 0 {
		t.Errorf("%s: %s is not up after Teardown", ep.Side, ep.Dev)
	}
	addrs, err := ep.NL.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range addrs {
		if a.Scope != unix.RT_SCOPE_UNIVERSE {
			continue
		}
		s := a.IPNet.String()
		if a.Flags&unix.IFA_F_NODAD != 0 {
			s += " nodad"
		}
		got = append(got, s)
	}
	want := []string{ep.Addr4.String(), ep.Addr6.String() + " nodad"}
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: addresses of %s after Teardown (-want +got):\n%s", ep.Side, ep.Dev, diff)
	}
	b, err := ep.ReadFile("/proc/sys/net/ipv4/conf/" + ep.Dev + "/arp_ignore")
	if err != nil {
		t.Fatal(err)
	}
	if ignore := strings.TrimSpace(string(b)); ignore != "0" {
		t.Errorf("%s: arp_ignore of %s is %s after Teardown, want 0", ep.Side, ep.Dev, ignore)
	}
}

// ovsProcessesUsing lists processes whose command line mentions dir.
func ovsProcessesUsing(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), dir) {
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// ovsThroughput summarises iperf3 -J output.
func ovsThroughput(t *testing.T, out []byte) string {
	t.Helper()
	thr, err := load.ParseIperf3(out)
	if err != nil {
		t.Fatalf("iperf3 output: %v", err)
	}
	return fmt.Sprintf("%.2f Gbit/s, %d retransmits", thr.BitsPerSecond/1e9, thr.Retransmits)
}
