package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/store/benchdb"
	"github.com/tunbench/tunbench/internal/store/pgtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/tunbench/tunbench/internal/udpgen"
)

// TestMain lets this test binary stand in for tunbench when the runner
// starts "tunbench rr ..." (os.Executable) inside the testbed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "rr" {
		os.Exit(rr.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "udpgen" {
		os.Exit(udpgen.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	parallelByDefault()
	code := pgtest.Main(m) // stops the PostgreSQL server the store tests start
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	benchdb.Remove()
	os.Exit(code)
}

// parallelTests is how many of this package's tests run at once (those
// that call t.Parallel) unless -parallel says otherwise. They wait on
// iperf3's seconds, daemons, ssh sites, clusters and the kernel lab (one
// guest at a time per machine) far more than on the CPU, so more than
// the two the CPU count gives: run one after the other they took 18
// minutes of make test (docs/development.md). Not more: up to four
// Kubernetes clusters then run at once, and the two kernel lab tests,
// which hold their places while they wait for the machine's one guest,
// end after internal/method/registry's TestKernelLab whatever the number.
//
// Each such test keeps to its own run ids, namespaces, sites, cluster and
// databases. The tests that look at the whole machine stay serial, and go
// test runs every serial test before the parallel ones start:
// TestKilledRunIsCleaned (clean must report its killed run's namespace,
// which another run's start would clean first), TestDryRunCreatesNothing
// (counts /run/netns), TestDatabaseDiskFails (counts the namespaces this
// process created), TestNoSecretsInResults (reads every run whose lock
// this process holds, and snapshots /etc, /run and the home directory),
// TestMissingToolAndNotRoot (sets PATH), the eBPF stats tests,
// TestLatencyUnderLoadSSHTunnel (compares two methods' loaded/idle
// latency ratios, which the other tests' load would blur), and every test
// that leaves a killed run's state on the machine to look at it, or runs
// "tunbench clean" over every killed run (the chaos suites, the ssh crash
// and clean tests, TestResumeAfterSIGKILL, the Kubernetes clean tests,
// TestConcurrentRunsShareOneDatabase, TestScaleKilledDuringSetupIsCleaned): every run's start cleans killed
// runs' leftovers (runner.Session), so beside other runs such a test
// finds its killed run's state already gone, or half gone (in parallel
// they failed so in a clean-clone run). The Kubernetes tests that stay
// parallel run one cluster at a time (oneCluster).
const parallelTests = 4

// parallelByDefault sets -test.parallel to parallelTests when the command
// line does not set it.
func parallelByDefault() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// tunbenchBinary skips t without root or iperf3 (the runs the caller
// starts need both) and returns the tunbench binary, built once for the
// whole test process, for tests that run tunbench as a separate process
// (to kill it, or to run two at once).
func tunbenchBinary(t *testing.T) string {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	if bin := os.Getenv(envTestBinary); bin != "" {
		return bin // built by the host side of a lab test
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tunbench-cli-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tunbench")
		if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/tunbench").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build tunbench: %v", buildErr)
	}
	return binPath
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// runWith runs tunbench on the machine env describes (a fake of this
// one).
func runWith(t *testing.T, env bed.Env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runOn(context.Background(), env, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// hostEnv is this machine, as Run gives it to the commands.
func hostEnv() bed.Env { return bed.Host(Version(), BuildID) }

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := run(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, c := range []string{"run", "methods", "results", "report", "compare", "clean"} {
		if !strings.Contains(out, "  "+c+" ") {
			t.Errorf("--help does not list %q:\n%s", c, out)
		}
	}
}

// TestBadInput checks that bad input is refused with an error that names
// the field and the fix, before anything is created.
func TestBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown method", []string{"--methods", "native,vxlna"}, []string{`unknown method "vxlna"`, "native", "srv6", "vxlan"}},
		{"malformed duration", []string{"--duration", "ten"}, []string{`duration: malformed duration "ten"`, "10s"}},
		{"malformed count", []string{"--reps", "three"}, []string{`invalid argument "three" for "--reps"`}},
		{"zero repetitions", []string{"--reps", "-1"}, []string{"repetitions: -1: use 1 to 1000"}},
		{"mtu too small", []string{"--methods", "vxlan", "--family", "ipv6", "--mtu", "1320"}, []string{"underlay MTU 1320 is too small for vxlan over ipv6", "at least 1350"}},
		{"bad option", []string{"--option", "vxlan-vni"}, []string{"METHOD.KEY=VALUE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"run", "--db", db}, tt.args...)...)
			if code == 0 {
				t.Fatal("bad input accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q\ndoes not contain %q", stderr, w)
				}
			}
		})
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused run created the database %s", db)
	}
}

func TestMissingToolAndNotRoot(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	env := hostEnv()
	env.Root = func() bool { return false }
	db := filepath.Join(t.TempDir(), "r.db")
	code, _, stderr := runWith(t, env, "run", "--db", db, "--latency-tool", "sockperf")
	if code == 0 {
		t.Fatal("run without iperf3 and without root accepted")
	}
	for _, w := range []string{
		"not running as root",
		"iperf3 missing (fix: apt-get install -y --no-install-recommends iperf3)",
		"sockperf missing (fix: apt-get install -y --no-install-recommends sockperf)",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q\ndoes not contain %q", stderr, w)
		}
	}
}

func TestMethodsCommand(t *testing.T) {
	code, out, stderr := run(t, "methods", "--json")
	if code != 0 {
		t.Fatalf("methods: exit %d: %s", code, stderr)
	}
	var st []methodStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	byName := map[string]methodStatus{}
	for _, s := range st {
		byName[s.Name] = s
	}
	vx, ok := byName["vxlan"]
	if !ok || vx.OverheadIPv4 == nil || *vx.OverheadIPv4 != 50 || *vx.OverheadIPv6 != 70 {
		t.Errorf("vxlan status %+v: want overhead 50/70", vx)
	}
	if n, ok := byName["native"]; !ok || !n.Ready {
		t.Errorf("native not ready: %+v", n)
	}
}

// TestRunExportsJSON runs a short real benchmark and checks the export.
func TestRunExportsJSON(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	for _, tool := range []string{"iperf3", "sockperf"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipMissing(t, "%s not installed: apt-get install -y --no-install-recommends %s", tool, tool)
		}
	}
	dir := t.TempDir()
	db, exportPath := filepath.Join(dir, "r.db"), filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, "run", "--db", db, "--export", exportPath, "--quiet",
		"--methods", "native,vxlan", "--duration", "1s", "--omit", "0s", "--latency", "1s", "--reps", "2")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "vxlan") || !strings.Contains(stdout, "% native") {
		t.Errorf("table lacks vxlan or %% native:\n%s", stdout)
	}
	data, err := os.ReadFile(exportPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc export.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != result.SchemaVersion || doc.Run.Status != result.RunDone || len(doc.Cells) != 4 {
		t.Fatalf("export: schema %q, status %q, %d cells; want %q, done, 4", doc.Schema, doc.Run.Status, len(doc.Cells), result.SchemaVersion)
	}
	for _, c := range doc.Cells {
		if c.Status != result.StatusOK {
			t.Errorf("%s rep %d: %s: %s", c.Method, c.Repetition, c.Status, c.Error)
			continue
		}
		if c.Throughput == nil || c.Throughput.BitsPerSecond <= 0 || len(c.Throughput.Intervals) == 0 {
			t.Errorf("%s: no throughput: %+v", c.Method, c.Throughput)
		}
		if c.Latency == nil || c.Latency.P50 <= 0 || len(c.Latency.CDF) == 0 {
			t.Errorf("%s: no latency distribution", c.Method)
		}
		if c.CPU == nil || c.CPU.Cores == 0 || len(c.CPU.Processes) == 0 {
			t.Errorf("%s: no CPU record", c.Method)
		}
		if c.Meta.Kernel == "" || len(c.Meta.Devices) < 2 {
			t.Errorf("%s: metadata lacks kernel or devices: %+v", c.Method, c.Meta)
		}
		for _, d := range c.Meta.Devices {
			if d.MTU == 0 || len(d.Offloads) == 0 {
				t.Errorf("%s: device %s lacks MTU or offload state", c.Method, d.Name)
			}
			if c.Method == "vxlan" && d.Kind == "vxlan" && d.MTU != 1450 {
				t.Errorf("vxlan device MTU %d, want 1450", d.MTU)
			}
		}
	}
	// The stored run exports the same way, offline.
	code, csv, stderr := run(t, "results", "export", "--db", db, "--format", "csv-wide", doc.Run.ID)
	if code != 0 || strings.Count(csv, "\n") != 5 {
		t.Errorf("results export csv-wide: exit %d, %d lines (want header + 4)\n%s%s", code, strings.Count(csv, "\n"), csv, stderr)
	}
	code, csv, stderr = run(t, "results", "export", "--db", db, "--format", "csv", doc.Run.ID)
	if code != 0 || strings.Count(csv, ",throughput,") != 4 || !strings.Contains(csv, ",p99_rtt,") {
		t.Errorf("results export csv (tidy): exit %d, want a throughput row per repetition\n%s%s", code, csv, stderr)
	}
}

// TestKilledRunIsCleaned kills a real run with SIGKILL mid-measurement
// and checks that "tunbench clean" removes what it left and returns only
// once no process of the run is alive (zombies aside): a kernel tunnel
// (vxlan) and one with userspace daemons (ovs-vxlan: ovsdb-server and
// ovs-vswitchd on each side).
func TestKilledRunIsCleaned(t *testing.T) {
	bin := tunbenchBinary(t)
	for _, m := range []string{"vxlan", "ovs-vxlan"} {
		t.Run(m, func(t *testing.T) {
			if m == "ovs-vxlan" {
				testenv.NeedProgram(t, "ovs-vswitchd", "apt-get install -y --no-install-recommends openvswitch-switch")
			}
			killAndClean(t, bin, m)
		})
	}
}

func killAndClean(t *testing.T, bin, m string) {
	cmd := exec.Command(bin, "run", "--db", filepath.Join(t.TempDir(), "r.db"), "--quiet",
		"--methods", m, "--duration", "30s", "--latency", "0s", "--reps", "1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var ns string
	deadline := time.Now().Add(60 * time.Second)
	for ns == "" && time.Now().Before(deadline) {
		ns = iperf3Namespace(cmd.Process.Pid)
		time.Sleep(100 * time.Millisecond)
	}
	if ns == "" {
		t.Fatal("the run never started iperf3 in a tunbench namespace")
	}
	id, _, _ := testbed.ParseNamespace(ns)
	var procs []string
	for _, side := range []string{"a", "b"} {
		procs = append(procs, nsPids(testbed.NamespaceName(id, side))...)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	code, out, stderr := run(t, "clean")
	if code != 0 {
		t.Fatalf("clean: exit %d: %s", code, stderr)
	}
	// Checked at once: clean must not return while any is alive.
	for _, p := range procs {
		if alive(p) {
			comm, _ := os.ReadFile("/proc/" + p + "/comm")
			t.Errorf("process %s (%s) of the killed run is alive after clean returned", p, strings.TrimSpace(string(comm)))
		}
	}
	if m == "ovs-vxlan" && !strings.Contains(out, "ovs-vswitchd") {
		t.Errorf("clean output does not report the killed ovs-vswitchd:\n%s", out)
	}
	if !strings.Contains(out, "namespace "+ns) {
		t.Errorf("clean output does not report %s:\n%s", ns, out)
	}
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("namespace %s survived clean", ns)
	}
}

// nsPids lists the pids in namespace ns, with their start times
// ("pid/starttime"), so that a reused pid is not taken for a survivor.
func nsPids(ns string) []string {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var ps []string
	for _, pid := range strings.Fields(string(out)) {
		if st := procStartTime(pid); st != "" {
			ps = append(ps, pid+"/"+st)
		}
	}
	return ps
}

// alive reports whether "pid/starttime" still runs, zombies aside.
func alive(p string) bool {
	pid, start, _ := strings.Cut(p, "/")
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 19 && f[0] != "Z" && f[0] != "X" && f[19] == start
}

func procStartTime(pid string) string {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// hasIperf3 reports whether an iperf3 process lives in namespace ns.
func hasIperf3(ns string) bool { return iperf3Child(ns, 0) }

// iperf3Child reports whether an iperf3 process lives in namespace ns and,
// when parent is not 0, is parent's child.
func iperf3Child(ns string, parent int) bool {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return false
	}
	for _, pid := range strings.Fields(string(out)) {
		data, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		comm := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if comm == "iperf3" && (parent == 0 || (len(f) > 1 && f[1] == strconv.Itoa(parent))) {
			return true
		}
	}
	return false
}

// iperf3Namespace returns the tunbench namespace in which the run with
// process id pid runs iperf3, or "" (other runs, such as a concurrent
// test's, may have namespaces too).
func iperf3Namespace(pid int) string {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if _, _, ok := testbed.ParseNamespace(e.Name()); ok && iperf3Child(e.Name(), pid) {
			return e.Name()
		}
	}
	return ""
}

// TestInterruptedRunKeepsResults sends SIGINT to a real run during its
// second cell: the run must tear everything down, mark itself
// interrupted, and keep the cell it had already measured.
func TestInterruptedRunKeepsResults(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	db := filepath.Join(t.TempDir(), "r.db")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--db", db, "--methods", "native,vxlan", "--duration", "3s",
		"--omit", "0s", "--latency", "0s", "--reps", "1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Wait until the second cell (vxlan) runs iperf3.
	var ns string
	deadline := time.Now().Add(30 * time.Second)
	for ns == "" && time.Now().Before(deadline) {
		if n := iperf3Namespace(cmd.Process.Pid); n != "" && strings.Contains(stderr.String(), "[1/2") {
			ns = n
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ns == "" {
		t.Fatalf("the run never reached its second cell:\n%s", stderr.String())
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if err == nil {
		t.Error("an interrupted run exited 0")
	}
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("namespace %s left behind after SIGINT", ns)
	}
	if hasIperf3(ns) {
		t.Errorf("iperf3 left running after SIGINT")
	}
	code, out, errOut := run(t, "results", "--db", db)
	if code != 0 || !strings.Contains(out, "interrupted") {
		t.Errorf("stored run not marked interrupted: %s%s", out, errOut)
	}
	code, csv, _ := run(t, "results", "export", "--db", db, "--format", "csv")
	if code != 0 || !strings.Contains(csv, "native") {
		t.Errorf("the cell measured before SIGINT was not kept:\n%s", csv)
	}
}

// TestOffloadsOff runs vxlan with TSO/GSO/GRO off and checks the recorded
// device state.
func TestOffloadsOff(t *testing.T) {
	t.Parallel()
	doc, _ := runExport(t,
		"--methods", "vxlan", "--offloads", "off", "--duration", "1s", "--omit", "0s", "--latency", "0s", "--reps", "1")
	if len(doc.Cells) != 1 || doc.Cells[0].Status != result.StatusOK {
		t.Fatalf("want one ok cell, got %+v", doc.Cells)
	}
	seen := 0
	for _, d := range doc.Cells[0].Meta.Devices {
		if d.Kind != "veth" && d.Kind != "vxlan" {
			continue
		}
		seen++
		for _, f := range []string{"tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload"} {
			on, ok := d.Offloads[f]
			if !ok || on {
				t.Errorf("%s %s: %s = %v (present %v), want off", d.Side, d.Name, f, on, ok)
			}
		}
	}
	if seen != 4 {
		t.Errorf("recorded %d veth/vxlan devices, want 4", seen)
	}
}

// keyShaped matches a base64 32-byte key (WireGuard keys, the IPsec PSK)
// and PEM private keys.
var keyShaped = regexp.MustCompile(`[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=|PRIVATE KEY`)

// TestNoSecretsInResults runs every method that generates keys here and
// collects, while the run lives, each private key, pre-shared key,
// certificate key and tls-crypt key it wrote into its run directory. Each
// key file must be 0600 and gone after the run; none of the secrets may
// appear in the JSON or CSV export, the HTML report or its figure files,
// the database, or the run's output;
// and the run writes nothing to /etc, to /run outside its own directory,
// or to the home directory.
func TestNoSecretsInResults(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	var methods []string
	for _, m := range []string{"wireguard-go", "boringtun", "ipsec", "ipsec-ecmp", "openvpn", "nebula", "ssh-tunnel", "tailscale"} {
		if ready(t, m) {
			methods = append(methods, m)
		}
	}
	if len(methods) == 0 {
		t.Skip("none of wireguard-go, boringtun, ipsec, ipsec-ecmp, openvpn, nebula, ssh-tunnel, tailscale is ready here (see tunbench methods)")
	}
	home, _ := os.UserHomeDir()
	before := snapshot(t, home)
	dir := t.TempDir()
	db, exportPath := filepath.Join(dir, "r.db"), filepath.Join(dir, "run.json")

	// Collect secrets from the directory of this process's run (its lock
	// file is open here), not from other runs on the machine.
	secrets := map[string]string{} // secret -> file it came from
	keyFiles := map[string]bool{}
	done := make(chan struct{})
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, id := range ownRuns() {
				collectSecrets(t, filepath.Join(testbed.DefaultRoot, id), secrets, keyFiles)
			}
		}
	}()
	code, stdout, stderr := run(t, "run", "--db", db, "--export", exportPath, "--methods", strings.Join(methods, ","),
		"--duration", "1s", "--omit", "0s", "--latency", "0s", "--reps", "1")
	close(done)
	<-collected
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if len(secrets) == 0 {
		t.Fatal("collected no secrets from the run directory: the collector no longer finds the key files")
	}
	t.Logf("collected %d secrets from %d key files", len(secrets), len(keyFiles))
	for f := range keyFiles {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("key file %s remains after the run", f)
		}
	}
	code, csv, errOut := run(t, "results", "export", "--db", db, "--format", "csv")
	if code != 0 {
		t.Fatalf("export csv: %s", errOut)
	}
	places := map[string]string{"output": stdout + stderr, "csv export": csv}
	// The HTML report and every figure file beside it.
	html := filepath.Join(dir, "report.html")
	if code, _, errOut := run(t, "report", "--db", db, "-o", html); code != 0 {
		t.Fatalf("report: %s", errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "report-files", "*"))
	if len(files) == 0 {
		t.Fatal("the report wrote no figure files")
	}
	for _, f := range append(files, html) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		places["report file "+filepath.Base(f)] = string(data)
	}
	for name, path := range map[string]string{"export": exportPath, "database": db, "database wal": db + "-wal"} {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		places[name] = string(data)
	}
	for name, text := range places {
		for secret, from := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("the secret of %s is in the %s", from, name)
			}
		}
		if keyShaped.MatchString(text) {
			t.Errorf("key-shaped text in the %s: %q", name, keyShaped.FindString(text))
		}
	}
	var doc export.Document
	data, _ := os.ReadFile(exportPath)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cells {
		if c.Status != result.StatusOK {
			t.Errorf("%s: %s", c.Method, c.Error)
		}
	}
	after := snapshot(t, home)
	for p, st := range after {
		if was, ok := before[p]; !ok || was != st {
			t.Errorf("the run wrote %s outside its run directory", p)
		}
	}
}

// ownRuns returns the ids of the runs this process holds the lock of.
func ownRuns() []string {
	fds, _ := os.ReadDir("/proc/self/fd")
	var ids []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || filepath.Dir(target) != testbed.LockDir {
			continue
		}
		if id, ok := strings.CutSuffix(filepath.Base(target), ".lock"); ok && testbed.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

var (
	pemPrivate = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----\n(.*?)-----END`)
	staticKey  = regexp.MustCompile(`(?s)-----BEGIN OpenVPN Static key V1-----\n(.*?)-----END`)
	pskLine    = regexp.MustCompile(`(?m)^\s*secret = (\S+)`)
	tsPrivKey  = regexp.MustCompile(`(?:privkey|nlpriv):([0-9a-f]{64})`)
)

// collectSecrets reads the key material of every file under dir into
// secrets (secret -> file) and checks that each file holding some is 0600.
func collectSecrets(t *testing.T, dir string, secrets map[string]string, keyFiles map[string]bool) {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var found []string
		text := string(data)
		switch base := filepath.Base(path); {
		case base == "private.key" || base == "preshared.key":
			found = append(found, strings.TrimSpace(text))
		case base == "authkey": // tailscale's per-run auth key
			found = append(found, strings.TrimSpace(text))
		case base == "tailscaled.log.conf": // logtail's private id (uploads are off)
			var conf struct{ PrivateID string }
			_ = json.Unmarshal(data, &conf)
			found = append(found, conf.PrivateID)
		case base == "tailscaled.state": // JSON of base64 values, machine and node keys among them
			var st map[string]string
			_ = json.Unmarshal(data, &st)
			for _, v := range st {
				dec, _ := base64.StdEncoding.DecodeString(v)
				for _, m := range tsPrivKey.FindAllSubmatch(dec, -1) {
					found = append(found, string(m[1]))
				}
			}
		default:
			for _, m := range pskLine.FindAllStringSubmatch(text, -1) {
				found = append(found, m[1])
			}
			for _, re := range []*regexp.Regexp{pemPrivate, staticKey} {
				for _, m := range re.FindAllStringSubmatch(text, -1) {
					for _, line := range strings.Fields(m[1]) {
						if len(line) >= 16 && !strings.HasPrefix(line, "#") {
							found = append(found, line)
						}
					}
				}
			}
		}
		if len(found) == 0 {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if !keyFiles[path] {
			keyFiles[path] = true
			if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("key file %s has mode %v, want 0600", rel, fi.Mode().Perm())
			}
		}
		for _, s := range found {
			if s != "" {
				secrets[s] = rel
			}
		}
		return nil
	})
}

// snapshot records size and modification time of the files a run must
// not touch: /etc, /run outside tunbench's directories, and the home
// directory outside the build caches the test itself uses.
func snapshot(t *testing.T, home string) map[string]string {
	t.Helper()
	skip := map[string]bool{"/run/netns": true, testbed.DefaultRoot: true}
	for _, d := range []string{".cache", "go", ".config/go", ".cargo", ".rustup", ".npm", ".pyenv", ".claude"} {
		skip[filepath.Join(home, d)] = true
	}
	out := map[string]string{}
	for _, root := range []string{"/etc", "/run", home} {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && skip[path] {
				return filepath.SkipDir
			}
			if fi, err := d.Info(); err == nil && !d.IsDir() {
				out[path] = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
			}
			return nil
		})
	}
	return out
}

// ready reports whether method name can run here. A method that cannot
// is not left out without a word: a subtest "not-ready/NAME" skips with
// the reason, so the skip list of make test shows it. When a program is
// what is missing, the skip is testenv.SkipMissing's (a failure in strict
// mode: scripts/install.sh test installs every method's programs); a
// missing kernel feature stays a plain skip.
func ready(t *testing.T, name string) bool {
	t.Helper()
	for _, s := range methodStatuses(registry.Builtin(), bed.NewHostProbe()) {
		if s.Name != name {
			continue
		}
		if !s.Ready {
			m, err := registry.Builtin().Get(name)
			if err != nil {
				t.Fatal(err)
			}
			programs := slices.DeleteFunc(slices.Clone(m.Requirements()), func(r method.Requirement) bool { return r.Program == "" })
			programErr := method.Check(bed.NewHostProbe(), programs)
			t.Run("not-ready/"+name, func(t *testing.T) {
				if programErr != nil {
					testenv.SkipMissing(t, "%s is left out, not ready here: %s", name, s.Reason)
				}
				t.Skipf("%s is left out, not ready here: %s", name, s.Reason)
			})
		}
		return s.Ready
	}
	return false
}
