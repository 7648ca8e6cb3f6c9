package testbed_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tcclsact "github.com/tunbench/tunbench/internal/clsact"
	"github.com/tunbench/tunbench/internal/clsact/clsacttest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestCleanSiteAppliesJournal leaves a host as a crashed run would leave
// it, after a method moved the underlay's address to its own bridge port,
// set a sysctl, attached tc programs and pinned maps, and checks that
// CleanSite puts every one of them back from the site's journal and then
// removes the journal with the site directory.
func TestCleanSiteAppliesJournal(t *testing.T) {
	h := inFreshNS(t)
	under := addDummy(t, h, "jund0")
	phy := addDummy(t, h, "jphy0")
	_, pfx, _ := net.ParseCIDR("198.18.7.1/24")
	pfx.IP = net.ParseIP("198.18.7.1").To4()
	addr := netlink.Addr{IPNet: pfx}
	if err := h.AddrAdd(phy, &addr); err != nil {
		t.Fatal(err)
	}
	arp := "/proc/sys/net/ipv4/conf/jund0/arp_ignore"
	if err := os.WriteFile(arp, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clsact := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: under.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := h.QdiscAdd(clsact); err != nil {
		t.Fatal(err)
	}
	// The run's program on the qdisc it created.
	clsacttest.AddBPF(t, h, "jund0", netlink.HANDLE_MIN_INGRESS, 1, "tunbench_ingress")
	// A host route of tunbench's to 198.18.7.9 carrying a congestion
	// control, and the host's own route there in table 100, which stays.
	rt := addDummy(t, h, "jrt0")
	if err := h.LinkSetUp(rt); err != nil {
		t.Fatal(err)
	}
	pinned := netip.MustParsePrefix("198.18.7.9/32")
	for _, r := range []netlink.Route{
		{LinkIndex: rt.Attrs().Index, Dst: testbed.PrefixNet(pinned), Table: unix.RT_TABLE_MAIN, Scope: unix.RT_SCOPE_LINK, Protocol: testbed.RouteProtocol, Congctl: "cubic"},
		{LinkIndex: rt.Attrs().Index, Dst: testbed.PrefixNet(pinned), Table: 100, Scope: unix.RT_SCOPE_LINK, Protocol: unix.RTPROT_STATIC},
	} {
		if err := h.RouteAdd(&r); err != nil {
			t.Fatal(err)
		}
	}
	oldRoot := testbed.BPFPinRoot
	testbed.BPFPinRoot = filepath.Join(t.TempDir(), "pins")
	t.Cleanup(func() { testbed.BPFPinRoot = oldRoot })
	id := testbed.NewID()
	pins := filepath.Join(testbed.BPFPinRoot, testbed.DevicePrefix(id)+"-a")
	if err := os.MkdirAll(pins, 0o700); err != nil {
		t.Fatal(err)
	}
	addDummy(t, h, "jtap0")
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	// A daemon's rule to its table 4242, and the host's own rule to the
	// same table at another priority, which stays. A run's own table
	// 22001 (a route in it, a rule of priority 219 to it, IPv4 and IPv6)
	// goes; the host's table 220 with its rule of priority 220 stays.
	for _, r := range []struct{ table, prio, family int }{
		{4242, 4242, netlink.FAMILY_V4}, {4242, 4300, netlink.FAMILY_V4},
		{22001, 219, netlink.FAMILY_V4}, {22001, 219, netlink.FAMILY_V6},
		{220, 220, netlink.FAMILY_V4}, {220, 220, netlink.FAMILY_V6},
	} {
		rule := netlink.NewRule()
		rule.Table, rule.Priority, rule.Family = r.table, r.prio, r.family
		if err := h.RuleAdd(rule); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []int{22001, 220} {
		r := netlink.Route{LinkIndex: rt.Attrs().Index, Dst: testbed.PrefixNet(netip.MustParsePrefix("198.18.7.10/32")), Table: table, Scope: unix.RT_SCOPE_LINK}
		if err := h.RouteAdd(&r); err != nil {
			t.Fatal(err)
		}
	}
	loAddr := &netlink.Addr{IPNet: testbed.PrefixNet(netip.MustParsePrefix("198.18.7.5/32"))}
	if err := h.AddrAdd(lo, loAddr); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	dir := testbed.SiteDir(root, id, "j")
	for name, u := range map[string]testbed.Undo{
		"addrs": addrsAndRoute(addr),
		"arp":   {Kind: testbed.UndoSysctl, Path: arp, Value: "0"},
		"clsact": testbed.ClsactUndo(tcclsact.Attachment{Dev: "jund0", QdiscCreated: true, Filters: []tcclsact.Filter{
			{Parent: tcclsact.Ingress, Priority: 1, Handle: 1, Name: "tunbench_ingress"},
			{Parent: tcclsact.Egress, Priority: 1, Handle: 1, Name: "tunbench_egress"},
		}}),
		"pins":  {Kind: testbed.UndoUnpin, Path: pins},
		"route": {Kind: testbed.UndoRoute, Addrs: []string{pinned.String()}, Table: unix.RT_TABLE_MAIN},
		// A daemon's own device (ovs-netdev), left when it was killed,
		// and one that was never created.
		"tap":   {Kind: testbed.UndoDelLink, Dev: "jtap0"},
		"never": {Kind: testbed.UndoDelLink, Dev: "jnever0"},
		// An address the run put on a device of the host's (lo).
		"lo": {Kind: testbed.UndoDelAddr, Dev: "lo", Addrs: []string{"198.18.7.5/32"}},
		// A daemon's rule to its table, of its priority.
		"rule": {Kind: testbed.UndoDelRule, Table: 4242, Priority: 4242},
		// A run's own routing table and the rule to it (charon's).
		"table": {Kind: testbed.UndoDelTable, Table: 22001, Priority: 219},
	} {
		if err := testbed.WriteUndo(dir, name, u); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "undo", "arp")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal entry: %v, %v; want mode 0600", fi, err)
	}

	removed, err := agent.CleanSite(root, id, "j")
	if err != nil {
		t.Fatalf("CleanSite: %v", err)
	}
	var restored []string
	for _, r := range removed {
		if r.Kind == "restored" {
			restored = append(restored, r.Name)
		}
	}
	sort.Strings(restored)
	want := []string{
		"/proc/sys/net/ipv4/conf/jund0/arp_ignore = 0",
		"1 rules to table 4242 removed",
		"address 198.18.7.5/32 taken off lo",
		"addresses 198.18.7.1/24 and routes 198.19.7.0/24 via 198.18.7.254 table 100 on jund0",
		"bpf pins " + pins,
		"device jtap0 removed",
		"route 198.18.7.9/32 removed from table 254",
		"table 22001 (1 routes) and 2 rules to it removed",
		"tc programs detached from jund0 and its clsact qdisc removed",
	}
	if diff := cmp.Diff(want, restored); diff != "" {
		t.Errorf("CleanSite restored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantHostState(), hostState(t, h, arp, pins, dir)); diff != "" {
		t.Errorf("host after CleanSite (-want +got):\n%s", diff)
	}

	// The journal went with the site directory: a second clean restores
	// nothing.
	removed, err = agent.CleanSite(root, id, "j")
	if err != nil || len(removed) != 0 {
		t.Errorf("second CleanSite = %v, %v; want nothing", removed, err)
	}
}

func wantHostState() []string {
	return []string{
		"jund0 addr 198.18.7.1/24",
		"jund0 up",
		"jund0 arp_ignore 0",
		"jund0 qdiscs: noqueue",
		"pins gone",
		"site directory gone",
		"route 198.18.7.9/32 table 100 proto 4",
		"route 198.19.7.0/24 via 198.18.7.254 table 100 metric 5 proto 4 on jund0",
		"route 198.18.7.10/32 table 220",
		"rule 220 to table 220",
		"rule 4300 to table 4242",
		"rule6 220 to table 220",
	}
}

// addrsAndRoute is the entry that puts addr back on jund0 (taking it off
// jphy0) with a route through it, as the recover test journals an
// underlay before it takes it down (which drops the routes through it).
func addrsAndRoute(addr netlink.Addr) testbed.Undo {
	u := testbed.AddrsUndo("jund0", "jphy0", []netlink.Addr{addr})
	u.Routes = []testbed.JournalRoute{{Family: unix.AF_INET, Dst: "198.19.7.0/24", Gw: "198.18.7.254", Table: 100, Priority: 5, Protocol: unix.RTPROT_STATIC}}
	return u
}

// hostState describes the test host as text lines.
func hostState(t *testing.T, h *netlink.Handle, arp, pins, dir string) []string {
	t.Helper()
	var lines []string
	for _, name := range []string{"jund0", "jphy0"} {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		addrs, _ := h.AddrList(l, netlink.FAMILY_V4)
		for _, a := range addrs {
			lines = append(lines, name+" addr "+a.IPNet.String())
		}
		if name == "jund0" && l.Attrs().Flags&net.FlagUp != 0 {
			lines = append(lines, name+" up")
		}
	}
	v, err := os.ReadFile(arp)
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, "jund0 arp_ignore "+strings.TrimSpace(string(v)))
	l, _ := h.LinkByName("jund0")
	qs, _ := h.QdiscList(l)
	var kinds []string
	for _, q := range qs {
		kinds = append(kinds, q.Type())
	}
	lines = append(lines, "jund0 qdiscs: "+strings.Join(kinds, ","))
	if _, err := os.Stat(pins); os.IsNotExist(err) {
		lines = append(lines, "pins gone")
	}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		lines = append(lines, "site directory gone")
	}
	routes, _ := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	for _, r := range routes {
		switch {
		case r.Dst != nil && r.Dst.String() == "198.18.7.9/32":
			lines = append(lines, fmt.Sprintf("route %s table %d proto %d", r.Dst, r.Table, r.Protocol))
		case r.Dst != nil && r.Dst.String() == "198.19.7.0/24":
			dev, _ := h.LinkByIndex(r.LinkIndex)
			lines = append(lines, fmt.Sprintf("route %s via %s table %d metric %d proto %d on %s", r.Dst, r.Gw, r.Table, r.Priority, r.Protocol, dev.Attrs().Name))
		case r.Dst != nil && r.Dst.String() == "198.18.7.10/32":
			lines = append(lines, fmt.Sprintf("route %s table %d", r.Dst, r.Table))
		}
	}
	for _, f := range []struct {
		fam  int
		name string
	}{{netlink.FAMILY_V4, "rule"}, {netlink.FAMILY_V6, "rule6"}} {
		rules, err := h.RuleList(f.fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if r.Table != unix.RT_TABLE_LOCAL && r.Table != unix.RT_TABLE_MAIN && r.Table != unix.RT_TABLE_DEFAULT {
				lines = append(lines, fmt.Sprintf("%s %d to table %d", f.name, r.Priority, r.Table))
			}
		}
	}
	return lines
}

// addDummy adds name as one end of a veth pair (this kernel has no
// dummy devices).
func addDummy(t *testing.T, h *netlink.Handle, name string) netlink.Link {
	t.Helper()
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}); err != nil {
		t.Fatal(err)
	}
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAgentShutdownAppliesJournal: when its controller goes, an agent puts
// back from its site's journal what the run changed on its host (here a
// namespace-wide sysctl, as ipsec-ecmp's hash policy) before it removes
// the site directory and the journal with it.
func TestAgentShutdownAppliesJournal(t *testing.T) {
	l, pair, agents := testbedtest.AgentPair(t, 0)
	b := pair.B
	const sysctl = "/proc/sys/net/ipv4/fib_multipath_hash_policy"
	read := func() string {
		out, err := exec.Command("ip", "netns", "exec", l.B.Namespace, "cat", sysctl).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	orig := read()
	changed := "1"
	if orig == "1" {
		changed = "0"
	}
	if err := b.RecordUndo("test-hash-policy", testbed.Undo{Kind: testbed.UndoSysctl, Path: sysctl, Value: orig}); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile(sysctl, []byte(changed+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != changed {
		t.Fatalf("%s is %s after the write, want %s", sysctl, got, changed)
	}
	if err := agents[1].Conn.Close(); err != nil { // the controller goes; the agent exits
		t.Fatal(err)
	}
	if got := read(); got != orig {
		t.Errorf("%s is %s after the agent's shutdown, want the journaled %s", sysctl, got, orig)
	}
	if _, err := os.Stat(b.Dir); !os.IsNotExist(err) {
		t.Errorf("site directory %s (with the journal) remains: %v", b.Dir, err)
	}
}

// TestRestoreOrder: IPv4 addresses go back first to last, IPv6 ones last
// to first (the kernel puts a new IPv6 address before the others).
func TestRestoreOrder(t *testing.T) {
	for _, tt := range []struct {
		v6   []bool
		want []int
	}{
		{nil, nil},
		{[]bool{false, false}, []int{0, 1}},
		{[]bool{true, true, true}, []int{2, 1, 0}},
		{[]bool{false, true, false, true}, []int{0, 2, 3, 1}},
	} {
		if diff := cmp.Diff(tt.want, testbed.RestoreOrder(tt.v6)); diff != "" {
			t.Errorf("RestoreOrder(%v) (-want +got):\n%s", tt.v6, diff)
		}
	}
}
