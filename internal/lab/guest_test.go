package lab_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/lab/labtest"
)

// These tests boot real guests, one at a time (labtest.Config holds the
// machine-wide lab lock). Each boot costs 5-15 s under software emulation,
// so there are few of them.

// qemuWith returns the pids of processes whose command line mentions s.
func qemuWith(t *testing.T, s string) []string {
	t.Helper()
	var pids []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process is gone
		}
		if bytes.Contains(b, []byte("qemu-system")) && bytes.Contains(b, []byte(s)) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// assertCleanedUp checks that no qemu of this work dir runs and that Run
// removed its own files from the caller's work dir.
func assertCleanedUp(t *testing.T, workDir string) {
	t.Helper()
	if pids := qemuWith(t, workDir); len(pids) > 0 {
		t.Errorf("qemu still running for %s: pids %v", workDir, pids)
	}
	for _, p := range []string{filepath.Join(workDir, "initramfs.cpio"), filepath.Join(lab.ResultsDir(workDir), ".tunbench-lab")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("Run left %s behind", p)
		}
	}
}

func hostRelease(t *testing.T) string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	return unix.ByteSliceToString(u.Release[:])
}

// guestScript proves the guest runs the lab kernel with its modules, as
// root, with the environment, working directory and shares Run promises.
const guestScript = `set -e
echo "kernel $(uname -r)"
for m in geneve wireguard ip_gre esp4 openvswitch; do modprobe "$m"; done
ip netns add labtest
ip -n labtest link add gnv0 type geneve id 42 remote 198.18.0.2
ip -n labtest -d -o link show gnv0
echo "in-lab=$TUNBENCH_IN_LAB extra=$EXTRA uid=$(id -u) pwd=$(pwd)"
cat /tunbench-results/from-host
echo written-by-guest >/tunbench-results/from-guest
echo to-stderr >&2
`

func TestGuestRunsLabKernel(t *testing.T) {
	cfg := labtest.Config(t)
	if err := os.MkdirAll(lab.ResultsDir(cfg.WorkDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lab.ResultsDir(cfg.WorkDir), "from-host"), []byte("written-by-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := lab.Run(context.Background(), cfg, lab.Guest{
		Argv: []string{"sh", "-c", guestScript},
		Env:  []string{"EXTRA=x y"},
		Dir:  wd,
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to command %.1fs, whole run %.1fs, emulated=%v", out.BootTime.Seconds(), took.Seconds(), out.Emulated)
	if out.ExitCode != 0 {
		t.Fatalf("guest script exited %d\nstdout:\n%s\nstderr:\n%s\nconsole:\n%s", out.ExitCode, out.Stdout, out.Stderr, out.Console)
	}
	stdout := string(out.Stdout)
	if host := hostRelease(t); host == cfg.Kernel.Version {
		t.Logf("host and guest both run %s: uname -r cannot tell them apart", host)
	} else if strings.Contains(stdout, "kernel "+host) {
		t.Errorf("guest reports the host's kernel %s", host)
	}
	for _, want := range []string{
		"kernel " + cfg.Kernel.Version + "\n",
		"geneve id 42 remote 198.18.0.2",
		"in-lab=1 extra=x y uid=0 pwd=" + wd + "\n",
		"written-by-host\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("guest stdout lacks %q:\n%s", want, stdout)
		}
	}
	if string(out.Stderr) != "to-stderr\n" {
		t.Errorf("guest stderr = %q, want %q", out.Stderr, "to-stderr\n")
	}
	if bytes.Contains(out.Console, []byte("to-stderr")) || bytes.Contains(out.Console, []byte("kernel "+cfg.Kernel.Version)) {
		t.Errorf("the command's output leaked onto the console:\n%s", out.Console)
	}
	if out.ResultsDir != lab.ResultsDir(cfg.WorkDir) {
		t.Errorf("ResultsDir = %q, want %q", out.ResultsDir, lab.ResultsDir(cfg.WorkDir))
	}
	if b, err := os.ReadFile(filepath.Join(out.ResultsDir, "from-guest")); err != nil || string(b) != "written-by-guest\n" {
		t.Errorf("file the guest wrote: %q, %v", b, err)
	}
	if out.BootTime <= 0 || out.BootTime > took {
		t.Errorf("BootTime = %v, whole run %v", out.BootTime, took)
	}
	assertCleanedUp(t, cfg.WorkDir)
}

func TestGuestExitCodePropagates(t *testing.T) {
	cfg := labtest.Config(t)
	cfg.WorkDir = "" // a temporary one, which Run must remove
	pattern := filepath.Join(os.TempDir(), "tunbench-lab-*")
	before, _ := filepath.Glob(pattern)
	out, err := lab.Run(context.Background(), cfg, lab.Guest{Argv: []string{"sh", "-c", "echo bye; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 7 || string(out.Stdout) != "bye\n" {
		t.Errorf("exit %d, stdout %q; want 7, %q", out.ExitCode, out.Stdout, "bye\n")
	}
	if out.ResultsDir != "" {
		t.Errorf("ResultsDir = %q for a removed temporary work dir", out.ResultsDir)
	}
	after, _ := filepath.Glob(pattern)
	if len(after) > len(before) {
		t.Errorf("temporary work dirs before %v, after %v", before, after)
	}
	if pids := qemuWith(t, "tunbench-lab-"); len(pids) > 0 {
		t.Errorf("qemu still running: pids %v", pids)
	}
}

// hangTimeout is long enough for the boot here (5-15 s) and short enough
// not to waste much time; the test passes either way, but only a timeout
// that fires during the command proves the command was killed.
const hangTimeout = 30 * time.Second

func TestGuestHangIsKilledAtTimeout(t *testing.T) {
	cfg := labtest.Config(t)
	cfg.Timeout = hangTimeout
	start := time.Now()
	_, err := lab.Run(context.Background(), cfg, lab.Guest{Argv: []string{"sleep", "1000"}})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a guest sleeping 1000 s finished")
	}
	msg := err.Error()
	for _, want := range []string{"did not finish within 30s", "qemu killed", "last console lines"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if took > hangTimeout+60*time.Second {
		t.Errorf("Run returned %v after start, timeout %v", took, hangTimeout)
	}
	if !strings.Contains(msg, "tunbench-lab: start") {
		t.Logf("the timeout fired during the boot, not the command (slow machine?):\n%s", msg)
	}
	assertCleanedUp(t, cfg.WorkDir)
}

// TestGuestLockupIsKilled has the guest's kernel log say what its
// soft-lockup watchdog says (through /dev/kmsg, at the watchdog's level,
// onto the real serial console): a CPU stuck for 23 s, which an emulated
// guest on a loaded host can report and survive, then one stuck for
// 2063 s. Run must let the first pass and give the guest up at the
// second, long before its timeout, with ErrGuestLockup and the line.
func TestGuestLockupIsKilled(t *testing.T) {
	cfg := labtest.Config(t)
	cfg.Timeout = 5 * time.Minute
	script := `echo "<0>watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [ksoftirqd/1:22]" >/dev/kmsg
sleep 2
echo survived
echo "<0>watchdog: BUG: soft lockup - CPU#0 stuck for 2063s! [ping:412]" >/dev/kmsg
sleep 1000`
	start := time.Now()
	out, err := lab.Run(context.Background(), cfg, lab.Guest{Argv: []string{"sh", "-c", script}})
	took := time.Since(start)
	if !errors.Is(err, lab.ErrGuestLockup) {
		t.Fatalf("err = %v, want ErrGuestLockup", err)
	}
	if !strings.Contains(err.Error(), "CPU#0 stuck for 2063s! [ping:412]") {
		t.Errorf("error lacks the watchdog's line:\n%v", err)
	}
	if !strings.Contains(string(out.Stdout), "survived") {
		t.Errorf("the 23 s report ended the guest: stdout %q", out.Stdout)
	}
	if took > cfg.Timeout-time.Minute {
		t.Errorf("Run returned after %v: it waited for the timeout (%v)", took, cfg.Timeout)
	}
	assertCleanedUp(t, cfg.WorkDir)
}

// cancelOnStart cancels a context when the console shows the guest command
// starting.
type cancelOnStart struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (c *cancelOnStart) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if bytes.Contains(c.buf.Bytes(), []byte("tunbench-lab: start")) {
		c.cancel()
	}
	return len(p), nil
}

func TestGuestCancelKillsQemu(t *testing.T) {
	cfg := labtest.Config(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Console = &cancelOnStart{cancel: cancel}
	_, err := lab.Run(ctx, cfg, lab.Guest{Argv: []string{"sleep", "1000"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "tunbench-lab: start") {
		t.Errorf("error lacks the console tail with the start marker:\n%v", err)
	}
	assertCleanedUp(t, cfg.WorkDir)
}

// TestProbeBoot checks the KVM probe's guest under TCG, so the path a host
// with working KVM takes is exercised here too. Under TCG, beside the rest
// of make test on two cores, the boot took over the KVM probe's 30 s once;
// what is checked is that the probe program runs and powers off, so it gets
// two minutes.
func TestProbeBoot(t *testing.T) {
	cfg := labtest.Config(t)
	ok, err := lab.ProbeBoot(context.Background(), cfg.Kernel, lab.AccelTCG, cfg.WorkDir, 2*time.Minute)
	if err != nil || !ok {
		t.Errorf("probe guest under tcg: ran=%v, err=%v", ok, err)
	}
	assertCleanedUp(t, cfg.WorkDir)
}

// BenchmarkBoot measures host time from starting qemu to the guest
// command's start (target: 15 s or less under software emulation).
func BenchmarkBoot(b *testing.B) {
	cfg := labtest.Config(b)
	var boot time.Duration
	emulated := false
	for b.Loop() {
		out, err := lab.Run(context.Background(), cfg, lab.Guest{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		if out.ExitCode != 0 {
			b.Fatalf("true exited %d", out.ExitCode)
		}
		boot += out.BootTime
		emulated = out.Emulated
	}
	b.ReportMetric(boot.Seconds()/float64(b.N), "boot-s/op")
	b.Logf("emulated=%v", emulated)
}
