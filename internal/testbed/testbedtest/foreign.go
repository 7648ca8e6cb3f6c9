package testbedtest

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/clsact/clsacttest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// Foreign is what a real host runs before tunbench arrives, put into a
// network namespace that stands for that host (an sshtest site, a
// Kubernetes node): the state a run must leave exactly as it found it.
// Every name in it is the host's, none carries tunbench's prefixes, so
// nothing but a bug in tunbench can take it away.
//
// On the underlay device Dev:
//   - a second address (Addr4Extra/24, Addr6Extra/64);
//   - a clsact qdisc with, on ingress and on egress, a BPF filter in
//     direct-action mode at pref 1 handle 1 named "host_prog" (a program
//     that returns TC_ACT_UNSPEC, as a CNI's pass-through does: where
//     tunbench used to put its own filters) and a u32 filter at pref 49000;
//   - a route in main through a gateway on the underlay, and a route in
//     table 220 through it, each in IPv4 and IPv6 (what strongSwan and a
//     cloud image leave);
//
// and in the namespace:
//   - rules to table 220 at priority 220 (IPv4 and IPv6), as charon adds;
//   - xfrm policies of the host's own IPsec (in and out; no xfrm state:
//     the host kernel lacks ESP, platform.md);
//   - a flannel-style VXLAN device "flannel.1" on UDP port 8472, up, with
//     an address of its own;
//   - a TUN device "hosttun0";
//   - a firewall table "hostfw" (nftables, which iptables-nft writes too)
//     with a rule;
//   - sysctls of its own: reno as the default TCP congestion control,
//     rp_filter 2 on all and on Dev;
//   - its own iperf3 server (on the second address, port 5201) and its own
//     wireguard-go (device Name+"wg").
//
// Foreign does not set up an Open vSwitch bridge of the host's own: OVS
// needs its daemons per namespace here (netdev datapath), which would be
// tunbench's ovs methods' own work over again.
type Foreign struct {
	// Namespace and Dev are the host and its underlay device.
	Namespace, Dev string
	// Name is a short name unique on the machine (wireguard-go's control
	// socket lives in /var/run/wireguard, shared by every namespace).
	Name string
	// Addr4, Addr6 are the site's own underlay addresses (the /24 and /64
	// they sit in take the extra address and the gateways); a host
	// without IPv6 leaves Addr6 zero, and gets IPv4 state only.
	Addr4, Addr6 netip.Addr

	procs []*exec.Cmd
}

// Extra is the second address the fixture puts on the underlay, in the
// same /24 (or /64) as a: its host part plus 100.
func Extra(a netip.Addr) netip.Addr {
	b := a.AsSlice()
	b[len(b)-1] += 100
	e, _ := netip.AddrFromSlice(b)
	return e
}

// gateway is the fixture's gateway on the underlay's subnet of a (host
// part 254).
func gateway(a netip.Addr) netip.Addr {
	b := a.AsSlice()
	b[len(b)-1] = 254
	g, _ := netip.AddrFromSlice(b)
	return g.Unmap()
}

// NewForeign puts the fixture into f.Namespace and removes its processes
// when the test ends (the devices and the rest go with the namespace).
// It needs nft, iperf3 and wireguard-go (make test's install step
// provides them).
func NewForeign(t testing.TB, f Foreign) *Foreign {
	t.Helper()
	for _, p := range []struct{ name, fix string }{
		{"nft", "apt-get install -y --no-install-recommends nftables"},
		{"iperf3", "apt-get install -y --no-install-recommends iperf3"},
		{"wireguard-go", "scripts/install.sh test"},
		{"tc", "apt-get install -y --no-install-recommends iproute2"},
	} {
		testenv.NeedProgram(t, p.name, p.fix)
	}
	fx := &f
	t.Cleanup(fx.stop)
	if err := fx.build(t); err != nil {
		t.Fatalf("foreign state in %s: %v", f.Namespace, err)
	}
	return fx
}

func (f *Foreign) build(t testing.TB) error {
	ns, dev := f.Namespace, f.Dev
	x4, g4 := Extra(f.Addr4), gateway(f.Addr4)
	var x6, g6 netip.Addr
	if f.Addr6.IsValid() {
		x6, g6 = Extra(f.Addr6), gateway(f.Addr6)
	}
	ipn := func(args ...string) []string { return append([]string{"ip", "-n", ns}, args...) }
	steps := [][]string{
		ipn("addr", "add", x4.String()+"/24", "dev", dev),
		ipn("route", "add", "198.18.240.0/24", "via", g4.String(), "dev", dev),
		ipn("route", "add", "198.18.241.0/24", "via", g4.String(), "dev", dev, "table", "220"),
		ipn("rule", "add", "pref", "220", "table", "220"),
		ipn("-6", "rule", "add", "pref", "220", "table", "220"),
	}
	if f.Addr6.IsValid() {
		steps = append(steps,
			ipn("-6", "addr", "add", x6.String()+"/64", "dev", dev, "nodad"),
			ipn("-6", "route", "add", "2001:2:0:f0::/64", "via", g6.String(), "dev", dev),
			ipn("-6", "route", "add", "2001:2:0:f1::/64", "via", g6.String(), "dev", dev, "table", "220"))
	}
	steps = append(steps, [][]string{
		ipn("xfrm", "policy", "add", "src", "198.18.242.0/24", "dst", "198.18.243.0/24", "dir", "out",
			"tmpl", "src", f.Addr4.String(), "dst", g4.String(), "proto", "esp", "reqid", "4242", "mode", "tunnel"),
		ipn("xfrm", "policy", "add", "src", "198.18.243.0/24", "dst", "198.18.242.0/24", "dir", "in",
			"tmpl", "src", g4.String(), "dst", f.Addr4.String(), "proto", "esp", "reqid", "4242", "mode", "tunnel"),
		ipn("link", "add", "flannel.1", "type", "vxlan", "id", "1", "local", f.Addr4.String(), "dev", dev,
			"dstport", "8472", "nolearning"),
		ipn("addr", "add", "198.18.244.0/32", "dev", "flannel.1"),
		ipn("link", "set", "flannel.1", "up"),
		ipn("tuntap", "add", "dev", "hosttun0", "mode", "tun"),
		{"tc", "-n", ns, "qdisc", "add", "dev", dev, "clsact"},
		{"tc", "-n", ns, "filter", "add", "dev", dev, "ingress", "pref", "49000", "protocol", "ip",
			"u32", "match", "ip", "src", "198.18.245.0/24", "flowid", "1:1"},
		{"tc", "-n", ns, "filter", "add", "dev", dev, "egress", "pref", "49000", "protocol", "ip",
			"u32", "match", "ip", "dst", "198.18.245.0/24", "flowid", "1:1"},
		{"ip", "netns", "exec", ns, "nft", "add table inet hostfw; " +
			"add chain inet hostfw input { type filter hook input priority 0; policy accept; }; " +
			"add rule inet hostfw input udp dport 8472 ip saddr 198.18.0.0/15 accept"},
		{"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno",
			"net.ipv4.conf.all.rp_filter=2", "net.ipv4.conf." + dev + ".rp_filter=2"},
	}...)
	for _, argv := range steps {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
		}
	}
	if err := f.hostProgs(t); err != nil {
		return err
	}
	for _, argv := range [][]string{
		{"iperf3", "-s", "-B", x4.String(), "-p", "5201"},
		{"wireguard-go", "-f", f.Name + "wg"},
	} {
		c := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
		c.Env = append(os.Environ(), "WG_PROCESS_FOREGROUND=1")
		if err := c.Start(); err != nil {
			return fmt.Errorf("start %s: %w", argv[0], err)
		}
		f.procs = append(f.procs, c)
	}
	// Both are up once their sockets are: iperf3 listens, wireguard-go's
	// device exists. And the state is settled once no address is
	// tentative (IPv6 duplicate address detection of flannel.1's
	// link-local address, whose local route comes after it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("ip", "-n", ns, "-br", "link", "show", f.Name+"wg").Output()
		ss, _ := exec.Command("ip", "netns", "exec", ns, "ss", "-Hltn", "sport", "= :5201").Output()
		tentative, _ := exec.Command("ip", "-n", ns, "-6", "addr", "show", "tentative").Output()
		if len(bytes.TrimSpace(out)) > 0 && len(bytes.TrimSpace(ss)) > 0 && len(bytes.TrimSpace(tentative)) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the host's own iperf3 and wireguard-go are not up, or addresses still tentative, after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostProgs attaches the host's own BPF program (clsacttest.HostProg,
// which lets every packet on to the next filter) to Dev's ingress and
// egress at pref 1 handle 1, direct-action.
func (f *Foreign) hostProgs(t testing.TB) error {
	h, err := netns.GetFromName(f.Namespace)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", f.Namespace, err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", f.Namespace, err)
	}
	defer nl.Close()
	for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
		clsacttest.AddBPF(t, nl, f.Dev, parent, 1, clsacttest.HostProg)
	}
	return nil
}

// stop ends the host's own processes.
func (f *Foreign) stop() {
	for _, c := range f.procs {
		_ = c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	f.procs = nil
	_ = os.Remove(filepath.Join("/var/run/wireguard", f.Name+"wg.sock"))
}

// Pids are the host's own processes (iperf3, wireguard-go; the ip netns
// exec that started each execs it, so the pid is the program's).
func (f *Foreign) Pids() []int {
	var pids []int
	for _, c := range f.procs {
		pids = append(pids, c.Process.Pid)
	}
	return pids
}

// State is the namespace ns as text lines, sorted, one fact a line, for
// cmp.Diff before and after a run: every device with its MTU and state,
// addresses, routes and rules of both families in every table, xfrm
// policies and states, the qdiscs and tc filters of dev, the firewall
// ruleset, the sysctls the fixture sets and those a run may touch on
// dev, and the sockets listening there. Lines that change by themselves
// (counters, BPF program ids of nothing tunbench made) are not part of
// it; a command that fails is asked again, and one that keeps failing is
// an ERROR line of its own, so it never reads as state gone.
func State(t testing.TB, ns, dev string) []string {
	t.Helper()
	var lines []string
	add := func(what string, argv ...string) {
		var out []byte
		var err error
		for try := 1; try <= 3; try++ {
			var stderr bytes.Buffer
			c := exec.Command(argv[0], argv[1:]...)
			c.Stderr = &stderr
			if out, err = c.Output(); err == nil {
				break
			}
			err = fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
			t.Logf("host state, try %d: %v", try, err)
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			lines = append(lines, what+": ERROR "+err.Error())
			return
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l = strings.Join(strings.Fields(l), " "); l != "" {
				lines = append(lines, what+": "+l)
			}
		}
	}
	add("link", "ip", "-n", ns, "-br", "link")
	add("addr", "ip", "-n", ns, "-br", "addr")
	add("route", "ip", "-n", ns, "route", "show", "table", "all")
	add("route6", "ip", "-n", ns, "-6", "route", "show", "table", "all")
	add("rule", "ip", "-n", ns, "rule")
	add("rule6", "ip", "-n", ns, "-6", "rule")
	add("xfrm state", "ip", "-n", ns, "xfrm", "state")
	add("xfrm policy", "ip", "-n", ns, "xfrm", "policy")
	add("qdisc", "tc", "-n", ns, "qdisc", "show", "dev", dev)
	add("filter ingress", "tc", "-n", ns, "filter", "show", "dev", dev, "ingress")
	add("filter egress", "tc", "-n", ns, "filter", "show", "dev", dev, "egress")
	add("nft", "ip", "netns", "exec", ns, "nft", "list", "ruleset")
	add("sysctl", "ip", "netns", "exec", ns, "sysctl", "net.ipv4.tcp_congestion_control",
		"net.ipv4.conf.all.rp_filter", "net.ipv4.conf."+dev+".rp_filter", "net.ipv4.ip_forward",
		"net.ipv6.conf.all.forwarding", "net.ipv4.conf."+dev+".arp_ignore", "net.ipv6.conf."+dev+".keep_addr_on_down")
	add("listen", "ip", "netns", "exec", ns, "ss", "-Hlntu")
	// The "tunnel" UP/UNKNOWN flags of a TUN without a reader change
	// with nothing; ip -br shows operstate only, which is enough.
	slices.Sort(lines)
	return lines
}
