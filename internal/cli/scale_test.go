package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestTunnelsRefused: a tunnel count a method cannot set up, or one
// outside the dimension, is refused by the built binary with the exit
// status of bad input, naming the field, that the method sets up one
// tunnel only and why, and the fix, before anything is created: no
// database, and (run in this process, whose namespaces localns counts)
// no namespace.
func TestTunnelsRefused(t *testing.T) {
	bin := tunbenchBinary(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"native has one", []string{"--methods", "native", "--tunnels", "10"}, []string{
			"tunnels: [10]: native over ipv4 sets up one tunnel only (native is the underlay itself, with no tunnel to repeat",
			"add 1 to tunnels (it then runs at 1 only) or drop native"}},
		{"zero", []string{"--methods", "native", "--tunnels", "0"}, []string{"tunnels: 0 tunnels: use 1 to 100000"}},
		{"above the dimension", []string{"--methods", "native", "--tunnels", "200000"}, []string{"tunnels: 200000 tunnels: use 1 to 100000",
			"tunnels: [200000]: native over ipv4 sets up one tunnel only"}},
		{"reconf needs a grower", []string{"--methods", "native", "--tests", "reconf"}, []string{
			"tests: reconf adds one tunnel to a running set-up and native cannot (it is no method.Grower): drop reconf or drop native"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runRefused(t, bin, tc.args, tc.want...)
			refused(t, append([]string{"run"}, tc.args...), tc.want...)
		})
	}
}

// TestMethodsOptionsTunnels: "tunbench methods --options" says what one
// of a method's tunnels is, how many it sets up and why, as text and as
// JSON.
func TestMethodsOptionsTunnels(t *testing.T) {
	code, out, stderr := run(t, "methods", "--options", "openvpn")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"Tunnels between the endpoints (--tunnels", "ONE TUNNEL IS ONE", "client (TLS session to the server)", "openvpn runs one server daemon"} {
		if !strings.Contains(out, w) {
			t.Errorf("methods --options openvpn lacks %q:\n%s", w, out)
		}
	}
	code, out, stderr = run(t, "methods", "--options", "all", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc optionsJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Options) == 0 {
		t.Error("--json lists no options")
	}
	seen := map[string]bool{}
	for _, s := range doc.Tunnels {
		seen[s.Method] = true
		if s.Max < 1 || s.Unit == "" || s.Why == "" || len(s.Families) == 0 {
			t.Errorf("tunnels row %+v: want families, a unit, a maximum and why", s)
		}
		if s.Method == "native" && (s.Max != 1 || !strings.Contains(s.Why, "the underlay itself") || len(s.Families) != 2) {
			t.Errorf("native %+v: want one row for both families, at most 1, and why", s)
		}
	}
	for _, m := range []string{"native", "vxlan", "wireguard-go", "ipsec"} {
		if !seen[m] {
			t.Errorf("--json tunnels lack %s", m)
		}
	}
}

// TestDryRunEstimatesTunnels: the dry run's summary says what the
// tunnels dimension adds to the estimate, labelled estimated; a matrix
// of one tunnel says nothing of it.
func TestDryRunEstimatesTunnels(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"ipsec"}
	s.Tunnels = []int{1, 1000}
	s.Repetitions = 1
	var out strings.Builder
	if err := dryRun(&out, s, registry.Builtin(), nil); err != nil {
		t.Fatal(err)
	}
	if want := "plus an estimated 10s to set up and tear down the tunnels of the tunnels dimension (docs/scale.md)"; !strings.Contains(out.String(), want) {
		t.Errorf("dry run:\n%s\nlacks %q", out.String(), want)
	}
	s.Tunnels = nil
	out.Reset()
	if err := dryRun(&out, s, registry.Builtin(), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "tunnels dimension") {
		t.Errorf("dry run of one tunnel speaks of the dimension:\n%s", out.String())
	}
}

// TestScaleAndReconfEndToEnd: wireguard-go with ten peers and the reconf
// test on this host. The stored cell (read back from the database)
// carries the scale record, its teardown and the daemons' memory
// included, and the reconf record: the grown peer named, the request
// stream's arithmetic, the throughput and its lowest interval.
func TestScaleAndReconfEndToEnd(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	code, stdout, stderr := run(t, "run", "--db", db, "--export", filepath.Join(dir, "run.json"), "--quiet",
		"--methods", "wireguard-go", "--tunnels", "10", "--tests", "tcp_stream,reconf", "--duration", "3s", "--omit", "0s", "--latency", "0s", "--reps", "1")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, out, stderr := run(t, "results", "export", "latest", "--db", db)
	if code != 0 {
		t.Fatalf("results export: exit %d: %s", code, stderr)
	}
	var doc export.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cells) != 1 || doc.Cells[0].Status != result.StatusOK {
		t.Fatalf("cells %+v: want one ok cell", doc.Cells)
	}
	c := doc.Cells[0]
	if s := c.Scale; s == nil || s.Tunnels != 10 || s.Unit == "" || s.Setup <= 0 || s.Teardown <= 0 || s.Adds < 10 ||
		s.AddP50 <= 0 || s.AddP99 < s.AddP50 || s.SlabBefore <= 0 || s.SlabAfter <= 0 || !s.SharedKernel || s.DaemonRSS <= 0 {
		t.Errorf("stored scale record %+v: want 10 tunnels, set-up and teardown timed, the adds' percentiles, the shared kernel's slab, the daemons' memory", s)
	}
	r := c.Reconf
	if r == nil {
		t.Fatal("no reconf record stored")
	}
	if r.How == "" || r.Took <= 0 || r.Interval != 0.01 || r.Sent < 200 || r.Lost < 0 || r.Lost > r.Sent ||
		math.Abs(r.Blocked-float64(r.Lost)*r.Interval) > 1e-9 || r.Outage <= 0 || r.Error != "" {
		t.Errorf("reconf record %+v: want how and took, about 300 requests at 10 ms, blocked = lost x interval", r)
	}
	if r.BitsPerSecond <= 0 || r.MinIntervalBitsPerSecond <= 0 || r.MinIntervalBitsPerSecond > 2*r.BitsPerSecond {
		t.Errorf("reconf throughput %v bit/s, lowest interval %v: want both measured", r.BitsPerSecond, r.MinIntervalBitsPerSecond)
	}
	if !strings.Contains(r.How, "peer 10") {
		t.Errorf("reconf how %q: want the eleventh peer (index 10) named", r.How)
	}
	t.Logf("wireguard-go, 10 peers: set-up %.4f s, teardown %.4f s, add p50 %.3f ms; reconf: %s in %.4f s, %d of %d lost, outage %.1f ms, %.2f Gbit/s (lowest second %.2f)",
		c.Scale.Setup, c.Scale.Teardown, 1e3*c.Scale.AddP50, r.How, r.Took, r.Lost, r.Sent, 1e3*r.Outage, r.BitsPerSecond/1e9, r.MinIntervalBitsPerSecond/1e9)
}

// TestScaleKilledDuringSetupIsCleaned: a run SIGKILLed while it sets up
// 1,000 wireguard-go peers, then "tunbench clean": nothing of it is left
// (its wireguard-go daemons and every process in its namespaces, the
// namespaces with every device and peer in them, its run directory, any
// device of its prefix on the host). Serial: clean removes every killed
// run's state, which another run's start would clean first.
func TestScaleKilledDuringSetupIsCleaned(t *testing.T) {
	bin := tunbenchBinary(t)
	cmd := exec.Command(bin, "run", "--db", filepath.Join(t.TempDir(), "r.db"), "--quiet",
		"--methods", "wireguard-go", "--tunnels", "1000", "--duration", "30s", "--latency", "0s", "--reps", "1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The run's id is its lock's name; the set-up is under way once side
	// a's namespace holds the WireGuard device beside its underlay and
	// loopback: the peers are configured on it after.
	var id string
	var links int
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && links < 3 {
		if id == "" {
			id = runLockOf(cmd.Process.Pid)
		} else {
			links = linkCount(testbed.NamespaceName(id, "a"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if links < 3 {
		t.Fatalf("run %q never began to set its tunnels up", id)
	}
	var procs []string
	for _, side := range []string{"a", "b"} {
		procs = append(procs, nsPids(testbed.NamespaceName(id, side))...)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	t.Logf("killed run %s with the WireGuard device up and %d processes in its namespaces", id, len(procs))
	code, out, stderr := run(t, "clean")
	if code != 0 {
		t.Fatalf("clean: exit %d: %s", code, stderr)
	}
	for _, p := range procs {
		if alive(p) {
			comm, _ := os.ReadFile("/proc/" + p + "/comm")
			t.Errorf("process %s (%s) of the killed run is alive after clean returned", p, strings.TrimSpace(string(comm)))
		}
	}
	for _, side := range []string{"a", "b"} {
		ns := testbed.NamespaceName(id, side)
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s survived clean:\n%s", ns, out)
		}
	}
	if _, err := os.Stat(filepath.Join(testbed.DefaultRoot, id)); err == nil {
		t.Errorf("run directory %s survived clean", filepath.Join(testbed.DefaultRoot, id))
	}
	if host, err := exec.Command("ip", "-o", "link", "show").Output(); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(host), testbed.DevicePrefix(id)) {
		t.Errorf("devices of prefix %s left on the host after clean:\n%s", testbed.DevicePrefix(id), host)
	}
}

// runLockOf is the id of the run whose lock process pid holds open
// (/run/tunbench/locks/ID.lock), "" while it holds none.
func runLockOf(pid int) string {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		if dir, name := filepath.Split(target); dir == filepath.Join(testbed.DefaultRoot, "locks")+"/" && strings.HasSuffix(name, ".lock") {
			return strings.TrimSuffix(name, ".lock")
		}
	}
	return ""
}

// linkCount is the number of links in namespace ns (0 without it).
func linkCount(ns string) int {
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show").Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "\n")
}

// runRefused runs the built binary's "run --db DB args...", which must be
// refused as bad input (exit status 1) with every one of want on its
// standard error, and without creating the database.
func runRefused(t *testing.T, bin string, args []string, want ...string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "r.db")
	cmd := exec.Command(bin, append([]string{"run", "--db", db}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("tunbench run %v: %v, want exit status 1 (bad input)\n%s", args, err, stderr.String())
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr %q\ndoes not contain %q", stderr.String(), w)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused run created the database %s", db)
	}
}
