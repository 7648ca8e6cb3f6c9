package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/tunbench/tunbench/internal/bed"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// Every shipped example validates, and its header comment names the seed
// figures it reproduces.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v, %d files", err, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Parse(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := s.Validate(testbeds.Catalog(registry.Builtin())); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		head := string(data[:min(len(data), 400)])
		if !strings.HasPrefix(head, "# Seed ") || !strings.Contains(head, "Fig") && !strings.Contains(head, "MSS") {
			t.Errorf("%s: header comment does not name the seed and its figures:\n%s", f, head)
		}
	}
}

// --dry-run prints the matrix, its size and the estimate, and creates
// nothing: no database, no namespace.
func TestDryRunCreatesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	before, _ := os.ReadDir("/run/netns")
	code, out, stderr := run(t, "run", "--dry-run", "--db", db, "-f", "../../examples/paper-parallel.yaml", "--scale", "0.1")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 81 || !strings.HasPrefix(lines[0], "1 native family=ipv4") {
		t.Errorf("dry run printed %d lines, want 80 cells and a summary:\n%s", len(lines), out)
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "80 cells x 3 repetitions = 240 steps") || !strings.Contains(last, "estimated duration") {
		t.Errorf("summary line %q", last)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("dry run created the database")
	}
	after, _ := os.ReadDir("/run/netns")
	if len(after) > len(before) {
		t.Errorf("dry run created namespaces: %v -> %v", before, after)
	}
}

// runExport runs tunbench in this process with args into a fresh
// database and export, skipping without root or iperf3, fails t on a
// non-zero exit, and returns the export and the table.
func runExport(t *testing.T, args ...string) (export.Document, string) {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	dir := t.TempDir()
	export := filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, append([]string{"run", "--db", filepath.Join(dir, "r.db"), "--export", export, "--quiet"}, args...)...)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	return exportOf(t, export), stdout
}

func exportOf(t *testing.T, path string) export.Document {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc export.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// A reduced paper-parallel.yaml: 1, 4, 130 and 256 streams for 3 s on
// native and vxlan. Each cell stores every iperf3 process and their sum.
func TestParallelPaperReduced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	export := filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, "run", "-f", "../../examples/paper-parallel.yaml", "--db", filepath.Join(dir, "r.db"),
		"--export", export, "--quiet", "--methods", "native,vxlan", "--streams", "1,4,130,256",
		"--duration", "3s", "--omit", "0s", "--reps", "1")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "parallel: streams spread over iperf3 processes") {
		t.Errorf("table lacks the parallel section:\n%s", stdout)
	}
	doc := exportOf(t, export)
	if len(doc.Cells) != 8 {
		t.Fatalf("%d cells, want 8", len(doc.Cells))
	}
	for _, c := range doc.Cells {
		name := fmt.Sprintf("%s %d streams", c.Method, c.Params.Streams)
		if c.Status != result.StatusOK || c.Parallel == nil {
			t.Errorf("%s: %s: %s", name, c.Status, c.Error)
			continue
		}
		want := load.SplitStreams(c.Params.Streams, 128)
		if len(c.Parallel.Processes) != len(want) {
			t.Errorf("%s: %d processes, want %d", name, len(c.Parallel.Processes), len(want))
			continue
		}
		var sum float64
		for i, p := range c.Parallel.Processes {
			if p.Streams != want[i] || p.BitsPerSecond <= 0 || p.Error != "" {
				t.Errorf("%s: process %d: %+v, want %d streams and a rate", name, i, p, want[i])
			}
			sum += p.BitsPerSecond
		}
		if d := c.Parallel.BitsPerSecond - sum; d > 1 || d < -1 {
			t.Errorf("%s: sum %v, processes add to %v", name, c.Parallel.BitsPerSecond, sum)
		}
		if c.Parallel.CPU == nil || c.Derived == nil || c.Derived.CeilingFraction <= 0 {
			t.Errorf("%s: no CPU or derived figures", name)
		}
	}
}

// latency_under_load on native: idle and loaded distributions side by
// side, and their ratio.
func TestLatencyUnderLoadNative(t *testing.T) {
	t.Parallel()
	doc, stdout := runExport(t,
		"--methods", "native", "--tests", "tcp_rr,latency_under_load", "--streams", "2",
		"--duration", "1s", "--omit", "1s", "--latency", "2s", "--reps", "1")
	if len(doc.Cells) != 1 {
		t.Fatalf("%d cells", len(doc.Cells))
	}
	c := doc.Cells[0]
	l := c.LatencyUnderLoad
	if c.Status != result.StatusOK || l == nil || l.Idle == nil || l.Loaded == nil {
		t.Fatalf("cell %s: %s; record %+v", c.Status, c.Error, l)
	}
	if l.Idle != nil && c.Latency != nil && l.Idle.P50 != c.Latency.P50 {
		t.Errorf("idle distribution is not the cell's tcp_rr: %v vs %v", l.Idle.P50, c.Latency.P50)
	}
	if l.Loaded.Samples == 0 || len(l.Loaded.CDF) == 0 || l.LoadBitsPerSecond <= 0 {
		t.Errorf("loaded: %d samples, %d CDF points, load %v bit/s", l.Loaded.Samples, len(l.Loaded.CDF), l.LoadBitsPerSecond)
	}
	if want := l.Loaded.P99 / l.Idle.P99; l.P99Ratio != want {
		t.Errorf("p99 ratio %v, want %v", l.P99Ratio, want)
	}
	if !strings.Contains(stdout, "latency under load") {
		t.Errorf("table lacks the latency-under-load section:\n%s", stdout)
	}
}

// latency_under_load on ssh-tunnel beside native: TCP over TCP. The
// request/response packets queue behind the load in the one outer TCP
// connection (ssh's send buffer and channel window), so the loaded
// median grows far beyond the idle one, and far more than native's does
// (docs/methods.md, "SSH tunnel"). The median, not p99: on a busy machine
// one stall can put the idle p99 of a userspace tunnel at 100 ms (it did
// in a clean-clone run), while its loaded median still reads x200.
func TestLatencyUnderLoadSSHTunnel(t *testing.T) {
	if !ready(t, "ssh-tunnel") {
		return
	}
	doc, stdout := runExport(t,
		"--methods", "native,ssh-tunnel", "--tests", "tcp_rr,latency_under_load", "--streams", "1",
		"--duration", "1s", "--omit", "1s", "--latency", "3s", "--reps", "1")
	ratio := map[string]float64{}
	for _, c := range doc.Cells {
		l := c.LatencyUnderLoad
		if c.Status != result.StatusOK || l == nil || l.Idle == nil || l.Loaded == nil || l.Loaded.Samples == 0 {
			t.Fatalf("%s: cell %s: %s; record %+v", c.Method, c.Status, c.Error, l)
		}
		ratio[c.Method] = l.Loaded.P50 / l.Idle.P50
		t.Logf("%s: p99 idle %.0f µs, loaded %.0f µs (x%.1f); p50 idle %.0f µs, loaded %.0f µs; load %.2f Gbit/s",
			c.Method, l.Idle.P99, l.Loaded.P99, l.P99Ratio, l.Idle.P50, l.Loaded.P50, l.LoadBitsPerSecond/1e9)
	}
	if len(ratio) != 2 {
		t.Fatalf("cells for %v, want native and ssh-tunnel", ratio)
	}
	if ratio["ssh-tunnel"] < 3 || ratio["ssh-tunnel"] <= ratio["native"] {
		t.Errorf("ssh-tunnel's loaded/idle median ratio %.1f, native's %.1f: want TCP over TCP's queueing to show (at least 3, and above native's)",
			ratio["ssh-tunnel"], ratio["native"])
	}
	if !strings.Contains(stdout, "latency under load") {
		t.Errorf("table lacks the latency-under-load section:\n%s", stdout)
	}
}

// latency_under_load with more streams than one iperf3 process takes: the
// parallel test's processes carry the load.
func TestLatencyUnderParallelLoad(t *testing.T) {
	t.Parallel()
	doc, _ := runExport(t,
		"--methods", "native", "--tests", "latency_under_load", "--streams", "256",
		"--duration", "1s", "--omit", "1s", "--latency", "1s", "--reps", "1")
	c := doc.Cells[0]
	l := c.LatencyUnderLoad
	if c.Status != result.StatusOK || l == nil || l.Load != "parallel" || l.Idle == nil || l.Loaded == nil || l.LoadBitsPerSecond <= 0 {
		t.Fatalf("cell %s: %s; record %+v", c.Status, c.Error, l)
	}
}

// A run killed with SIGKILL and then resumed stores every cell exactly
// once and ends done.
func TestResumeAfterSIGKILL(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	bin := tunbenchBinary(t)
	db := filepath.Join(t.TempDir(), "r.db")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--db", db, "--methods", "native,vxlan", "--streams", "1,2", "--tests", "tcp_stream",
		"--duration", "1s", "--omit", "0s", "--latency", "0s", "--reps", "1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Kill it while the third of four cells measures.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "[3/4") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "[3/4") {
		t.Fatalf("the run never reached its third cell:\n%s", stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	r, cells, err := st.Run(context.Background(), store.Latest)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != result.RunRunning || len(cells) == 0 || len(cells) >= 4 {
		t.Fatalf("after SIGKILL: run %s with %d cells, want running with 1 to 3", r.Status, len(cells))
	}
	code, out, errOut := run(t, "run", "--db", db, "--resume", r.ID, "--dry-run")
	if want := fmt.Sprintf("resume: %d of 4 steps stored, %d to measure", len(cells), 4-len(cells)); code != 0 || !strings.Contains(out, want) {
		t.Errorf("resume --dry-run: exit %d, want %q in:\n%s%s", code, want, out, errOut)
	}
	code, out, errOut = run(t, "run", "--db", db, "--resume", r.ID[:len(r.ID)-1], "--quiet")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "run", "--db", db, "--resume", r.ID, "--methods", "native"); code == 0 || !strings.Contains(errOut, "drop --methods") {
		t.Errorf("--resume with --methods: exit %d, %s", code, errOut)
	}
	st, err = store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r2, cells2, err := st.Run(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Status != result.RunDone {
		t.Errorf("resumed run status %q (%s), want done", r2.Status, r2.Error)
	}
	seen := map[string]int{}
	for _, c := range cells2 {
		seen[fmt.Sprintf("%s#%d", c.Key, c.Repetition)]++
	}
	if len(cells2) != 4 || len(seen) != 4 {
		t.Errorf("after resume: %d cells, %d distinct: %v", len(cells2), len(seen), seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("cell %s stored %d times", k, n)
		}
	}
	if runs, _ := st.Runs(context.Background()); len(runs) != 1 {
		t.Errorf("resume made a new run: %d runs", len(runs))
	}
}

// A reduced sizes.yaml: three sizes at a fixed 2 Mbit/s (11,000 packets/s
// of 64-byte frames, a rate a loaded 2-core machine still paces) on native
// and vxlan; every size carries the rate with its delay, jitter and loss
// figures, and the 1514-byte frame is measured fragmented over vxlan.
func TestUDPSizesReduced(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	dir := t.TempDir()
	export := filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, "run", "-f", "../../examples/sizes.yaml", "--db", filepath.Join(dir, "r.db"),
		"--export", export, "--quiet", "--methods", "native,vxlan", "--udp-sizes", "64,512,1514", "--udp-rate", "2M",
		"--duration", "1s", "--reps", "1")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"udp sizes:", "udp sizes cpu:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks the %q section:\n%s", want, stdout)
		}
	}
	doc := exportOf(t, export)
	if len(doc.Cells) != 2 {
		t.Fatalf("%d cells", len(doc.Cells))
	}
	for _, c := range doc.Cells {
		if c.Status != result.StatusOK || len(c.UDPSizes) != 3 {
			t.Errorf("%s: %s: %s; %d sizes", c.Method, c.Status, c.Error, len(c.UDPSizes))
			continue
		}
		for _, u := range c.UDPSizes {
			r := u.Result
			name := fmt.Sprintf("%s frame %d", c.Method, u.FrameBytes)
			if r == nil || r.OfferedBitsPerSecond != 2e6 || r.Sent == 0 || r.Received == 0 {
				t.Errorf("%s: %+v", name, r)
				continue
			}
			if sent := r.SentBitsPerSec; sent < 1.7e6 || sent > 2.2e6 {
				t.Errorf("%s: sender paced to %.2f Mbit/s, offered 2", name, sent/1e6)
			}
			if r.DelayMin <= 0 || r.DelayP50 < r.DelayMin || r.DelayP99 < r.DelayP50 || r.Jitter < 0 {
				t.Errorf("%s: delay min/p50/p99 %v/%v/%v jitter %v", name, r.DelayMin, r.DelayP50, r.DelayP99, r.Jitter)
			}
			if r.DelayMean < r.DelayMin || r.DelayMean > r.DelayMax {
				t.Errorf("%s: mean delay %v outside min %v and max %v", name, r.DelayMean, r.DelayMin, r.DelayMax)
			}
			if u.PayloadBytes != u.FrameBytes-42 {
				t.Errorf("%s: payload %d", name, u.PayloadBytes)
			}
			if want := c.Method == "vxlan" && u.FrameBytes == 1514; u.Fragmented != want {
				t.Errorf("%s: fragmented %v, want %v", name, u.Fragmented, want)
			}
			// The trial keeps its CPU record: the whole machine's busy %
			// and the generator's processes on their sides.
			if cpu := r.CPU; cpu == nil || len(cpu.Samples) == 0 || cpu.BusyMax < cpu.BusyMin || len(cpu.PerCore) == 0 ||
				len(cpu.Processes) < 2 || r.SenderCores != cpu.SenderCores {
				t.Errorf("%s: trial CPU %+v", name, cpu)
			}
		}
	}
}

// The NDR/PDR search on native, one size: its trials are stored, the NDR
// trial lost nothing, and PDR ≥ NDR.
func TestUDPSearch(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("methods: [native]\ntests: [udp_sizes]\nudp: {sizes: [512], rate: search, trial: 300ms, search_steps: 2}\nduration: 1s\nrepetitions: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, "run", "-f", scen, "--db", filepath.Join(dir, "r.db"), "--export", export, "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc := exportOf(t, export)
	c := doc.Cells[0]
	if c.Status != result.StatusOK || len(c.UDPSizes) != 1 {
		t.Fatalf("%s: %s", c.Status, c.Error)
	}
	u := c.UDPSizes[0]
	// One unlimited trial, then 1 to 3 per search (the top rate, then the halvings).
	if len(u.Trials) < 3 || len(u.Trials) > 7 || u.Trials[0].OfferedBitsPerSecond != 0 {
		t.Errorf("%d trials: %+v", len(u.Trials), u.Trials)
	}
	if u.PDRBitsPerSecond < u.NDRBitsPerSecond {
		t.Errorf("PDR %v below NDR %v", u.PDRBitsPerSecond, u.NDRBitsPerSecond)
	}
	for _, tr := range u.Trials[1:] {
		if tr.OfferedBitsPerSecond == u.NDRBitsPerSecond && u.NDRBitsPerSecond > 0 && tr.Lost != 0 {
			t.Errorf("the NDR trial lost %d packets", tr.Lost)
		}
	}
	t.Logf("NDR %.1f Mbit/s, PDR %.1f Mbit/s after %d trials", u.NDRBitsPerSecond/1e6, u.PDRBitsPerSecond/1e6, len(u.Trials))
}

// mtu_probe on native and vxlan: the path MTU is the configured overlay
// MTU, no mismatch, and TCP just above it is not stalled (the kernel clamps
// the MSS to the device MTU).
func TestMTUProbe(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "ping", "apt-get install -y --no-install-recommends iputils-ping")
	doc, stdout := runExport(t,
		"--methods", "native,vxlan", "--tests", "mtu_probe", "--reps", "1")
	if !strings.Contains(stdout, "mtu probe:") {
		t.Errorf("table lacks the mtu probe section:\n%s", stdout)
	}
	for _, c := range doc.Cells {
		m := c.MTUProbe
		if c.Status != result.StatusOK || m == nil {
			t.Errorf("%s: %s: %s", c.Method, c.Status, c.Error)
			continue
		}
		if m.PathMTU != c.Params.OverlayMTU || m.ConfiguredMTU != c.Params.OverlayMTU || m.Mismatch || m.Stalled || m.TCPMSS != m.PathMTU-39 {
			t.Errorf("%s: %+v (overlay MTU %d)", c.Method, m, c.Params.OverlayMTU)
		}
	}
}

// wan with a rate alone is shaped by tbf on both underlay devices; delay,
// jitter or loss need netem, and a kernel without it is refused before
// anything is created, naming the kernel lab.
func TestWANRate(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("methods: [native]\nwan: [{rate: 100M}]\ntests: [tcp_stream]\nduration: 2s\nomit: 1s\nrepetitions: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, "run", "-f", scen, "--db", filepath.Join(dir, "r.db"), "--export", export, "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	c := exportOf(t, export).Cells[0]
	if c.Status != result.StatusOK || c.Throughput == nil || c.Params.WAN == nil || c.Params.WAN.Qdisc != "tbf" {
		t.Fatalf("%s: %s; params %+v", c.Status, c.Error, c.Params.WAN)
	}
	if bps := c.Throughput.BitsPerSecond; bps > 105e6 || bps < 50e6 {
		t.Errorf("throughput %.1f Mbit/s through a 100 Mbit/s tbf", bps/1e6)
	}
	if !strings.Contains(c.Meta.Extra["wan"], "tbf rate 100000000bit") {
		t.Errorf("applied qdisc not recorded: %q", c.Meta.Extra["wan"])
	}

	// A delay needs netem: on a kernel without it the run is refused
	// before anything is created, naming the option and the kernel lab.
	// The kernel without netem is faked (the preflight reads the kernel
	// config, whatever this one has), so the refusal runs on any kernel.
	if err := os.WriteFile(scen, []byte("methods: [native]\nwan: [{delay: 40ms}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runWith(t, kernelWithout("CONFIG_NET_SCH_NETEM"), "run", "-f", scen, "--db", filepath.Join(dir, "r2.db"))
	if code == 0 || !strings.Contains(stderr, "CONFIG_NET_SCH_NETEM missing") || !strings.Contains(stderr, "--testbed vm") {
		t.Errorf("delay without netem: exit %d: %s", code, stderr)
	}
}

// kernelWithout is this machine with the kernel options taken away, as
// tunbench's preflight sees it: the refusal paths for a kernel that lacks
// them run on any kernel.
func kernelWithout(options ...string) bed.Env {
	env := hostEnv()
	env.Probe = func() method.Probe {
		return probeWithout{HostProbe: bed.NewHostProbe().(*bed.HostProbe), lacks: options}
	}
	return env
}

// probeWithout is the host probe with kernel options taken away.
type probeWithout struct {
	*bed.HostProbe
	lacks []string
}

func (p probeWithout) HasKernel(option, module string) (bool, error) {
	if slices.Contains(p.lacks, option) {
		return false, nil
	}
	return p.HostProbe.HasKernel(option, module)
}

// A named offload set is applied on every device of the path and
// recorded; a feature a device cannot change is recorded, not hidden.
func TestOffloadSet(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	doc, _ := runExport(t,
		"--methods", "native,vxlan", "--offloads", "udp-tnl-seg-off,udp-tnl-seg-on", "--tests", "tcp_stream",
		"--duration", "1s", "--omit", "0s", "--reps", "1")
	for _, c := range doc.Cells {
		if c.Status != result.StatusOK {
			t.Errorf("%s: %s", c.Key, c.Error)
			continue
		}
		want := c.Params.OffloadSet == "udp-tnl-seg-on"
		for _, d := range c.Meta.Devices {
			if d.Kind == "veth" && d.Offloads["tx-udp_tnl-segmentation"] != want {
				t.Errorf("%s: %s tx-udp_tnl-segmentation %v, want %v", c.Key, d.Name, d.Offloads["tx-udp_tnl-segmentation"], want)
			}
		}
		// vxlan devices have the feature fixed off: turning it on is recorded as not applied.
		notApplied := c.Meta.Extra["offload_set_not_applied"]
		if got := c.Method == "vxlan" && want; got != strings.Contains(notApplied, "tx-udp_tnl-segmentation is fixed off") {
			t.Errorf("%s: not applied %q", c.Key, notApplied)
		}
	}
}
