package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
)

// siteName is the name site i of sites goes by in the test's scenario:
// its sshtest name (s0, s1, ...) with the sites' own id appended. The
// agents name their run directories after it (testbed.SiteDir:
// DefaultRoot/<run id>/<site>), and sshtest's id is this test's alone
// while it lives (its lock is held and its directory DefaultRoot/<id>
// was created exclusively), so a directory named after one of these
// sites is this test's, whatever run created it: not one of the plain
// s0, s1 internal/bed/ssh's tests' runs, on the same machine at the same time,
// leave in DefaultRoot/<their run id>/.
func siteName(sites *sshtest.Sites, i int) string {
	return sites.Site[i].Config.Name + "-" + filepath.Base(sites.Dir)
}

// sshYAML is a scenario over the test's sites, binary given (no copy).
func sshYAML(t *testing.T, sites *sshtest.Sites, bin, knownHosts, duration, extra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: ssh\nmethods: [native, vxlan]\nrepetitions: 1\nduration: %s\nomit: 0s\nlatency: 1s\n%s", duration, extra)
	fmt.Fprintf(&b, "ssh:\n  known_hosts: %s\n  binary: %s\n  sites:\n", knownHosts, bin)
	for i, st := range sites.Site {
		fmt.Fprintf(&b, "    - {name: %s, address: %s, identity: %s, dev: %s, ipv4: %s/24}\n",
			siteName(sites, i), st.Config.Addr, sites.IdentityFile, st.Dev, st.Addr4)
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
	t.Parallel()
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "2s", "tests: [tcp_stream, tcp_rr]\n")
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	out, err := inSite(sites, bin, "run", "-f", scen, "--db", db, "--export", filepath.Join(dir, "e.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run on testbed ssh: %v\n%s", err, out)
	}
	s0, s1 := siteName(sites, 0), siteName(sites, 1)
	for _, want := range []string{"site × site, Gbit/s", s0 + " → " + s1, s1 + " → " + s0, "4 cells"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	export, err := os.ReadFile(filepath.Join(dir, "e.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"site_a": "` + s0 + `"`, `"split": "hosts"`, `"testbed": "ssh"`} {
		if !strings.Contains(string(export), want) {
			t.Errorf("export lacks %s", want)
		}
	}
	noSSHLeftovers(t, sites, db)
}

// TestSSHRunRefusesUnknownHostKey: a host not in known_hosts stops the run
// before anything is created, with the line that accepts it.
func TestSSHRunRefusesUnknownHostKey(t *testing.T) {
	t.Parallel()
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
	noSSHLeftovers(t, sites, db)
}

// TestSSHControllerKilled: a controller killed mid-run leaves nothing on
// the hosts once "tunbench clean --testbed ssh" has run there (the agents
// clean up when their connection ends; clean catches the rest).
func TestSSHControllerKilled(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "20s", "tests: [tcp_stream]\n")
	db := filepath.Join(t.TempDir(), "r.db")
	cmd := inSite(sites, bin, "run", "-f", scen, "--db", db, "--quiet")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until a cell runs: an iperf3 server on site 1.
	deadline := time.Now().Add(60 * time.Second)
	for !measuringIn(sites.Site[1].Namespace) {
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
	if !strings.Contains(string(out), siteName(sites, 0)+": ") || !strings.Contains(string(out), siteName(sites, 1)+": ") {
		t.Errorf("clean does not report per site:\n%s", out)
	}
	noSSHLeftovers(t, sites, db)
}

// runDevice matches the devices a run creates (tb<id>-...), not the
// sites' own underlay devices (tb<id>s0, tb<id>br, ...).
var runDevice = regexp.MustCompile(`^tb[0-9a-f]{6}-`)

// measuringIn reports whether load runs in namespace ns: an iperf3
// server or client (-s, -c), not the "iperf3 --version" of the host
// checks, which run in the same namespaces before any device exists.
func measuringIn(ns string) bool {
	return pidIn(ns, "iperf3", "-s") != 0 || pidIn(ns, "iperf3", "-c") != 0
}

// noSSHLeftovers checks the sites for what the test's own runs leave:
// run devices, agents and load tools, run directories. It looks only at
// what this test created, never at everything on the machine: the
// ssh testbed tests (another package, run in parallel by go test) have agents
// and run directories of their own on the same machine at the same time.
//
//   - Devices: in the sites' namespaces only.
//   - Processes: those living in the sites' namespaces (ip netns pids),
//     where sshd runs every command of the test's runs, agents included;
//     apart from the sites' own sshd every one is a leftover, a
//     "tunbench agent" being named as such.
//   - Run directories: the agents create DefaultRoot/<run id>/<site>
//     (testbed.SiteDir) and remove it, and DefaultRoot/<run id> once
//     empty, when they end. Every run stored in the test's database db
//     (runner.Run records the run under the id its agents got) must have
//     no DefaultRoot/<id> left at all. That misses a run refused or
//     killed before it was stored, whose id no one knows, so in addition
//     no DefaultRoot/*/<site> may exist for any of the test's sites: the
//     site names are the test's own (siteName), so this never sees
//     another test's runs however they are timed, and it catches a
//     leftover of the test's run whether or not the run was stored.
func noSSHLeftovers(t *testing.T, sites *sshtest.Sites, db string) {
	t.Helper()
	ids := storedRuns(t, db)
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
		for _, ns := range sites.Namespaces {
			left = append(left, processesIn(ns)...)
		}
		for _, id := range ids {
			dir := filepath.Join(testbed.DefaultRoot, id)
			if _, err := os.Stat(dir); err == nil {
				subs, _ := os.ReadDir(dir)
				var names []string
				for _, s := range subs {
					names = append(names, s.Name())
				}
				left = append(left, fmt.Sprintf("directory %s of run %s (holding %v)", dir, id, names))
			}
		}
		for i := range sites.Site {
			dirs, _ := filepath.Glob(filepath.Join(testbed.DefaultRoot, "*", siteName(sites, i)))
			for _, d := range dirs {
				left = append(left, "directory "+d)
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

// storedRuns returns the ids of the runs stored in the results database
// db (none when the run never got as far as creating it).
func storedRuns(t *testing.T, db string) []string {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return nil
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatalf("open the test's results database: %v", err)
	}
	defer st.Close()
	runs, err := st.Runs(context.Background())
	if err != nil {
		t.Fatalf("list the test's runs: %v", err)
	}
	var ids []string
	for _, r := range runs {
		if !testbed.ValidID(r.ID) {
			t.Fatalf("stored run id %q is not a run id", r.ID)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// processesIn describes the processes living in namespace ns other than
// the sites' sshd (listener and per-connection processes) and zombies.
func processesIn(ns string) []string {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var left []string
	for _, pid := range strings.Fields(string(out)) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(stat)
		if end := strings.LastIndexByte(s, ')'); end < 0 || end+2 >= len(s) || s[end+2] == 'Z' || s[end+2] == 'X' {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		raw, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		cmdline := strings.TrimSpace(strings.Join(strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"), " "))
		// The hosts' own sshd, not ssh-tunnel's (its configuration is in
		// the run's directory).
		if strings.TrimSpace(string(comm)) == "sshd" && !strings.Contains(cmdline, "/ssh-tunnel-") {
			continue
		}
		kind := "process"
		if strings.Contains(cmdline, "tunbench") && strings.HasSuffix(cmdline, " agent") {
			kind = "agent"
		}
		left = append(left, fmt.Sprintf("%s %s (pid %s in %s)", kind, cmdline, pid, ns))
	}
	return left
}
