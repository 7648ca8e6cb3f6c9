package testbed_test

import (
	"runtime"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestCleanSitePromiscOff: a killed ovs-vswitchd leaves the underlay
// promiscuous; the journal's promisc entry turns it off again, and an
// entry applied to a device that is not promiscuous (ovs-vswitchd put it
// back itself) changes nothing.
func TestCleanSitePromiscOff(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netns.Set(orig); ns.Close() }()
	h, err := netlink.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
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
	left, err := testbed.CleanSite(root, id, "j")
	if err != nil {
		t.Fatalf("CleanSite: %v", err)
	}
	if promisc() {
		t.Errorf("jprm0 still promiscuous after the journal was applied (%v)", left)
	}
	write()
	if _, err := testbed.CleanSite(root, id, "j"); err != nil {
		t.Fatalf("CleanSite, device not promiscuous: %v", err)
	}
	if promisc() {
		t.Error("jprm0 promiscuous after a journal applied to it when it was not")
	}
}
