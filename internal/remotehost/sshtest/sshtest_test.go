package sshtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Three sites on a bridge: site 0 reaches site 2 over the underlay, both
// from its namespace directly and through a command run by its sshd.
func TestBridgeThreeSites(t *testing.T) {
	s := sshtest.New(t, 3)
	s0, s2 := s.Site[0], s.Site[2]
	for _, addr := range []string{s2.Addr4, s2.Addr6} {
		if out, err := exec.Command("ip", "netns", "exec", s0.Namespace, "ping", "-c", "1", "-W", "2", addr).CombinedOutput(); err != nil {
			t.Errorf("ping %s from %s: %v: %s", addr, s0.Namespace, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := remotehost.Dial(ctx, s0.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, _, err := h.Run(ctx, "ping", "-c", "1", "-W", "2", s2.Addr4); err != nil {
		t.Errorf("ping from a command run by site 0's sshd: %v", err)
	}
	// The command runs in site 0's network namespace: it sees its own
	// underlay device.
	out, _, err := h.Run(ctx, "ip", "-o", "addr", "show", "dev", s0.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if want := s0.Addr4 + "/24"; !strings.Contains(string(out), want) {
		t.Errorf("ip addr on site 0 = %q, want it to hold %s", out, want)
	}
}

// TestHoldSites is the child of TestCleanFindsSites: it builds three sites,
// prints what it built and waits to be killed.
func TestHoldSites(t *testing.T) {
	if os.Getenv("SSHTEST_HOLD") != "1" {
		t.Skip("run by TestCleanFindsSites")
	}
	s := sshtest.New(t, 3)
	for _, ns := range s.Namespaces {
		fmt.Println("HOLD ns", ns)
	}
	for _, site := range s.Site {
		fmt.Println("HOLD sshd", site.SSHDPid())
	}
	fmt.Println("HOLD dir", s.Dir)
	fmt.Println("HOLD ready")
	time.Sleep(time.Minute)
}

// A test killed with its sites up leaves only what `tunbench clean`
// (localns.Clean) finds: namespaces named as it looks for, every sshd
// inside one of them, files in a run directory under its root. The test
// then removes them as Clean would, but only these: Clean itself would
// also take whatever other dead runs left on this shared machine.
func TestCleanFindsSites(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	if _, err := os.Stat(sshtest.SSHD); err != nil {
		testenv.SkipMissing(t, "needs %s: %v", sshtest.SSHD, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldSites$", "-test.v")
	cmd.Env = append(os.Environ(), "SSHTEST_HOLD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	var sshds []int
	var dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "HOLD" {
			continue
		}
		if f[1] == "ready" {
			break
		}
		switch f[1] {
		case "ns":
			namespaces = append(namespaces, f[2])
		case "sshd":
			pid, _ := strconv.Atoi(f[2])
			sshds = append(sshds, pid)
		case "dir":
			dir = f[2]
		}
	}
	if len(namespaces) != 4 || len(sshds) != 3 || dir == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child built namespaces %v, sshd %v, dir %q", namespaces, sshds, dir)
	}
	// Which namespace each sshd lives in is read while the child still
	// holds its runs' locks: once it is gone, a "tunbench run" of another
	// test package may clean the namespaces first (that is clean finding
	// them, too).
	inNamespace := map[int]bool{}
	for _, ns := range namespaces {
		if _, _, ok := testbed.ParseNamespace(ns); !ok {
			t.Errorf("namespace %s does not match clean's pattern %s<id>-a|b", ns, testbed.NamespacePrefix)
		}
		var st unix.Stat_t
		if err := unix.Stat("/run/netns/"+ns, &st); err != nil {
			t.Fatal(err)
		}
		for _, pid := range sshds {
			if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); link == fmt.Sprintf("net:[%d]", st.Ino) {
				inNamespace[pid] = true
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	cmd.Wait()
	for _, pid := range sshds {
		if syscall.Kill(pid, 0) != nil && allExist(namespaces) {
			t.Fatalf("sshd %d died with the test: nothing left for clean to find", pid)
		}
	}
	for _, ns := range namespaces {
		id, side, _ := testbed.ParseNamespace(ns)
		h, err := netns.GetFromName(ns)
		if errors.Is(err, os.ErrNotExist) {
			continue // cleaned meanwhile by another package's run
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := localns.KillInNamespace(h); err != nil {
			t.Error(err)
		}
		h.Close()
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
		if side == "a" {
			os.Remove(filepath.Join(testbed.LockDir, id+".lock"))
		}
	}
	for _, pid := range sshds {
		if !inNamespace[pid] {
			t.Errorf("sshd %d is in none of the sites' namespaces, where clean looks", pid)
		}
	}
	if filepath.Dir(dir) != testbed.DefaultRoot || !testbed.ValidID(filepath.Base(dir)) {
		t.Errorf("files in %s, not in a run directory %s/<id> clean removes", dir, testbed.DefaultRoot)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Error(err)
	}
	for _, ns := range namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s left", ns)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s left", dir)
	}
	for _, pid := range sshds {
		deadline := time.Now().Add(5 * time.Second)
		for {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || strings.Contains(string(stat), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("sshd %d alive after clean", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A site presenting a kernel config of its own shows it, over SSH, where
// a host's kernel config is read (/boot/config-$(uname -r), and
// /proc/config.gz when this kernel has one), while the machine and the
// other site keep the real one.
func TestPresentKernelConfig(t *testing.T) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	before := machineKernelView(t, rel)
	s := sshtest.New(t, 2)
	config, err := sshtest.KernelConfigWithout("CONFIG_VXLAN")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Site[0].PresentKernelConfig(config); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, procGz := os.Stat("/proc/config.gz")
	for i, site := range s.Site {
		h, err := remotehost.Dial(ctx, site.Config)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		reads := [][]string{{"cat", "/boot/config-" + rel}}
		if procGz == nil {
			reads = append(reads, []string{"sh", "-c", "gzip -dc < /proc/config.gz"})
		}
		for _, argv := range reads {
			out, _, err := h.Run(ctx, argv...)
			got := err == nil && string(out) == string(config)
			if want := i == 0; got != want {
				t.Errorf("site %d: %v shows the presented config: %v (err %v), want %v", i, argv, got, err, want)
			}
		}
	}
	// Nothing of it reached the machine's own view.
	if after := machineKernelView(t, rel); after != before {
		t.Errorf("the machine's kernel config files changed:\nbefore %s\nafter  %s", before, after)
	}
}

// machineKernelView summarises what this process sees of the kernel
// config files: /boot's entries, and the sizes of /proc/config.gz and
// /boot/config-<release>.
func machineKernelView(t *testing.T, rel string) string {
	t.Helper()
	var names []string
	entries, _ := os.ReadDir("/boot")
	for _, e := range entries {
		names = append(names, e.Name())
	}
	size := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			return "none"
		}
		return strconv.Itoa(len(data))
	}
	return fmt.Sprintf("/boot %v, /proc/config.gz %s, /boot/config-%s %s", names, size("/proc/config.gz"), rel, size("/boot/config-"+rel))
}

// allExist reports whether every named network namespace still exists.
func allExist(namespaces []string) bool {
	for _, ns := range namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			return false
		}
	}
	return true
}

// TestPrivateFiles: with PrivateFiles, what a session on one site writes
// to /run/tunbench and /var/tmp/tunbench is seen there alone (not by the
// other site nor by the test at that path, only through Site.Path), and
// the site still logs in after its sshd restarts.
func TestPrivateFiles(t *testing.T) {
	s := sshtest.New(t, 2, sshtest.PrivateFiles())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := "sshtest-private-" + filepath.Base(s.Dir)
	files := []string{filepath.Join(testbed.DefaultRoot, name), filepath.Join("/var/tmp/tunbench", name)}
	h0, err := remotehost.Dial(ctx, s.Site[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	defer h0.Close()
	for _, f := range files {
		if err := h0.WriteFile(ctx, f, strings.NewReader("site 0"), 0o600); err != nil {
			t.Fatal(err)
		}
		if data, err := h0.ReadFile(ctx, f); err != nil || string(data) != "site 0" {
			t.Errorf("site 0 reads back %s: %q, %v", f, data, err)
		}
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the test sees site 0's %s: %v", f, err)
		}
		if data, err := os.ReadFile(s.Site[0].Path(f)); err != nil || string(data) != "site 0" {
			t.Errorf("Site.Path(%s): %q, %v", f, data, err)
		}
	}
	h1, err := remotehost.Dial(ctx, s.Site[1].Config)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	for _, f := range files {
		if _, err := h1.ReadFile(ctx, f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("site 1 sees site 0's %s: %v", f, err)
		}
	}
	// A clean on the site leaves the test's namespaces and files alone.
	if out, _, err := h1.Run(ctx, "sh", "-c", "ls /run/tunbench/locks"); err != nil || !strings.Contains(string(out), filepath.Base(s.Dir)+".lock") {
		t.Errorf("site 1's lock directory: %q, %v; want the test's locks", out, err)
	}
	if err := s.Site[1].RestartSSHD(); err != nil {
		t.Fatal(err)
	}
	h1b, err := remotehost.Dial(ctx, s.Site[1].Config)
	if err != nil {
		t.Fatalf("log in after a restart: %v", err)
	}
	h1b.Close()
}
