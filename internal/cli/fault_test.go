package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"golang.org/x/sys/unix"
)

// faultRun is a real tunbench run that a test disturbs.
type faultRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr bytes.Buffer
	export string
}

func startFaultRun(t *testing.T, bin, db string, args ...string) *faultRun {
	t.Helper()
	r := &faultRun{t: t, export: filepath.Join(t.TempDir(), "run.json")}
	r.cmd = exec.Command(bin, append([]string{"run", "--db", db, "--export", r.export,
		"--omit", "0s", "--latency", "0s", "--reps", "1"}, args...)...)
	r.cmd.Stderr = &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
	return r
}

// waitIperf3 waits until the run's iperf3 client runs and returns the
// run's namespace of side a.
func (r *faultRun) waitIperf3() string {
	r.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ns := iperf3Namespace(r.cmd.Process.Pid); ns != "" {
			id, _, _ := testbed.ParseNamespace(ns)
			return testbed.NamespaceName(id, "a")
		}
	}
	r.t.Fatal("the run never started iperf3")
	return ""
}

// cells waits for the run to end and returns its exported cells by method.
// A run with a failed cell must exit with ExitCellsFailed, naming it, and
// one whose cells are all ok with 0.
func (r *faultRun) cells() map[string]result.Cell {
	r.t.Helper()
	waitErr := r.cmd.Wait()
	cells := r.cellsOf()
	failed := false
	for _, c := range cells {
		failed = failed || c.Status == result.StatusFailed
	}
	code := r.cmd.ProcessState.ExitCode()
	switch {
	case failed && code != ExitCellsFailed:
		r.t.Errorf("a run with a failed cell exited %d (%v), want %d\n%s", code, waitErr, ExitCellsFailed, r.stderr.String())
	case failed && !strings.Contains(r.stderr.String(), "cells failed"):
		r.t.Errorf("a run with a failed cell does not say so on stderr:\n%s", r.stderr.String())
	case !failed && code != 0:
		r.t.Errorf("a run whose cells are all ok exited %d (%v)\n%s", code, waitErr, r.stderr.String())
	}
	return cells
}

// cellsOf reads the run's export: its cells by method.
func (r *faultRun) cellsOf() map[string]result.Cell {
	r.t.Helper()
	data, err := os.ReadFile(r.export)
	if err != nil {
		r.t.Fatalf("no export: %v\n%s", err, r.stderr.String())
	}
	var doc export.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]result.Cell{}
	for _, c := range doc.Cells {
		out[c.Method] = c
	}
	return out
}

// pidIn returns the pid of the process called comm in namespace ns (with
// the argument arg, when arg is not empty).
func pidIn(ns, comm, arg string) int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, p := range strings.Fields(string(out)) {
		c, _ := os.ReadFile("/proc/" + p + "/comm")
		cmdline, _ := os.ReadFile("/proc/" + p + "/cmdline")
		args := strings.Split(string(cmdline), "\x00")
		if strings.TrimSpace(string(c)) == comm && (arg == "" || slices.Contains(args, arg)) {
			pid, _ := strconv.Atoi(p)
			return pid
		}
	}
	return 0
}

// wantFailed checks that cell failed with a reason holding every want.
func wantFailed(t *testing.T, c result.Cell, want ...string) {
	t.Helper()
	if c.Status != result.StatusFailed {
		t.Errorf("%s: status %s, want failed", c.Method, c.Status)
	}
	for _, w := range want {
		if !strings.Contains(c.Error, w) {
			t.Errorf("%s: reason %q does not contain %q", c.Method, c.Error, w)
		}
	}
}

func wantOK(t *testing.T, c result.Cell) {
	t.Helper()
	if c.Status != result.StatusOK {
		t.Errorf("%s: %s: %s (the matrix must go on after a failed cell)", c.Method, c.Status, c.Error)
	}
}

// TestFaultsFailTheCell disturbs real runs: each fault becomes a failed
// cell whose reason names the side and the component, and the next cell
// of the matrix is measured as usual.
func TestFaultsFailTheCell(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)

	t.Run("load tool crashes", func(t *testing.T) {
		r := startFaultRun(t, bin, filepath.Join(t.TempDir(), "r.db"), "--methods", "native,vxlan", "--duration", "4s")
		ns := r.waitIperf3()
		time.Sleep(time.Second)
		if pid := pidIn(ns, "iperf3", "-c"); pid == 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
			t.Fatal("cannot kill the iperf3 client")
		}
		cells := r.cells()
		wantFailed(t, cells["native"], "a: iperf3 client", "killed")
		wantOK(t, cells["vxlan"])
	})

	t.Run("tunnel daemon dies", func(t *testing.T) {
		if !ready(t, "wireguard-go") {
			t.Skip("wireguard-go is not ready here (see tunbench methods)")
		}
		r := startFaultRun(t, bin, filepath.Join(t.TempDir(), "r.db"), "--methods", "wireguard-go,native", "--duration", "4s")
		nsA := r.waitIperf3()
		nsB := strings.TrimSuffix(nsA, "-a") + "-b"
		time.Sleep(time.Second)
		pid := pidIn(nsB, "wireguard-go", "")
		if pid == 0 {
			pid = pidIn(nsB, "wireguard", "")
		}
		if pid == 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
			t.Fatalf("cannot kill side b's wireguard-go in %s", nsB)
		}
		cells := r.cells()
		wantFailed(t, cells["wireguard-go"], "b: wireguard-go", "exited")
		wantOK(t, cells["native"])
	})

	t.Run("underlay link down for two seconds", func(t *testing.T) {
		underlayDownFailsTheCell(t, bin, "vxlan")
	})
}

// underlayDownFailsTheCell sets side a's underlay down for two seconds
// while native is measured: that cell fails with the watch's message, and
// the next one (method next) is measured as usual.
func underlayDownFailsTheCell(t *testing.T, bin, next string) {
	r := startFaultRun(t, bin, filepath.Join(t.TempDir(), "r.db"), "--methods", "native,"+next, "--duration", "5s")
	ns := r.waitIperf3()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "type", "veth").Output()
	fields := strings.Fields(string(out))
	if err != nil || len(fields) < 2 {
		t.Fatalf("find the underlay of %s: %v %q", ns, err, out)
	}
	dev, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
	if out, err := exec.Command("ip", "-n", ns, "link", "set", dev, "down").CombinedOutput(); err != nil {
		t.Fatalf("link down: %v %s", err, out)
	}
	time.Sleep(2 * time.Second)
	if out, err := exec.Command("ip", "-n", ns, "link", "set", dev, "up").CombinedOutput(); err != nil {
		t.Fatalf("link up: %v %s", err, out)
	}
	cells := r.cells()
	wantFailed(t, cells["native"], "a: underlay device "+dev+" went down")
	wantOK(t, cells[next])
}

// TestDatabaseDiskFails fills the file system that holds the database
// after the first cell is committed: the run stops with an error that
// says so, tears everything down, and the committed cell stays readable.
// Then the file system is made read-only (a remount with the database
// open is refused by the kernel, so between two runs): the next run is
// refused before it creates anything, and the stored runs stay readable.
func TestDatabaseDiskFails(t *testing.T) {
	bin := tunbenchBinary(t)
	dir := t.TempDir()
	if err := unix.Mount("tunbench-test", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a tmpfs for the database: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	db := filepath.Join(dir, "r.db")

	// Full, mid-run.
	r := startFaultRun(t, bin, db, "--methods", "native,vxlan,srv6", "--duration", "2s")
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(r.stderr.String(), "[2/3 "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run never reached its second cell:\n%s", r.stderr.String())
		}
	}
	ns := r.waitIperf3()
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()
	if err := r.cmd.Wait(); err == nil {
		t.Fatal("the run exited 0 with its database's disk full")
	}
	if !strings.Contains(r.stderr.String(), "record cell") || !strings.Contains(r.stderr.String(), "full") {
		t.Errorf("the error does not say that recording failed on a full disk:\n%s", r.stderr.String())
	}
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	code, csv, stderr := run(t, "results", "export", "--db", db, "--format", "csv")
	if code != 0 || !strings.Contains(csv, "native") {
		t.Fatalf("the committed cell is gone: exit %d\n%s%s", code, csv, stderr)
	}

	// Read-only, before a run.
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	refusedBefore := localns.NamespacesCreated()
	code, _, stderr = run(t, "run", "--db", db, "--methods", "native", "--duration", "1s", "--latency", "0s", "--reps", "1")
	if code == 0 || !strings.Contains(stderr, "read-only") {
		t.Errorf("a run onto a read-only database: exit %d, %q; want an error saying read-only", code, stderr)
	}
	if localns.NamespacesCreated() > refusedBefore {
		t.Errorf("a run refused for its read-only database created namespaces")
	}
	// The kernel lab too refuses it before the guest boots, not after.
	code, _, stderr = run(t, "run", "--db", db, "--testbed", "vm", "--methods", "native", "--duration", "1s", "--latency", "0s", "--reps", "1")
	if code == 0 || !strings.Contains(stderr, "read-only") || strings.Contains(stderr, "booting") {
		t.Errorf("a vm run onto a read-only database: exit %d, %q; want it refused, saying read-only, before booting", code, stderr)
	}
	if code, csv, _ := run(t, "results", "export", "--db", db, "--format", "csv"); code != 0 || !strings.Contains(csv, "native") {
		t.Errorf("stored runs unreadable on a read-only disk: exit %d\n%s", code, csv)
	}
}
