package cli

import (
	"flag"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var foreignFull = flag.Bool("foreign.full", false, "sweep every MTU and offload setting in TestSSHForeignState (make chaos does)")

// withForeign puts a host's own state (testbedtest.Foreign) on every
// site of sites: what a real host runs before tunbench arrives.
func withForeign(t *testing.T, sites *sshtest.Sites) {
	t.Helper()
	for _, st := range sites.Site {
		testbedtest.NewForeign(t, testbedtest.Foreign{
			Namespace: st.Namespace, Dev: st.Dev,
			// Unique on the machine, and no tunbench prefix: wireguard-go's
			// control socket is shared by every namespace.
			Name:  fmt.Sprintf("h%08x", crc32.ChecksumIEEE([]byte(st.Namespace))),
			Addr4: netip.MustParseAddr(st.Addr4), Addr6: netip.MustParseAddr(st.Addr6),
		})
	}
}

// readyMethods lists the methods "tunbench methods" says are ready on
// this machine, pod-network (a Kubernetes method) aside.
func readyMethods(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command(bin, "methods").Output()
	if err != nil {
		t.Fatalf("tunbench methods: %v", err)
	}
	var ready []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[2] == "yes" && f[0] != "pod-network" {
			ready = append(ready, f[0])
		}
	}
	return ready
}

// TestSSHForeignState: on two ssh hosts that run networking of their own
// (testbedtest.Foreign: xfrm policies, routes and a rule to table 220,
// a route in main through the underlay, a clsact qdisc with a BPF filter
// at pref 1 and a u32 at pref 49000 on the underlay, a VXLAN device on
// 8472, a TUN device, an extra address, a firewall rule, sysctls of their
// own, their own iperf3 and wireguard-go), a run of every method this
// machine carries with tests tcp_stream, connect and recover and
// host_changes (MTU 9000 with offloads off; every MTU and offload
// setting with -foreign.full) has every cell ok, and each host is exactly
// as before (hostState) after the run and after "tunbench clean
// --testbed ssh". TestChaosSSH puts the same state on its hosts and
// compares them after each SIGKILL of the controller and clean.
func TestSSHForeignState(t *testing.T) {
	t.Parallel()
	needEthtool(t)
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2, sshtest.Management(), sshtest.PrivateFiles())
	withForeign(t, sites)
	addrsSettled(t, sites)
	methods := readyMethods(t, bin)
	for _, want := range []string{"native", "vxlan", "srv6", "ebpf-geneve", "ebpf-vxlan", "ipsec", "ipsec-ecmp", "openvpn",
		"ovs-vxlan", "wireguard-go", "boringtun", "ssh-tunnel", "nebula", "tailscale"} {
		if !slices.Contains(methods, want) {
			t.Fatalf("tunbench methods does not say %s is ready (strict mode: make test installs what it needs): %v", want, methods)
		}
	}
	before := [][]string{hostState(t, sites, sites.Site[0]), hostState(t, sites, sites.Site[1])}
	matrix := "mtus: [9000]\noffloads: [off]\n"
	conditions := 1
	if *foreignFull {
		matrix, conditions = "mtus: [1500, 9000]\noffloads: [on, off]\n", 4
	}
	scen := mgmtScenario(t, sites, fmt.Sprintf("testbed: ssh\nmethods: [%s]\nrepetitions: 1\nduration: 1s\nomit: 0s\nlatency: 0s\ntests: [tcp_stream, connect, recover]\nrecover:\n  down: 1s\n%s",
		strings.Join(methods, ", "), matrix), "  host_changes: true\n")
	out, _, export, err := runMgmt(t, sites, bin, scen)
	if err != nil {
		t.Errorf("tunbench run over hosts with state of their own: %v", err)
	}
	cells := map[string]int{}
	for _, c := range exportOf(t, export).Cells {
		cells[c.Method]++
		key := fmt.Sprintf("%s (mtu %d, offloads %v)", c.Method, c.Params.UnderlayMTU, c.Params.Offloads)
		switch {
		case c.Status != result.StatusOK:
			t.Errorf("%s: %s: %s", key, c.Status, c.Error)
		case c.Throughput == nil || c.Throughput.BitsPerSecond <= 0:
			t.Errorf("%s: no throughput measured", key)
		case c.Connect == nil:
			t.Errorf("%s: no connect record", key)
		case c.Recover == nil:
			t.Errorf("%s: no recover record", key)
		}
	}
	for _, m := range methods {
		if n := cells[m]; n != conditions {
			t.Errorf("%s: %d cells, want %d", m, n, conditions)
		}
	}
	for i, st := range sites.Site {
		if diff := cmp.Diff(before[i], hostState(t, sites, st)); diff != "" {
			t.Errorf("site %d after the run (-before +after):\n%s", i, diff)
		}
	}
	cout, err := exec.Command("ip", "netns", "exec", sites.Control, bin, "clean", "--testbed", "ssh", "-f", scen).CombinedOutput()
	if err != nil {
		t.Errorf("tunbench clean --testbed ssh: %v\n%s", err, cout)
	}
	for i, st := range sites.Site {
		if diff := cmp.Diff(before[i], hostState(t, sites, st)); diff != "" {
			t.Errorf("site %d after clean (-before +after):\n%s\nclean said:\n%s", i, diff, cout)
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
}

// TestHostTouchesEveryMethod: the table of what a run touches on a host
// (docs/ssh.md, "What tunbench touches on your host") names every method.
func TestHostTouchesEveryMethod(t *testing.T) {
	data, err := os.ReadFile("../../docs/ssh.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, "## What tunbench touches on your host")
	if i < 0 {
		t.Fatal(`docs/ssh.md lacks the section "What tunbench touches on your host"`)
	}
	sec := doc[i+1:]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	named := map[string]bool{}
	for _, l := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first := strings.Split(l, "|")[1]
		for _, f := range strings.Split(first, ",") {
			named[strings.Trim(strings.TrimSpace(f), "`")] = true
		}
	}
	for _, name := range registry.Builtin().Names() {
		if !named[name] {
			t.Errorf("docs/ssh.md: %s has no row in \"What tunbench touches on your host\"", name)
		}
	}
}

// mgmtScenario writes a scenario over the first two sites of sites (site
// 0 sending), which the controller reaches over their management
// addresses: head (the matrix, each line ending in a newline), then the
// ssh section with sshExtra (lines such as "  host_changes: true\n")
// before known_hosts, the pair and both sites.
func mgmtScenario(t *testing.T, sites *sshtest.Sites, head, sshExtra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%sssh:\n%s  known_hosts: %s\n  pairs: [[%s, %s]]\n  sites:\n", head, sshExtra, sites.KnownHosts, siteName(sites, 0), siteName(sites, 1))
	for i, st := range sites.Site {
		fmt.Fprintf(&b, "    - {name: %s, address: %s, identity: %s, dev: %s, ipv4: %s/24, ipv6: %s/64}\n",
			siteName(sites, i), st.Mgmt4, sites.IdentityFile, st.Dev, st.Addr4, st.Addr6)
	}
	scen := filepath.Join(t.TempDir(), "ssh.yaml")
	if err := os.WriteFile(scen, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return scen
}

// runMgmt runs "tunbench run -f scen" in sites' control namespace with a
// database and an export of its own, and returns its output, the two
// files, and how it ended.
func runMgmt(t *testing.T, sites *sshtest.Sites, bin, scen string) (out []byte, db, export string, err error) {
	t.Helper()
	dir := t.TempDir()
	db, export = filepath.Join(dir, "r.db"), filepath.Join(dir, "e.json")
	out, err = exec.Command("ip", "netns", "exec", sites.Control, bin, "run", "-f", scen, "--db", db, "--export", export).CombinedOutput()
	return out, db, export, err
}
