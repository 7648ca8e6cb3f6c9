package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/sshhost/sshtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// sshYAML is a scenario over the test's sites, binary given (no copy).
func sshYAML(t *testing.T, sites *sshtest.Sites, bin, knownHosts, duration, extra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: ssh\nmethods: [native, vxlan]\nrepetitions: 1\nduration: %s\nomit: 0s\nlatency: 1s\n%s", duration, extra)
	fmt.Fprintf(&b, "ssh:\n  known_hosts: %s\n  binary: %s\n  sites:\n", knownHosts, bin)
	for _, st := range sites.Site {
		fmt.Fprintf(&b, "    - {name: %s, address: %s, identity: %s, dev: %s, ipv4: %s/24}\n",
			st.Config.Name, st.Config.Addr, sites.IdentityFile, st.Dev, st.Addr4)
	}
	path := filepath.Join(t.TempDir(), "ssh.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// inSite runs tunbench as a controller inside site 0's namespace, from
// where every site's sshd is reachable.
func inSite(sites *sshtest.Sites, bin string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", sites.Site[0].Namespace, bin}, args...)...)
}

// TestSSHRunFromTheCommandLine: "tunbench run -f" on testbed ssh measures
// every ordered pair, prints the site matrix, stores the cells, and
// leaves no run directory or device on the hosts.
func TestSSHRunFromTheCommandLine(t *testing.T) {
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "2s", "tests: [tcp_stream, tcp_rr]\n")
	dir := t.TempDir()
	out, err := inSite(sites, bin, "run", "-f", scen, "--db", filepath.Join(dir, "r.db"), "--export", filepath.Join(dir, "e.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run on testbed ssh: %v\n%s", err, out)
	}
	for _, want := range []string{"site × site, Gbit/s", "s0 → s1", "s1 → s0", "4 cells"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	export, err := os.ReadFile(filepath.Join(dir, "e.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"site_a": "s0"`, `"split": "hosts"`, `"testbed": "ssh"`} {
		if !strings.Contains(string(export), want) {
			t.Errorf("export lacks %s", want)
		}
	}
	noSSHLeftovers(t, sites)
}

// TestSSHRunRefusesUnknownHostKey: a host not in known_hosts stops the run
// before anything is created, with the line that accepts it.
func TestSSHRunRefusesUnknownHostKey(t *testing.T) {
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	scen := sshYAML(t, sites, bin, empty, "2s", "")
	db := filepath.Join(t.TempDir(), "r.db")
	out, err := inSite(sites, bin, "run", "-f", scen, "--db", db).CombinedOutput()
	if err == nil {
		t.Fatalf("run with unknown host keys succeeded:\n%s", out)
	}
	for _, want := range []string{"unknown host key", "ssh-keyscan -p 22 -t ed25519 198.18.0.1", "check the fingerprint"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error lacks %q:\n%s", want, out)
		}
	}
	noSSHLeftovers(t, sites)
}

// TestSSHControllerKilled: a controller killed mid-run leaves nothing on
// the hosts once "tunbench clean --testbed ssh" has run there (the agents
// clean up when their connection ends; clean catches the rest).
func TestSSHControllerKilled(t *testing.T) {
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "20s", "tests: [tcp_stream]\n")
	cmd := inSite(sites, bin, "run", "-f", scen, "--db", filepath.Join(t.TempDir(), "r.db"), "--quiet")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until a cell runs: an iperf3 server on site 1.
	deadline := time.Now().Add(60 * time.Second)
	for !runningIn(sites.Site[1].Namespace, "iperf3") {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatal("no cell started within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	out, err := inSite(sites, bin, "clean", "--testbed", "ssh", "-f", scen).CombinedOutput()
	if err != nil {
		t.Fatalf("clean --testbed ssh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "s0: ") || !strings.Contains(string(out), "s1: ") {
		t.Errorf("clean does not report per site:\n%s", out)
	}
	noSSHLeftovers(t, sites)
}

// runDevice matches the devices a run creates (tb<id>-...), not the
// sites' own underlay devices (tb<id>s0, tb<id>br, ...).
var runDevice = regexp.MustCompile(`^tb[0-9a-f]{6}-`)

// runningIn reports whether a process named name runs in namespace ns.
func runningIn(ns, name string) bool {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, pid := range strings.Fields(string(out)) {
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		if strings.TrimSpace(string(comm)) == name {
			return true
		}
	}
	return false
}

// noSSHLeftovers checks the sites for what runs leave: run devices,
// agents, load tools, run directories.
func noSSHLeftovers(t *testing.T, sites *sshtest.Sites) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, st := range sites.Site {
			out, _ := exec.Command("ip", "-n", st.Namespace, "-o", "link").Output()
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) > 1 && runDevice.MatchString(f[1]) {
					left = append(left, st.Config.Name+": device "+f[1])
				}
			}
		}
		out, _ := exec.Command("pgrep", "-af", " agent$").Output()
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(l, "tunbench") {
				left = append(left, "agent "+l)
			}
		}
		entries, _ := os.ReadDir(testbed.DefaultRoot)
		for _, e := range entries {
			if strings.HasPrefix(sites.Dir, filepath.Join(testbed.DefaultRoot, e.Name())) {
				continue // the sites' own files
			}
			subs, _ := os.ReadDir(filepath.Join(testbed.DefaultRoot, e.Name()))
			for _, s := range subs {
				for _, st := range sites.Site {
					if s.Name() == st.Config.Name {
						left = append(left, "directory "+filepath.Join(testbed.DefaultRoot, e.Name(), s.Name()))
					}
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left on the hosts: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
