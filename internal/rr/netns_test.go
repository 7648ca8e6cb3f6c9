package rr

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tunbench/tunbench/internal/testenv"
)

// Addresses the tests put on lo in their namespace.
var (
	testV4 = netip.MustParseAddr("198.18.0.1")
	testV6 = netip.MustParseAddr("2001:2::1")
)

var nsCount atomic.Int32

// testNS is a throwaway network namespace whose lo carries testV4/32 and
// testV6/128, removed at cleanup.
type testNS struct {
	name string
	fd   int // open /run/netns/NAME
}

// newTestNS creates the namespace, or skips the test when that is not
// possible here.
func newTestNS(tb testing.TB) *testNS {
	tb.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.SkipMissing(tb, "ip (iproute2) is not installed: %v", err)
	}
	name := fmt.Sprintf("tbtest-rr-%d-%d", os.Getpid(), nsCount.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("Operation not permitted")) || bytes.Contains(out, []byte("Permission denied")) {
			testenv.SkipMissing(tb, "creating a network namespace needs CAP_SYS_ADMIN: ip netns add: %s", bytes.TrimSpace(out))
		}
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	ns := &testNS{name: name, fd: -1}
	tb.Cleanup(func() {
		if ns.fd >= 0 {
			unix.Close(ns.fd)
		}
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", testV4.String() + "/32", "dev", "lo"},
		{"addr", "add", testV6.String() + "/128", "dev", "lo", "nodad"},
	} {
		args = append([]string{"-n", name}, args...)
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// The kernel installs the local route of an IPv6 address (even with
	// nodad) from a work queue, a moment after "ip addr add" returns:
	// until then connect fails with ENETUNREACH.
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := exec.Command("ip", "-n", name, "-6", "route", "show", "table", "local", testV6.String()).CombinedOutput()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no local route to %s in %s after 5s: %v: %s", testV6, name, err, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatalf("open namespace %s: %v", name, err)
	}
	ns.fd = fd
	return ns
}

// do runs fn on a fresh OS thread inside the namespace and waits for it.
// The thread is never unlocked, so it exits with fn instead of going back
// to the scheduler in the wrong namespace.
func (ns *testNS) do(tb testing.TB, fn func()) {
	tb.Helper()
	if err := <-ns.start(fn); err != nil {
		tb.Fatal(err)
	}
}

// start runs fn like do but returns at once; the channel yields the error
// of entering the namespace (fn not run) or nil after fn returned.
func (ns *testNS) start(fn func()) <-chan error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", ns.name, err)
			return
		}
		fn()
		done <- nil
	}()
	return done
}
