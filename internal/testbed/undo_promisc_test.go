package testbed_test

import (
	"runtime"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestCleanSitePromiscOff: a killed ovs-vswitchd leaves the underlay
// promiscuous; the journal's promisc entry turns it off again, and an
// entry applied to a device that is not promiscuous (ovs-vswitchd put it
// back itself) changes nothing.
func TestCleanSitePromiscOff(t *testing.T) {
	h := inFreshNS(t)
	under := addDummy(t, h, "jprm0")
	promisc := func() bool {
		l, err := h.LinkByName("jprm0")
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().Promisc != 0
	}
	id, root := testbed.NewID(), t.TempDir()
	dir := testbed.SiteDir(root, id, "j")
	write := func() {
		if err := testbed.WriteUndo(dir, "ovs-promisc-jprm0", testbed.Undo{Kind: testbed.UndoPromisc, Dev: "jprm0"}); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if err := h.SetPromiscOn(under); err != nil {
		t.Fatal(err)
	}
	left, err := agent.CleanSite(root, id, "j")
	if err != nil {
		t.Fatalf("CleanSite: %v", err)
	}
	if promisc() {
		t.Errorf("jprm0 still promiscuous after the journal was applied (%v)", left)
	}
	write()
	if _, err := agent.CleanSite(root, id, "j"); err != nil {
		t.Fatalf("CleanSite, device not promiscuous: %v", err)
	}
	if promisc() {
		t.Error("jprm0 promiscuous after a journal applied to it when it was not")
	}
}

// inFreshNS locks the test's goroutine to its thread, moves the thread
// into a new network namespace until the test ends, and returns a
// netlink handle in it. It skips without the capabilities.
func inFreshNS(t *testing.T) *netlink.Handle {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	ns, err := netns.New()
	if err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	h, err := netlink.NewHandle()
	t.Cleanup(func() {
		if h != nil {
			h.Close()
		}
		_ = netns.Set(orig)
		ns.Close()
		orig.Close()
		runtime.UnlockOSThread()
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
