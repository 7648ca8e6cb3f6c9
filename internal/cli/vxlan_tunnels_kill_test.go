package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestVXLANTunnelsKilledInSetup kills "tunbench run --methods vxlan
// --tunnels 1000" with SIGKILL while it sets up the 1,000 VXLAN devices
// (some, not all, exist in side a's namespace), then runs "tunbench
// clean": the run's namespaces, its directory, and every device, FDB
// entry, neighbour, address and route of its devices are gone (issue
// 41).
func TestVXLANTunnelsKilledInSetup(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine for clean to
	// find, which any other run's start would clean first
	// (parallelTests).
	bin := tunbenchBinary(t)
	const n = 1000
	before := map[string]bool{}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		before[e.Name()] = true
	}
	cmd := exec.Command(bin, "run", "--db", filepath.Join(t.TempDir(), "r.db"), "--quiet",
		"--methods", "vxlan", "--tunnels", "1000", "--family", "ipv4", "--duration", "1s", "--omit", "0s",
		"--latency", "0s", "--reps", "1")
	var runOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &runOut, &runOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Find the run's side a and count its devices until some, not all,
	// of the 1,000 exist.
	var id string
	devices := 0
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && (devices < n/10 || devices >= n) {
		// Every new side a is a candidate: tests running beside this one
		// start runs of their own, so the run is the one whose devices
		// grow, not the first new namespace (a clean-clone run once took
		// another test's run and saw 0 devices for 90 s).
		entries, _ := os.ReadDir("/run/netns")
		for _, e := range entries {
			if rid, side, ok := testbed.ParseNamespace(e.Name()); ok && side == "a" && !before[e.Name()] {
				if c := countRunDevices(testbed.NamespaceName(rid, "a"), testbed.DevicePrefix(rid)); id == "" || rid == id || c > devices {
					id, devices = rid, c
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if devices < n/10 || devices >= n {
		t.Fatalf("never saw the run's set-up half done: run %q, %d devices in side a; the run printed:\n%s", id, devices, runOut.String())
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	after := countRunDevices(testbed.NamespaceName(id, "a"), testbed.DevicePrefix(id))
	t.Logf("killed run %s with %d of %d VXLAN devices in side a (%d after the kill)", id, devices, n, after)
	if after >= n {
		t.Fatalf("side a has all %d devices after the kill: the kill came too late to test a half set-up", after)
	}

	code, out, errOut := run(t, "clean")
	if code != 0 {
		t.Fatalf("clean: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "namespace "+testbed.NamespaceName(id, "a")) {
		t.Errorf("clean does not report the killed run's namespace:\n%s", out)
	}
	for _, l := range runLeftovers(id) {
		t.Errorf("left behind: %s", l)
	}
	// Nothing of the run in the root namespace either: no device named
	// for it, and so no FDB entry, neighbour, address or route on one.
	prefix := testbed.DevicePrefix(id)
	for _, argv := range [][]string{
		{"ip", "-o", "link", "show"},
		{"ip", "-o", "addr", "show"},
		{"ip", "route", "show", "table", "all"},
		{"ip", "-6", "route", "show", "table", "all"},
		{"ip", "neigh", "show"},
		{"bridge", "fdb", "show"},
	} {
		got, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		for _, line := range strings.Split(string(got), "\n") {
			if strings.Contains(line, prefix) {
				t.Errorf("%s: left behind: %s", strings.Join(argv, " "), line)
			}
		}
	}
}

// countRunDevices counts the devices named prefix... in namespace ns (0 when
// it is gone).
func countRunDevices(ns, prefix string) int {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return 0
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return 0
	}
	defer nl.Close()
	// While the run adds devices, nearly every dump is interrupted
	// (NLM_F_DUMP_INTR): its links are still a count of those there,
	// which is all this needs.
	links, err := nl.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return 0
	}
	return len(slices.DeleteFunc(links, func(l netlink.Link) bool { return !strings.HasPrefix(l.Attrs().Name, prefix) }))
}
