package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

var chaosKills = flag.Int("chaos.kills", 10, "SIGKILLs of the chaos test (make chaos runs 100)")

// chaosMethods are the methods the chaos test draws from: a kernel tunnel
// and every userspace daemon method, and the eBPF methods.
var chaosMethods = []string{"vxlan", "wireguard-go", "boringtun", "ipsec", "ipsec-ecmp", "ovs-vxlan", "openvpn", "ebpf-vxlan", "ebpf-geneve"}

// TestChaos kills real runs with SIGKILL at random moments (during setup,
// load, teardown or between cells) and after each kill checks that
// "tunbench clean" leaves nothing of the run, that every cell committed
// before the kill is intact, and that --resume completes the run with
// every cell exactly once. Each round runs vxlan plus two other methods
// drawn at random, one repetition of one second each.
func TestChaos(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	var pool []string
	for _, m := range chaosMethods[1:] {
		if slices.Contains(methodNames(), m) && ready(t, m) {
			pool = append(pool, m)
		}
	}
	bin := tunbenchBinary(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("chaos: seed %d, methods vxlan and two of %v per round", seed, pool)
	phases := map[string]int{}
	var leftovers, lost, finishedFirst int
	for kills := 0; kills < *chaosKills; {
		methods := []string{"vxlan"}
		for _, i := range rng.Perm(len(pool))[:min(2, len(pool))] {
			methods = append(methods, pool[i])
		}
		delay := time.Duration(100+rng.IntN(5900)) * time.Millisecond
		r := chaosRound(t, bin, methods, delay)
		if r.finished {
			finishedFirst++
			continue
		}
		kills++
		phases[r.phase]++
		leftovers += len(r.leftovers)
		lost += r.lost
		for _, l := range r.leftovers {
			t.Errorf("kill %d (%v, %s after %s): left behind: %s", kills, methods, r.phase, delay, l)
		}
		if t.Failed() && kills >= 3 {
			break
		}
	}
	t.Logf("chaos: %d kills (phases %v; %d runs finished before their kill and were not counted), leftovers %d, cells lost %d",
		*chaosKills, phases, finishedFirst, leftovers, lost)
}

// methodNames lists the registered methods.
func methodNames() []string {
	var names []string
	for _, s := range methodStatuses(registry.Builtin(), bed.NewHostProbe()) {
		names = append(names, s.Name)
	}
	return names
}

type chaosResult struct {
	finished  bool
	phase     string
	leftovers []string
	lost      int
}

// chaosRound starts a run, kills it after delay, cleans, checks, resumes
// and checks again.
func chaosRound(t *testing.T, bin string, methods []string, delay time.Duration) (res chaosResult) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "r.db")
	before := rootState()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--db", db, "--methods", strings.Join(methods, ","), "--duration", "1s",
		"--omit", "0s", "--latency", "0s", "--reps", "1", "--export", filepath.Join(t.TempDir(), "x.json"))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Watch the run: its namespaces, every process in them, and whether
	// the load ran in the current testbed.
	var mu sync.Mutex
	pids := map[string]bool{} // "pid/starttime"
	phase, loaded := "startup", false
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			ns := runNamespaces(cmd.Process.Pid)
			mu.Lock()
			switch {
			case len(ns) == 0 && phase != "startup":
				phase, loaded = "between cells (commit)", false
			case len(ns) > 0:
				load := false
				for _, n := range ns {
					for _, p := range nsPids(n) {
						pids[p] = true
					}
					load = load || iperf3Child(n, cmd.Process.Pid)
				}
				switch {
				case load:
					phase, loaded = "load", true
				case loaded:
					phase = "teardown"
				default:
					phase = "setup"
				}
			}
			mu.Unlock()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		close(stop)
		<-watched
		return chaosResult{finished: true}
	case <-time.After(delay):
	}
	mu.Lock()
	res.phase = phase
	mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	close(stop)
	<-watched
	id := runIDOf(t, db)

	if code, out, errOut := run(t, "clean"); code != 0 {
		res.leftovers = append(res.leftovers, fmt.Sprintf("clean failed: %s%s", out, errOut))
	}
	for p := range pids {
		if alive(p) {
			pid, _, _ := strings.Cut(p, "/")
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			res.leftovers = append(res.leftovers, fmt.Sprintf("process %s (%s)", pid, strings.TrimSpace(string(comm))))
		}
	}
	res.leftovers = append(res.leftovers, runLeftovers(id)...)
	if diff := diffState(before, rootState()); diff != "" {
		res.leftovers = append(res.leftovers, "root namespace state changed: "+diff)
	}
	if id == "" {
		return res // killed before the run was recorded: nothing to resume
	}

	// Every committed cell is intact; resume completes the run.
	committed := exportCells(t, db, id)
	// A cell may fail on its own (a busy machine); resume then ends with
	// ExitCellsFailed, which the export below shows.
	code, out, errOut := run(t, "run", "--db", db, "--resume", id, "--quiet")
	if code != 0 && code != ExitCellsFailed {
		t.Errorf("resume %s: exit %d\n%s%s", id, code, out, errOut)
		return res
	}
	final := exportCells(t, db, id)
	want := len(methods)
	keys := map[string]int{}
	for _, c := range final.Cells {
		keys[fmt.Sprintf("%s#%d", c.Key, c.Repetition)]++
	}
	if final.Run.Status != result.RunDone || len(keys) != want || len(final.Cells) != want {
		t.Errorf("run %s after resume: status %s, %d cells (%d distinct); want done and %d", id, final.Run.Status, len(final.Cells), len(keys), want)
	}
	for _, c := range committed.Cells {
		found := false
		for _, f := range final.Cells {
			if f.Key == c.Key && f.Repetition == c.Repetition {
				a, _ := json.Marshal(c)
				b, _ := json.Marshal(f)
				found = bytes.Equal(a, b)
			}
		}
		if !found {
			res.lost++
			t.Errorf("run %s: cell %s committed before the kill is changed or gone after resume", id, c.Key)
		}
	}
	return res
}

// runNamespaces returns the namespaces of the run whose process is pid:
// those holding its children.
func runNamespaces(pid int) []string {
	entries, _ := os.ReadDir("/run/netns")
	var ns []string
	for _, e := range entries {
		if _, _, ok := testbed.ParseNamespace(e.Name()); !ok {
			continue
		}
		for _, p := range nsPids(e.Name()) {
			p, _, _ = strings.Cut(p, "/")
			if parentOf(p) == pid {
				ns = append(ns, e.Name())
				break
			}
		}
	}
	return ns
}

func parentOf(pid string) int {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	var ppid int
	fmt.Sscan(f[1], &ppid)
	return ppid
}

// runIDOf returns the id of the run recorded in db, or "" when the kill
// came before the run was recorded.
func runIDOf(t *testing.T, db string) string {
	if _, err := os.Stat(db); err != nil {
		return ""
	}
	code, out, _ := run(t, "results", "export", "--db", db, "--format", "json", "latest")
	if code != 0 {
		return ""
	}
	var doc export.Document
	if json.Unmarshal([]byte(out), &doc) != nil {
		return ""
	}
	return doc.Run.ID
}

func exportCells(t *testing.T, db, id string) export.Document {
	t.Helper()
	code, out, errOut := run(t, "results", "export", "--db", db, "--format", "json", id)
	if code != 0 {
		t.Fatalf("export %s: %s", id, errOut)
	}
	var doc export.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("export %s: %v", id, err)
	}
	for _, c := range doc.Cells {
		if c.Status != result.StatusOK && c.Status != result.StatusFailed {
			t.Errorf("run %s: cell %s has status %q", id, c.Key, c.Status)
		}
	}
	return doc
}

// runLeftovers lists what of run id remains outside its namespaces: the
// namespaces themselves, the run directory, WireGuard sockets, BPF pins.
func runLeftovers(id string) []string {
	if id == "" {
		return nil
	}
	var left []string
	for _, side := range []string{"a", "b"} {
		if _, err := os.Stat("/run/netns/" + testbed.NamespaceName(id, side)); err == nil {
			left = append(left, "namespace "+testbed.NamespaceName(id, side))
		}
	}
	if _, err := os.Stat(filepath.Join(testbed.DefaultRoot, id)); err == nil {
		left = append(left, "run directory "+filepath.Join(testbed.DefaultRoot, id))
	}
	prefix := testbed.DevicePrefix(id)
	for _, dir := range []string{"/var/run/wireguard", "/sys/fs/bpf"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), prefix) || strings.Contains(e.Name(), id) {
				left = append(left, filepath.Join(dir, e.Name()))
			}
		}
	}
	return left
}

// rootState is what a run must not change in the root namespace: links,
// routes, rules, xfrm state and policy, and the system daemons' state
// directories.
func rootState() map[string]string {
	st := map[string]string{}
	for name, argv := range map[string][]string{
		"links":  {"ip", "-o", "link", "show"},
		"routes": {"ip", "route", "show", "table", "all"},
		"rules":  {"ip", "rule", "show"},
		"xfrm":   {"ip", "xfrm", "state"},
		"policy": {"ip", "xfrm", "policy"},
	} {
		out, _ := exec.Command(argv[0], argv[1:]...).Output()
		// Counters and link state change on their own; keep names.
		lines := strings.Split(string(out), "\n")
		for i, l := range lines {
			if name == "links" {
				if f := strings.Fields(l); len(f) > 1 {
					lines[i] = f[1]
				}
			}
		}
		slices.Sort(lines)
		st[name] = strings.Join(lines, "\n")
	}
	for _, dir := range []string{"/var/run/openvswitch", "/etc/openvswitch", "/run/strongswan", "/var/run/wireguard"} {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		st[dir] = strings.Join(names, " ")
	}
	for _, f := range []string{"/run/charon.pid", "/run/charon.vici"} {
		if _, err := os.Stat(f); err == nil {
			st[f] = "present"
		}
	}
	return st
}

func diffState(a, b map[string]string) string {
	var d []string
	for k, v := range b {
		if a[k] != v {
			d = append(d, fmt.Sprintf("%s: %q -> %q", k, a[k], v))
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			d = append(d, k+" gone")
		}
	}
	slices.Sort(d)
	return strings.Join(d, "; ")
}
