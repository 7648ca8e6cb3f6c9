package testbed_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netns"
)

// hostDevFixture is side a's underlay device of a local testbed, with
// an endpoint whose site directory keeps the journal.
func hostDevFixture(t *testing.T) (testbed.HostDev, netns.NsHandle) {
	t.Helper()
	l := testbedtest.New(t, 0)
	ep := &testbed.Endpoint{Side: "a", NS: l.A.NS, Dev: l.A.Dev, Dir: filepath.Join(t.TempDir(), "site")}
	return testbed.HostDev{EP: ep}, ep.NS
}

// TestHostDevJournal: Save journals the device's original MTU and every
// feature (once: a second Save keeps the original), Restore after a
// change puts back exactly that state, and with drop takes the entry out
// of the journal.
func TestHostDevJournal(t *testing.T) {
	hd, ns := hostDevFixture(t)
	ctx := context.Background()
	orig, err := hd.Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.SetMTU(ctx, 9000); err != nil {
		t.Fatal(err)
	}
	if err := nic.SetOffloads(ns, hd.EP.Dev, false); err != nil {
		t.Fatal(err)
	}
	if again, err := hd.Save(ctx); err != nil || again.MTU != orig.MTU {
		t.Errorf("second Save: %v, MTU %d; want the original %d", err, again.MTU, orig.MTU)
	}
	changed, err := hd.Restore(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) == 0 || changed[0] != "mtu 9000 → 1500" {
		t.Errorf("Restore changed %v", changed)
	}
	now, err := hd.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig.Lines(), now.Lines()); diff != "" {
		t.Errorf("after Restore (-orig +now):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(hd.EP.Dir, "undo", "device-"+hd.EP.Dev)); err != nil {
		t.Errorf("journal entry gone before the run's end: %v", err)
	}
	if _, err := hd.Restore(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hd.EP.Dir, "undo")); !os.IsNotExist(err) {
		t.Errorf("journal left after Restore with drop: %v", err)
	}
	if err := hd.SetMTU(ctx, 9000); err == nil {
		t.Error("SetMTU without a journaled state went ahead")
	}
}

// TestHostDevWatchdog: a host whose controller stops renewing the
// watchdog puts the device back by itself, and the next Arm reports it.
func TestHostDevWatchdog(t *testing.T) {
	hd, _ := hostDevFixture(t)
	ctx := context.Background()
	orig, err := hd.Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.Arm(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := hd.SetMTU(ctx, 9000); err != nil {
		t.Fatal(err)
	}
	// The watchdog fires after 300 ms; a loaded machine may take a while
	// to run it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		now, err := hd.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now.MTU == orig.MTU {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("MTU %d 10 s after the watchdog's time, want %d", now.MTU, orig.MTU)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := hd.Arm(ctx, time.Second); err == nil || !strings.Contains(err.Error(), "mtu 9000 → 1500") {
		t.Errorf("Arm after the watchdog fired: %v", err)
	}
	if err := hd.Arm(ctx, 0); err != nil {
		t.Errorf("disarm: %v", err)
	}
}
