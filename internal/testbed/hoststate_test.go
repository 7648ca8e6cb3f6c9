package testbed_test

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
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

// TestAgentPutsBackWhenControllerVanishes: the controller goes the way a
// SIGKILLed one over SSH goes (sshd closes the agent's standard input
// and the reading end of its standard output at once) while the cell's
// processes still run and write output: the agent must still kill them,
// put the underlay device back to its journaled state, remove the site
// directory and exit by itself, however its writes to the dead output
// fail.
func TestAgentPutsBackWhenControllerVanishes(t *testing.T) {
	l := testbedtest.New(t, 0)
	h := agent.Hello{ID: testbed.NewID(), Site: "vanish", Dev: l.B.Dev, Root: t.TempDir()}
	agent := testbedtest.StartAgent(t, l.B.Namespace, h)
	ep := agent.Conn.Endpoint("b", agent.Hello)
	hd := testbed.HostDev{EP: ep}
	ctx := context.Background()
	orig, err := hd.Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.SetMTU(ctx, 9000); err != nil {
		t.Fatal(err)
	}
	if err := nic.SetOffloads(l.B.NS, l.B.Dev, false); err != nil {
		t.Fatal(err)
	}
	// An overlay address on lo, as the IPsec and eBPF methods add them:
	// journaled by the agent in the same op.
	lo, err := ep.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	loAddr := &netlink.Addr{IPNet: testbed.PrefixNet(netip.MustParsePrefix("198.19.0.9/32"))}
	if err := ep.NL.AddrAdd(lo, loAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ep.Dir, "undo", "addr-lo-198.19.0.9_32")); err != nil {
		t.Errorf("the address on lo is not journaled: %v", err)
	}
	// A chatty process (its output keeps coming as events) and a quiet
	// one (its exit is an event once the agent kills it).
	var out strings.Builder
	chatty := ep.Command(ctx, "sh", "-c", "while :; do echo tick; sleep 0.01; done")
	chatty.Stdout = &out
	quiet := ep.Command(ctx, "sleep", "100")
	for _, c := range []*testbed.Cmd{chatty, quiet} {
		if err := ep.Start(c); err != nil {
			t.Fatal(err)
		}
	}
	pids := []int{chatty.Pid(), quiet.Pid()}
	agent.Vanish()
	how := agent.Exited(15 * time.Second)
	if how == "" {
		t.Fatal("the agent still runs 15 s after its controller vanished")
	}
	if how != "exit status 0" {
		t.Errorf("the agent ended with %s, want exit status 0 after its cleanup", how)
	}
	now, err := testbed.ReadDevice(l.B.NS, l.B.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig.Lines(), now.Lines()); diff != "" {
		t.Errorf("the device after the agent's end (-journaled +now):\n%s", diff)
	}
	if _, err := os.Stat(ep.Dir); !os.IsNotExist(err) {
		t.Errorf("site directory %s after the agent's end: %v", ep.Dir, err)
	}
	if out, _ := exec.Command("ip", "-n", l.B.Namespace, "addr", "show", "dev", "lo").Output(); strings.Contains(string(out), "198.19.0.9") {
		t.Errorf("the overlay address is still on lo after the agent's end:\n%s", out)
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("process %d of the agent still runs", pid)
		}
	}
}

// TestAgentSettlesDeadJournal: a run killed with its agent (no one put
// the device back) left the underlay at MTU 9000 with offloads off and
// its journal holding the original. The next run's agent puts the device
// back at its hello, before anything else, says so, and its Save
// journals the true original; a journal of a run still alive makes Save
// refuse instead of taking that run's change for the original.
func TestAgentSettlesDeadJournal(t *testing.T) {
	l := testbedtest.New(t, 0)
	root := t.TempDir()
	orig, err := testbed.ReadDevice(l.B.NS, l.B.Dev)
	if err != nil {
		t.Fatal(err)
	}
	dead := testbed.NewID()
	if err := testbed.WriteUndo(testbed.SiteDir(root, dead, "s"), "device-"+l.B.Dev,
		testbed.Undo{Kind: testbed.UndoDevice, Dev: l.B.Dev, MTU: orig.MTU, Features: orig.Features}); err != nil {
		t.Fatal(err)
	}
	if err := nic.SetMTU(l.B.NS, l.B.Dev, 9000); err != nil {
		t.Fatal(err)
	}
	if err := nic.SetOffloads(l.B.NS, l.B.Dev, false); err != nil {
		t.Fatal(err)
	}
	ag := testbedtest.StartAgent(t, l.B.Namespace, agent.Hello{ID: testbed.NewID(), Site: "s", Dev: l.B.Dev, Root: root})
	if got := strings.Join(ag.Conn.Settled(), "; "); !strings.Contains(got, "mtu 9000 → 1500") || !strings.Contains(got, "tx-tcp-segmentation on") {
		t.Errorf("Settled() = %q, want the MTU and TSO put back", got)
	}
	now, err := testbed.ReadDevice(l.B.NS, l.B.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig.Lines(), now.Lines()); diff != "" {
		t.Errorf("the device after the next run's hello (-original +now):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(testbed.SiteDir(root, dead, "s"), "undo")); !os.IsNotExist(err) {
		t.Errorf("the dead run's journal is still there after it was applied: %v", err)
	}
	hd := testbed.HostDev{EP: ag.Conn.Endpoint("b", ag.Hello)}
	saved, err := hd.Save(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig.Lines(), saved.Lines()); diff != "" {
		t.Errorf("Save journaled (-original +saved):\n%s", diff)
	}

	// That run ends; a live run's journal for the device: Save refuses.
	if err := ag.Conn.Close(); err != nil {
		t.Fatal(err)
	}
	live := testbed.NewID()
	if err := os.MkdirAll(testbed.LockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(testbed.LockDir, live+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close(); _ = os.Remove(lock.Name()) })
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := testbed.WriteUndo(testbed.SiteDir(root, live, "s"), "device-"+l.B.Dev,
		testbed.Undo{Kind: testbed.UndoDevice, Dev: l.B.Dev, MTU: 9000}); err != nil {
		t.Fatal(err)
	}
	other := testbedtest.StartAgent(t, l.B.Namespace, agent.Hello{ID: testbed.NewID(), Site: "s", Dev: l.B.Dev, Root: root})
	_, err = testbed.HostDev{EP: other.Conn.Endpoint("b", other.Hello)}.Save(context.Background())
	if err == nil || !strings.Contains(err.Error(), live+" (alive)") {
		t.Errorf("Save with a live run's journal for the device: %v, want a refusal naming run %s", err, live)
	}
}
