// Package testbedtest gives tests a real local testbed: two fresh network
// namespaces joined by a veth pair, removed in t.Cleanup. Tests skip, with
// the reason, when the process lacks the capabilities to create them, and
// fail instead in strict mode (package testenv: make test runs as root).
// It also gives them a fake one, the recording edge (Recorder): endpoints
// whose every change is written down as an ip-style line, for the golden
// tests of what a method does to a host, without root.
package testbedtest

import (
	"os"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testenv"
	"golang.org/x/sys/unix"
)

// RequireNetAdmin skips t (fails it in strict mode) unless the process can
// create namespaces and configure links (CAP_SYS_ADMIN and CAP_NET_ADMIN).
func RequireNetAdmin(t testing.TB) {
	t.Helper()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		testenv.SkipMissing(t, "cannot read capabilities: %v", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if !has(unix.CAP_SYS_ADMIN) || !has(unix.CAP_NET_ADMIN) {
		testenv.SkipMissing(t, "needs CAP_SYS_ADMIN and CAP_NET_ADMIN to create network namespaces (run as root)")
	}
}

// New builds a local testbed with the given underlay MTU (0 for 1500) in a
// temporary run root, and removes it when the test ends.
func New(t testing.TB, mtu int) *localns.Local {
	t.Helper()
	RequireNetAdmin(t)
	root := t.TempDir()
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: root, MTU: mtu})
	if err != nil {
		t.Fatalf("create testbed: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close testbed: %v", err)
		}
		for _, e := range l.Endpoints() {
			if _, err := os.Stat("/run/netns/" + e.Namespace); err == nil {
				t.Errorf("namespace %s left behind", e.Namespace)
			}
		}
	})
	return l
}
