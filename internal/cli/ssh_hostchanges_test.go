package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// hostChangesYAML writes a scenario over the two sites with
// host_changes: true, one pair (site 0 sending), native and tcp_stream
// only; matrix adds its lines (duration 1s unless it sets one). mgmt
// addresses the sites over their management network, else over their
// underlay devices. siteExtra is added to every site.
func hostChangesYAML(t *testing.T, sites *sshtest.Sites, bin, matrix string, mgmt bool, siteExtra string) string {
	t.Helper()
	if !strings.Contains(matrix, "duration:") {
		matrix = "duration: 1s\n" + matrix
	}
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: ssh\nmethods: [native]\nrepetitions: 1\nomit: 0s\nlatency: 0s\ntests: [tcp_stream]\n%s", matrix)
	fmt.Fprintf(&b, "ssh:\n  host_changes: true\n  known_hosts: %s\n  binary: %s\n  pairs: [[%s, %s]]\n  sites:\n", sites.KnownHosts, bin, siteName(sites, 0), siteName(sites, 1))
	for i, st := range sites.Site {
		addr := st.Config.Addr
		if mgmt {
			addr = st.Mgmt4
		}
		fmt.Fprintf(&b, "    - {name: %s, address: %s, identity: %s, dev: %s, ipv4: %s/24%s}\n",
			siteName(sites, i), addr, sites.IdentityFile, st.Dev, st.Addr4, siteExtra)
	}
	path := filepath.Join(t.TempDir(), "ssh.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// devState is a site's underlay device as a user would look at it: the
// MTU from ip link and every line of ethtool -k.
func devState(t *testing.T, st *sshtest.Site) []string {
	t.Helper()
	out, err := exec.Command("ip", "-n", st.Namespace, "-o", "link", "show", "dev", st.Dev).Output()
	if err != nil {
		t.Fatalf("ip link show %s: %v", st.Dev, err)
	}
	m := regexp.MustCompile(` mtu (\d+) `).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no mtu in %q", out)
	}
	lines := []string{"mtu " + m[1]}
	out, err = exec.Command("ip", "netns", "exec", st.Namespace, "ethtool", "-k", st.Dev).Output()
	if err != nil {
		t.Fatalf("ethtool -k %s: %v", st.Dev, err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

// feature returns the value of one ethtool -k line of a state.
func feature(state []string, name string) string {
	for _, l := range state {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			return strings.Fields(v)[0]
		}
	}
	return ""
}

// TestSSHHostChanges: with host_changes, a run over two sshtest hosts
// sweeps mtus [1500, 9000] and offloads [on, off]: four ok cells, each
// recording its MTU and offloads on both hosts' devices, and afterwards
// both devices are exactly as before (MTU and every ethtool -k line).
func TestSSHHostChanges(t *testing.T) {
	t.Parallel()
	needEthtool(t)
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2, sshtest.Management())
	before := [][]string{devState(t, sites.Site[0]), devState(t, sites.Site[1])}
	scen := hostChangesYAML(t, sites, bin, "mtus: [1500, 9000]\noffloads: [on, off]\n", true, "")
	dir := t.TempDir()
	db, export := filepath.Join(dir, "r.db"), filepath.Join(dir, "e.json")
	out, err := exec.Command("ip", "netns", "exec", sites.Control, bin, "run", "-f", scen, "--db", db, "--export", export).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run: %v\n%s", err, out)
	}
	cells := exportOf(t, export).Cells
	if len(cells) != 4 {
		t.Fatalf("%d cells, want 4\n%s", len(cells), out)
	}
	seen := map[string]bool{}
	for _, c := range cells {
		key := fmt.Sprintf("mtu %d offloads %v", c.Params.UnderlayMTU, c.Params.Offloads)
		seen[key] = true
		if c.Status != result.StatusOK {
			t.Errorf("%s: %s: %s", key, c.Status, c.Error)
			continue
		}
		want := c.Params.Offloads
		for i, st := range sites.Site {
			var d *result.Device
			for j := range c.Meta.Devices {
				if c.Meta.Devices[j].Name == st.Dev {
					d = &c.Meta.Devices[j]
				}
			}
			switch {
			case d == nil:
				t.Errorf("%s: site %d's %s not recorded", key, i, st.Dev)
			case d.MTU != c.Params.UnderlayMTU:
				t.Errorf("%s: site %d's %s recorded with MTU %d", key, i, st.Dev, d.MTU)
			case want:
				// Offloads on: every feature as the host has it.
				for _, l := range before[i][1:] {
					name, v, _ := strings.Cut(l, ": ")
					if got := d.Offloads[name]; got != (strings.Fields(v)[0] == "on") {
						t.Errorf("%s: site %d's %s recorded with %s %v, the host has %s", key, i, st.Dev, name, got, v)
					}
				}
			default:
				for _, f := range []string{"tx-tcp-segmentation", "generic-segmentation-offload", "generic-receive-offload"} {
					if d.Offloads[f] {
						t.Errorf("%s: site %d's %s recorded with %s on", key, i, st.Dev, f)
					}
				}
			}
		}
	}
	for _, mtu := range []int{1500, 9000} {
		for _, off := range []bool{true, false} {
			if key := fmt.Sprintf("mtu %d offloads %v", mtu, off); !seen[key] {
				t.Errorf("no cell %s", key)
			}
		}
	}
	for i, st := range sites.Site {
		if diff := cmp.Diff(before[i], devState(t, st)); diff != "" {
			t.Errorf("site %d's %s after the run (-before +after):\n%s", i, st.Dev, diff)
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
	noSSHLeftovers(t, sites, db)
}

// untilKilled is the duration of a run a test kills after its first host
// change: it is still measuring, long before its teardown, when the test
// sees the change made (waitHostChanged).
const untilKilled = "duration: 60s\n"

// waitHostChanged waits until the run cmd, started with untilKilled, has
// made its first host change on every site, as ethtool and ip show it:
// the device at MTU 9000 with its offloads off. The run has journalled
// the devices' original state by then and measures on; its teardown is
// a minute away. A run that does not get there within 90 s is killed
// and fails the test, with its output (out).
func waitHostChanged(t *testing.T, cmd *exec.Cmd, out *strings.Builder, sites *sshtest.Sites) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		changed := true
		for _, st := range sites.Site {
			now := devState(t, st)
			if now[0] != "mtu 9000" || feature(now, "tcp-segmentation-offload") != "off" || feature(now, "generic-receive-offload") != "off" {
				changed = false
			}
		}
		if changed {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatalf("the run did not reach its first host change:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// needEthtool skips without ethtool, the tests' independent view
// of the devices.
func needEthtool(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Fatalf("the host-changes tests read devices with ethtool (Debian package ethtool): %v", err)
	}
}

// TestSSHHostChangesCrash: a run with host_changes stopped (SIGSTOP)
// right after a cell raised both hosts' MTU to 9000 and switched their
// offloads off, then the controller (or both agents) SIGKILLed: after "tunbench clean
// --testbed ssh" every device has its MTU and every feature back, and no
// journal (no run directory) is left. When the controller dies, its
// agents see their connections end and put the devices back from the
// journal themselves (clean then finds nothing); when the agents die
// without a word, clean restores from the journal.
func TestSSHHostChangesCrash(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	needEthtool(t)
	bin := tunbenchBinary(t)
	for _, victim := range []string{"controller", "agents"} {
		t.Run(victim, func(t *testing.T) {
			sites := sshtest.New(t, 2, sshtest.Management())
			before := [][]string{devState(t, sites.Site[0]), devState(t, sites.Site[1])}
			scen := hostChangesYAML(t, sites, bin, untilKilled+"mtus: [9000]\noffloads: [off]\n", true, "")
			dir := t.TempDir()
			db := filepath.Join(dir, "r.db")
			cmd := exec.Command("ip", "netns", "exec", sites.Control, bin, "run", "-f", scen, "--db", db, "--quiet")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitHostChanged(t, cmd, &out, sites)
			// Stop the controller there (with its ssh clients): it does
			// not reach the hosts again.
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			for i, st := range sites.Site {
				now := devState(t, st)
				if now[0] != "mtu 9000" || feature(now, "tcp-segmentation-offload") != "off" || feature(now, "generic-receive-offload") != "off" {
					t.Fatalf("site %d at the pause: %v; want MTU 9000 and offloads off", i, now)
				}
			}
			// Each host's journal holds the original state, readable by
			// root alone.
			for i, st := range sites.Site {
				files, _ := filepath.Glob(filepath.Join(testbed.DefaultRoot, "*", siteName(sites, i), "undo", "device-"+st.Dev))
				if len(files) != 1 {
					t.Fatalf("site %d: journal entries %v, want one", i, files)
				}
				fi, err := os.Stat(files[0])
				if err != nil {
					t.Fatal(err)
				}
				var u testbed.Undo
				data, _ := os.ReadFile(files[0])
				if err := json.Unmarshal(data, &u); err != nil {
					t.Fatal(err)
				}
				want := devState(t, st) // as changed; the journal has the original
				if fi.Mode().Perm() != 0o600 || u.Kind != testbed.UndoDevice || u.MTU != 1500 || len(u.Features) != len(want)-1 || !u.Features["generic-segmentation-offload"] {
					t.Errorf("site %d: journal %s (%v): %+v", i, files[0], fi.Mode().Perm(), u)
				}
			}
			if victim == "agents" {
				for _, st := range sites.Site {
					killAgents(st.Namespace)
				}
				// The agents died without a word (SIGKILL): nothing puts
				// the devices back until clean. The controller is still
				// alive (stopped) and does not reach the hosts again.
				time.Sleep(200 * time.Millisecond)
				for i, st := range sites.Site {
					if now := devState(t, st); now[0] != "mtu 9000" {
						t.Errorf("site %d after its agent was killed: %s; want mtu 9000 (nothing left to put it back)", i, now[0])
					}
				}
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			// A dying agent still holds the run's lock, and clean leaves
			// a locked run alone: wait until the agents are gone.
			waitAgentsGone(t, 15*time.Second, sites.Site[0].Namespace, sites.Site[1].Namespace)
			cout, err := exec.Command("ip", "netns", "exec", sites.Control, bin, "clean", "--testbed", "ssh", "-f", scen).CombinedOutput()
			if err != nil {
				t.Fatalf("clean --testbed ssh: %v\n%s", err, cout)
			}
			t.Logf("clean --testbed ssh:\n%s", cout)
			if victim == "agents" && strings.Count(string(cout), "mtu 9000 → 1500") != 2 {
				t.Errorf("clean does not say it restored both devices:\n%s", cout)
			}
			for i, st := range sites.Site {
				if diff := cmp.Diff(before[i], devState(t, st)); diff != "" {
					t.Errorf("site %d's %s after clean (-before +after):\n%s", i, st.Dev, diff)
				}
			}
			noSSHLeftovers(t, sites, db)
		})
	}
}

// TestSSHHostChangesControlOverDev: a site reached over the device the
// run changes is refused, naming the connection, the device and
// control_over_dev; with control_over_dev: true the run goes ahead, and
// the devices are back as before afterwards.
func TestSSHHostChangesControlOverDev(t *testing.T) {
	t.Parallel()
	needEthtool(t)
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	before := [][]string{devState(t, sites.Site[0]), devState(t, sites.Site[1])}
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	scen := hostChangesYAML(t, sites, bin, "mtus: [9000]\n", false, "")
	out, err := inSite(sites, bin, "run", "-f", scen, "--db", db, "--export", filepath.Join(dir, "e.json")).CombinedOutput()
	if err == nil {
		t.Fatalf("a run over the changed device was not refused:\n%s", out)
	}
	for _, want := range []string{"runs over " + sites.Site[1].Dev, "control_over_dev: true"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("refusal lacks %q:\n%s", want, out)
		}
	}
	scen = hostChangesYAML(t, sites, bin, "mtus: [9000]\n", false, ", control_over_dev: true")
	out, err = inSite(sites, bin, "run", "-f", scen, "--db", db, "--export", filepath.Join(dir, "e.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("run with control_over_dev: %v\n%s", err, out)
	}
	for _, c := range exportOf(t, filepath.Join(dir, "e.json")).Cells {
		if c.Status != result.StatusOK || c.Params.UnderlayMTU != 9000 {
			t.Errorf("cell %s: %s (MTU %d): %s", c.Key, c.Status, c.Params.UnderlayMTU, c.Error)
		}
	}
	if !strings.Contains(string(out), "control_over_dev") {
		t.Errorf("the run does not say its connection runs over the device:\n%s", out)
	}
	for i, st := range sites.Site {
		if diff := cmp.Diff(before[i], devState(t, st)); diff != "" {
			t.Errorf("site %d's %s after the run (-before +after):\n%s", i, st.Dev, diff)
		}
	}
	noSSHLeftovers(t, sites, db)
}

// TestSSHHostChangesWatchdog: a site reached over the device the run
// changes (control_over_dev) puts the device back by itself when the
// controller can no longer reach it. Once the run has made its first
// host change (MTU 9000, offloads off), while it measures on, every
// packet arriving on site 1's device is dropped (a tc filter), so the
// controller's watchdog renewals no longer arrive, and within the
// watchdog's time site 1's device is back as it was, while the
// connection is still cut.
func TestSSHHostChangesWatchdog(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	needEthtool(t)
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	before := [][]string{devState(t, sites.Site[0]), devState(t, sites.Site[1])}
	scen := hostChangesYAML(t, sites, bin, untilKilled+"mtus: [9000]\noffloads: [off]\n", false, ", control_over_dev: true")
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	cmd := inSite(sites, bin, "run", "-f", scen, "--db", db, "--quiet")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	waitHostChanged(t, cmd, &out, sites)
	s1 := sites.Site[1]
	// Cut the control connection: drop everything arriving on the device
	// (classic BPF "ret #2", TC_ACT_SHOT in direct-action mode).
	for _, args := range [][]string{
		{"qdisc", "add", "dev", s1.Dev, "clsact"},
		{"filter", "add", "dev", s1.Dev, "ingress", "bpf", "da", "bytecode", "1,6 0 0 2,"},
	} {
		if o, err := exec.Command("tc", append([]string{"-n", s1.Namespace}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tc %v: %v\n%s", args, err, o)
		}
	}
	start := time.Now()
	for {
		now := devState(t, s1)
		if cmp.Equal(before[1], now) {
			t.Logf("site 1 put its device back %.1f s after its connection was cut", time.Since(start).Seconds())
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("site 1's device not put back 30 s after its connection was cut (-before +now):\n%s", cmp.Diff(before[1], now))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if o, err := exec.Command("tc", "-n", s1.Namespace, "qdisc", "del", "dev", s1.Dev, "clsact").CombinedOutput(); err != nil {
		t.Fatalf("remove the filter: %v\n%s", err, o)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	waitAgentsGone(t, 30*time.Second, sites.Site[0].Namespace, s1.Namespace)
	if cout, err := inSite(sites, bin, "clean", "--testbed", "ssh", "-f", scen).CombinedOutput(); err != nil {
		t.Fatalf("clean --testbed ssh: %v\n%s", err, cout)
	}
	for i, st := range sites.Site {
		if diff := cmp.Diff(before[i], devState(t, st)); diff != "" {
			t.Errorf("site %d's %s after clean (-before +after):\n%s", i, st.Dev, diff)
		}
	}
	noSSHLeftovers(t, sites, db)
}
