package localns_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func TestSplitCPUs(t *testing.T) {
	a, b := localns.SplitCPUs(4)
	if diff := cmp.Diff([][]int{{0, 1}, {2, 3}}, [][]int{a, b}); diff != "" {
		t.Errorf("SplitCPUs(4) (-want +got):\n%s", diff)
	}
	a, b = localns.SplitCPUs(1)
	if diff := cmp.Diff([][]int{{0}, {0}}, [][]int{a, b}); diff != "" {
		t.Errorf("SplitCPUs(1) (-want +got):\n%s", diff)
	}
}

// ipState renders what `ip` sees in a namespace as sorted text lines.
func ipState(t *testing.T, ns string) []string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-br", "addr").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s -br addr: %v: %s", ns, err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		name, _, _ := strings.Cut(f[0], "@")
		var addrs []string
		for _, a := range f[2:] {
			if !strings.HasPrefix(a, "fe80:") {
				addrs = append(addrs, a)
			}
		}
		lines = append(lines, strings.TrimSpace(name+" "+strings.Join(addrs, " ")))
	}
	return lines
}

func TestLocalTestbed(t *testing.T) {
	l := testbedtest.New(t, 9000)
	dev := testbed.DevicePrefix(l.ID)
	want := []string{"lo 127.0.0.1/8 ::1/128", dev + "-a 198.18.0.1/24 2001:2::1/64"}
	if diff := cmp.Diff(want, ipState(t, l.A.Namespace)); diff != "" {
		t.Errorf("namespace a (-want +got):\n%s", diff)
	}
	link, err := l.B.NL.LinkByName(l.B.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if link.Attrs().MTU != 9000 {
		t.Errorf("underlay MTU = %d, want 9000", link.Attrs().MTU)
	}
	ctx := context.Background()
	for _, dst := range []string{"198.18.0.2", "2001:2::2"} {
		if out, err := l.A.Run(ctx, "ping", "-c", "1", "-W", "2", dst); err != nil {
			t.Errorf("ping %s from a: %v\n%s", dst, err, out)
		}
	}
	// A long-running process is killed by Close, and nothing remains.
	cmd := l.B.Command(ctx, "sleep", "100")
	if err := l.B.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(cmd.Pid())); err == nil {
		t.Errorf("process %d still runs after Close", cmd.Pid())
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Errorf("run directory %s remains after Close", l.Dir)
	}
}

// TestCleanAfterCrash leaves a testbed behind as a killed run would and
// checks that Clean removes exactly it.
func TestCleanAfterCrash(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	root := t.TempDir()
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	cmd := l.A.Command(context.Background(), "sleep", "100")
	if err := l.A.Start(cmd); err != nil {
		t.Fatal(err)
	}
	// A live run (lock held) is left alone.
	removed, err := localns.Clean(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Fatalf("Clean removed %v from a live run", removed)
	}
	// Simulate the crash: the lock goes away with the process.
	l.ReleaseLock()
	removed, err = localns.Clean(root)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range removed {
		kinds = append(kinds, r.Kind)
	}
	if diff := cmp.Diff([]string{"process", "directory", "namespace", "namespace"}, kinds); diff != "" {
		t.Errorf("Clean removed %v (-want +got kinds):\n%s", removed, diff)
	}
	_ = cmd.Wait()
	for _, e := range l.Endpoints() {
		if _, err := os.Stat("/run/netns/" + e.Namespace); err == nil {
			t.Errorf("namespace %s survived Clean", e.Namespace)
		}
	}
}

// TestCleanAfterKillInTeardown leaves what a run killed in its teardown
// leaves when the kill lands between unmounting a namespace and
// unlinking its file: an empty file under /run/netns, seconds old. Clean
// removes it (TestChaos once found it left behind).
func TestCleanAfterKillInTeardown(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	root := t.TempDir()
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	l.ReleaseLock()
	path := "/run/netns/" + l.A.Namespace
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	removed, err := localns.Clean(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range removed {
		if r.Kind == "namespace" {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{l.A.Namespace, l.B.Namespace}, names); diff != "" {
		t.Errorf("Clean removed namespaces (-want +got):\n%s", diff)
	}
	for _, e := range l.Endpoints() {
		if _, err := os.Stat("/run/netns/" + e.Namespace); err == nil {
			t.Errorf("%s survived Clean", "/run/netns/"+e.Namespace)
		}
	}
}

func TestPin(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: t.TempDir(), Pin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	a, b := localns.SplitCPUs(runtime.NumCPU())
	for _, c := range []struct {
		ep   *testbed.Endpoint
		want []int
	}{{l.A, a}, {l.B, b}} {
		out, err := c.ep.Run(context.Background(), "grep", "Cpus_allowed_list", "/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, n := range c.want {
			want = append(want, strconv.Itoa(n))
		}
		got := strings.TrimSpace(strings.TrimPrefix(string(out), "Cpus_allowed_list:"))
		if got != strings.Join(want, ",") && !(len(want) > 1 && got == want[0]+"-"+want[len(want)-1]) {
			t.Errorf("side %s runs on cpus %q, want %v", c.ep.Side, got, c.want)
		}
	}
	// The caller's own thread is not left pinned.
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() != runtime.NumCPU() {
		t.Errorf("caller left pinned to %d cpus", set.Count())
	}
}

// TestIPNetnsAddAfterRun checks that an "ip netns add" run while a
// testbed lives (iproute2 then makes /run/netns a mount point of its own
// if it is not one yet) does not stop the testbed from deleting its
// namespaces.
func TestIPNetnsAddAfterRun(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "ip", "apt-get install -y --no-install-recommends iproute2")
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	other := "tunbench-iproute2-" + l.ID
	if out, err := exec.Command("ip", "netns", "add", other).CombinedOutput(); err != nil {
		l.Close()
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", other).Run() })
	if err := l.Close(); err != nil {
		t.Fatalf("Close after ip netns add: %v", err)
	}
	for _, e := range l.Endpoints() {
		if _, err := os.Stat("/run/netns/" + e.Namespace); err == nil {
			t.Errorf("namespace %s survived Close", e.Namespace)
		}
	}
}

// TestKillInNamespaceSparesVisitors: a process living in a namespace (a
// sleep started there) is killed with it; a multi-threaded program whose
// first thread alone is in the namespace (this test binary, re-executed,
// as tunbench or a test is while it looks into a run's namespace) is
// not, though /proc/PID/ns/net names the namespace. Killing such
// visitors killed a clean-clone run's internal/cli test binary.
func TestKillInNamespaceSparesVisitors(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	name := "tbvisit-" + testbed.NewID()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	resident := exec.Command("ip", "netns", "exec", name, "sleep", "100")
	if err := resident.Start(); err != nil {
		t.Fatal(err)
	}
	residentDone := make(chan error, 1)
	go func() { residentDone <- resident.Wait() }()

	visitor := exec.Command(os.Args[0], "-test.run=^$")
	visitor.Env = append(os.Environ(), "TUNBENCH_TEST_VISIT_NAMESPACE="+name)
	out, err := visitor.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := visitor.Start(); err != nil {
		t.Fatal(err)
	}
	visitorDone := make(chan error, 1)
	t.Cleanup(func() { visitor.Process.Kill(); <-visitorDone })
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { visitorDone <- visitor.Wait() }()
	var threads int
	if _, scanErr := fmt.Sscanf(line, "visiting %d", &threads); err != nil || scanErr != nil || threads < 2 {
		t.Fatalf("visitor said %q (%v): want it visiting with more than one thread", line, err)
	}

	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		t.Fatal(err)
	}
	link, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", visitor.Process.Pid))
	if link != fmt.Sprintf("net:[%d]", st.Ino) {
		t.Fatalf("the visitor's /proc/PID/ns/net is %q, not the namespace: the test proves nothing", link)
	}

	if err := localns.KillInNamespace(ns); err != nil {
		t.Fatal(err)
	}
	select {
	case <-residentDone:
	case <-time.After(5 * time.Second):
		t.Error("the process living in the namespace survived KillInNamespace")
	}
	select {
	case err := <-visitorDone:
		visitorDone <- err
		t.Errorf("the visitor (its first thread in the namespace, %d threads) was killed: %v", threads, err)
	case <-time.After(time.Second):
	}
}
