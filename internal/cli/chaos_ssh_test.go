package cli

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var chaosSSHKills = flag.Int("chaos.sshkills", 10, "controller SIGKILLs of the ssh chaos test (make chaos runs 100)")

// sshChaosMethods are one method of each family this kernel runs on ssh
// hosts: the host's own stack, a kernel tunnel, a userspace WireGuard,
// IPsec (strongSwan's libipsec), an eBPF tunnel, Open vSwitch and
// OpenVPN.
var sshChaosMethods = []string{"native", "vxlan", "wireguard-go", "ipsec", "ebpf-geneve", "ovs-vxlan", "openvpn"}

// chaosSSHYAML writes a scenario over the sites of sites (pairs around
// the ring: s0 → s1 → s2 → s0), with host_changes sweeping the MTU and
// the offloads, reached over the management network, without
// ssh.binary: the controller copies itself to each host, as for a user.
func chaosSSHYAML(t *testing.T, sites *sshtest.Sites, methods []string, duration, matrix string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: ssh\nmethods: [%s]\nrepetitions: 1\nduration: %s\nomit: 0s\nlatency: 0s\ntests: [tcp_stream]\n%s",
		strings.Join(methods, ", "), duration, matrix)
	var pairs []string
	for i := range sites.Site {
		pairs = append(pairs, fmt.Sprintf("[%s, %s]", siteName(sites, i), siteName(sites, (i+1)%len(sites.Site))))
	}
	fmt.Fprintf(&b, "ssh:\n  host_changes: true\n  known_hosts: %s\n  pairs: [%s]\n  sites:\n", sites.KnownHosts, strings.Join(pairs, ", "))
	for i, st := range sites.Site {
		fmt.Fprintf(&b, "    - {name: %s, address: %s, identity: %s, dev: %s, ipv4: %s/24, ipv6: %s/64}\n",
			siteName(sites, i), st.Mgmt4, sites.IdentityFile, st.Dev, st.Addr4, st.Addr6)
	}
	path := filepath.Join(t.TempDir(), "ssh.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostState is a site as a user would check it after a crash, one line
// per fact: its network state as testbedtest.State writes it (devices,
// addresses, routes and rules of every table, xfrm, the underlay's
// qdiscs and tc filters, the firewall, sysctls, listening sockets), every
// device's MTU, every ethtool feature of the underlay, the processes
// living there besides sshd, and the files under the site's
// /run/tunbench (its own, with PrivateFiles) and BPF pins but the
// test's.
func hostState(t *testing.T, sites *sshtest.Sites, st *sshtest.Site) []string {
	t.Helper()
	lines := testbedtest.State(t, st.Namespace, st.Dev)
	ns := st.Namespace
	out, _ := exec.Command("ip", "-n", ns, "-o", "link").Output()
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 {
			lines = append(lines, "link: "+strings.TrimSuffix(f[1], ":")+" mtu "+f[4])
		}
	}
	for _, l := range devState(t, st) {
		lines = append(lines, "underlay: "+l)
	}
	for _, p := range processesIn(ns) {
		lines = append(lines, "process: "+p)
	}
	for _, dir := range []string{testbed.DefaultRoot, testbed.BPFPinRoot} {
		root := st.Path(dir)
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || p == root {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			if rel == filepath.Base(sites.Dir) || strings.HasPrefix(rel, "locks") {
				return filepath.SkipDir
			}
			lines = append(lines, "file: "+filepath.Join(dir, rel))
			return nil
		})
	}
	slices.Sort(lines)
	return lines
}

// addrsSettled waits until no address of the sites is tentative (IPv6
// duplicate address detection of fresh devices), so that their local
// routes are all there before a state is taken.
func addrsSettled(t *testing.T, sites *sshtest.Sites) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, st := range sites.Site {
		for {
			out, _ := exec.Command("ip", "-n", st.Namespace, "-6", "addr", "show", "tentative").Output()
			if len(bytes.TrimSpace(out)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: addresses still tentative after 10 s:\n%s", st.Namespace, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// okLine matches the progress line of a cell measured ok (printed once
// the cell is stored): "[3/24 ETA 1m2s] vxlan ipv4 ...: 1.23 Gbit/s".
var okLine = regexp.MustCompile(`(?m)^\[\d+/\d+ ETA [^\]]*\] .*: [0-9.]+ Gbit/s`)

// TestChaosSSH kills the controller of a run over three ssh hosts with
// SIGKILL at random moments, on hosts that run networking of their own
// (testbedtest.Foreign, as in TestSSHForeignState). The run sweeps host
// changes (mtus [1500,
// 9000], offloads [on, off]) over two methods drawn from one of each
// family (sshChaosMethods), each in turn the first, so that kills within
// the first seconds reach every family. After each
// kill it waits until the hosts' agents are gone (at most 15 s), runs
// "tunbench clean --testbed ssh -f" as a user would (no ssh.binary, hosts
// with file systems of their own) and counts hosts not exactly as before
// (hostState), clean failures, and ok cells lost: cells the controller
// reported stored ok before the kill that the database lacks.
//
// The kills are shared among chaosSSHLanes subtests that run at once, each
// over three sites of its own with its own random stream: a kill mostly
// waits (for its moment, for the agents to go), so lanes cut the wall
// time without fewer kills.
func TestChaosSSH(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	needEthtool(t)
	bin := tunbenchBinary(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos over ssh: seed %d, methods %v, %d kills in %d lanes", seed, sshChaosMethods, *chaosSSHKills, chaosSSHLanes)
	// The lanes start together and share this test's place among the
	// parallel tests (as parallel subtests they would queue again behind
	// every other test).
	var wg sync.WaitGroup
	for lane := range chaosSSHLanes {
		kills := *chaosSSHKills / chaosSSHLanes
		if lane < *chaosSSHKills%chaosSSHLanes {
			kills++
		}
		wg.Go(func() {
			t.Run(fmt.Sprintf("lane%d", lane+1), func(t *testing.T) {
				chaosSSHLane(t, bin, seed, uint64(lane), kills)
			})
		})
	}
	wg.Wait()
}

// chaosSSHLanes is how many sets of sites TestChaosSSH kills runs on at
// once.
const chaosSSHLanes = 2

// chaosSSHLane is one lane of TestChaosSSH: kills SIGKILLs of runs over
// three sites of its own, drawn from the random stream (seed, lane).
func chaosSSHLane(t *testing.T, bin string, seed, lane uint64, kills int) {
	sites := sshtest.New(t, 3, sshtest.Management(), sshtest.PrivateFiles())
	withForeign(t, sites)
	addrsSettled(t, sites)
	before := make([][]string, len(sites.Site))
	for i, st := range sites.Site {
		before[i] = hostState(t, sites, st)
	}
	var siteNamespaces []string
	for _, st := range sites.Site {
		siteNamespaces = append(siteNamespaces, st.Namespace)
	}
	rng := rand.New(rand.NewPCG(seed, lane))
	var changedByAgents, changed, cleanFailures, okReported, lost int
	dir := t.TempDir()
	for kill := 1; kill <= kills; kill++ {
		delay := time.Duration(500+rng.IntN(24500)) * time.Millisecond
		perm := rng.Perm(len(sshChaosMethods))
		methods := []string{sshChaosMethods[perm[0]], sshChaosMethods[perm[1]]}
		scen := chaosSSHYAML(t, sites, methods, "1s", "mtus: [1500, 9000]\noffloads: [on, off]\n")
		db := filepath.Join(dir, fmt.Sprintf("r%d.db", kill))
		cmd := exec.Command("ip", "netns", "exec", sites.Control, bin, "run", "-f", scen, "--db", db)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("kill %d: the run ended (%v) before its kill after %s:\n%s", kill, err, delay, out.String())
		case <-time.After(delay):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		reported := len(okLine.FindAllString(out.String(), -1))
		okReported += reported

		// The agents put their hosts back by themselves; then clean.
		// (Agents still alive then show in the host state logged below.)
		_ = agentsLeft(15*time.Second, siteNamespaces...)
		for i, st := range sites.Site {
			if diff := cmp.Diff(before[i], hostState(t, sites, st)); diff != "" {
				changedByAgents++
				t.Logf("kill %d (%v) after %s: site %d before clean (-before +now):\n%s", kill, methods, delay, i, diff)
			}
		}
		cout, err := exec.Command("ip", "netns", "exec", sites.Control, bin, "clean", "--testbed", "ssh", "-f", scen).CombinedOutput()
		if err != nil {
			cleanFailures++
			t.Errorf("kill %d (%v) after %s: clean --testbed ssh: %v\n%s", kill, methods, delay, err, cout)
		}
		for i, st := range sites.Site {
			if diff := cmp.Diff(before[i], hostState(t, sites, st)); diff != "" {
				changed++
				t.Errorf("kill %d (%v) after %s: site %d not as before after clean (-before +after):\n%s\nclean said:\n%s", kill, methods, delay, i, diff, cout)
			}
		}
		stored := 0
		if id := runIDOf(t, db); id != "" {
			for _, c := range exportCells(t, db, id).Cells {
				if c.Status == result.StatusOK {
					stored++
				}
			}
		}
		if stored < reported {
			lost += reported - stored
			t.Errorf("kill %d after %s: %d cells reported ok before the kill, %d stored", kill, delay, reported, stored)
		}
		t.Logf("kill %d (%v) after %s: %d cells ok before the kill", kill, methods, delay, reported)
		if t.Failed() && kill >= 3 && *chaosSSHKills <= 10 {
			break
		}
	}
	t.Logf("chaos over ssh: %d controller SIGKILLs over ssh hosts (seed %d, stream %d): %d hosts left changed, %d clean failures, %d ok cells lost (of %d); %d host checks found the host changed before clean",
		kills, seed, lane, changed, cleanFailures, lost, okReported, changedByAgents)
}
