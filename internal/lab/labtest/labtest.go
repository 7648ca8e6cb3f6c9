// Package labtest runs Go tests inside the kernel lab (package lab), for
// methods the host kernel cannot run (Geneve, GRE, IPIP, ip6 tunnels,
// WireGuard, ESP, the OVS kernel datapath).
//
// A package puts all its kernel-only tests behind one host-side test, so
// the whole set costs one guest boot:
//
//	func TestInLab(t *testing.T) {
//		labtest.RunTestsInGuest(t, ".", "^TestKernel")
//	}
//
//	func TestKernelGeneve(t *testing.T) {
//		if !labtest.InLab() {
//			t.Skip("needs the lab's kernel: run through TestInLab")
//		}
//		...
//	}
//
// RunTestsInGuest compiles the package's test binary on the host, boots one
// guest and runs the binary there as root with TUNBENCH_IN_LAB=1. Each
// guest test is mirrored as a subtest of the host test with its status
// (pass, fail, skip) and, on failure, its output.
//
// When qemu, busybox-static or kmod is missing, the host test is skipped
// with the reason, except in strict mode (TUNBENCH_STRICT, which make test
// sets, or CI; package testenv): there a missing lab fails, because
// scripts/install.sh test provides it. A kernel that cannot be found or
// fetched always fails. Guests boot one at a time per machine: a lock in
// the cache directory serialises test processes.
package labtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/testenv"
)

// InLab reports whether this process runs inside the lab's guest.
func InLab() bool { return os.Getenv(lab.EnvInLab) == "1" }

// RequireLab skips t when the lab's host tools are missing, and fails it
// in strict mode (testenv.Strict), where the install step provides them.
func RequireLab(t testing.TB) {
	t.Helper()
	if err := lab.ToolsAvailable(); err != nil {
		testenv.SkipMissing(t, "kernel lab unavailable (scripts/install.sh test installs its tools): %v", err)
	}
}

// cleanupMargin is how much of the test's deadline is left for cleanup
// after the guest is killed.
const cleanupMargin = 30 * time.Second

// Kernel returns the lab's kernel: from TUNBENCH_LAB_KERNEL and
// TUNBENCH_LAB_MODULES, else the cached Debian one (fetched on first use).
// It calls RequireLab first and fails t when no kernel can be had.
func Kernel(t testing.TB) lab.Kernel {
	t.Helper()
	RequireLab(t)
	kernelOnce.Do(func() { kernel, kernelErr = lab.DefaultKernel(context.Background()) })
	if kernelErr != nil {
		t.Fatalf("kernel lab: %v", kernelErr)
	}
	return kernel
}

// The kernel is resolved once per test process: resolving the default asks
// apt-cache, which takes a second.
var (
	kernelOnce sync.Once
	kernel     lab.Kernel
	kernelErr  error
)

// Config returns a lab.Config for one guest boot in a test: the kernel from
// TUNBENCH_LAB_KERNEL and TUNBENCH_LAB_MODULES or the cached Debian one, a
// work dir under t.TempDir() and a timeout that ends before the test's
// deadline. It calls RequireLab first, and holds one of the machine-wide
// lab slots until the test ends, so concurrently running test processes
// boot at most labSlots guests at a time.
func Config(t testing.TB) lab.Config {
	t.Helper()
	return config(t, false)
}

// config is Config; reserved says the test may take the slot make test
// keeps for it (reserveEnv).
func config(t testing.TB, reserved bool) lab.Config {
	t.Helper()
	k := Kernel(t)
	lock(t, reserved)
	return lab.Config{Kernel: k, Timeout: boundTimeout(t, lab.DefaultTimeout), WorkDir: t.TempDir()}
}

// boundTimeout is timeout, shortened to end before the test's deadline
// (less the cleanup margin).
func boundTimeout(t testing.TB, timeout time.Duration) time.Duration {
	t.Helper()
	if d, ok := deadline(t); ok {
		if left := time.Until(d) - cleanupMargin; left < timeout {
			timeout = left
		}
		if timeout <= 0 {
			t.Fatalf("kernel lab: the test deadline leaves no time to boot a guest")
		}
	}
	return timeout
}

// deadline is t.Deadline for the types that have one.
func deadline(t testing.TB) (time.Time, bool) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return d.Deadline()
	}
	return time.Time{}, false
}

// labSlots is how many guests the tests of all processes boot at once on
// one machine. A software-emulated guest keeps about one core busy, so two
// let the longest lab test (internal/method/registry's TestKernelLab)
// run beside the others' boots on a 2-core machine instead of after
// them; TUNBENCH_LAB_SLOTS changes it (1: one guest at a time).
const labSlots = 2

// reserveEnv, set to 1, keeps the first of the lab slots for the tests
// that ask for it (Options.Reserved: internal/method/registry's
// TestKernelLab, make test's floor), and the others share the rest.
// make test sets it: without it TestKernelLab, whose package's test
// binary is the last to be built, waited 118 to 129 s for a slot behind
// the smaller packages' guests.
const reserveEnv = "TUNBENCH_LAB_RESERVE"

// slots is labSlots, or TUNBENCH_LAB_SLOTS when it is a positive number.
func slots() int {
	if n, err := strconv.Atoi(os.Getenv("TUNBENCH_LAB_SLOTS")); err == nil && n > 0 {
		return n
	}
	return labSlots
}

// lock takes one of the machine-wide lab slots (a lock file each) until t
// ends, waiting while every slot it may take is held. With reserveEnv
// set and more than one slot, the first is kept for reserved tests.
func lock(t testing.TB, reserved bool) {
	t.Helper()
	dir := lab.DefaultCacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("kernel lab lock: %v", err)
	}
	n := slots()
	first := 0
	if n > 1 && !reserved && os.Getenv(reserveEnv) == "1" {
		first = 1
	}
	files := make([]*os.File, 0, n-first)
	for i := first; i < n; i++ {
		path := filepath.Join(dir, fmt.Sprintf("lab.lock.%d", i))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatalf("kernel lab lock: %v", err)
		}
		files = append(files, f)
	}
	for {
		for i, f := range files {
			err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				t.Fatalf("kernel lab lock %s: %v", f.Name(), err)
			}
			for j, other := range files {
				if j != i {
					other.Close()
				}
			}
			t.Cleanup(func() { f.Close() }) // closing releases the lock
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
