package nic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	rtnl "github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/tunbench/tunbench/internal/testenv"
)

// testNS creates the named namespace tbtest-<name>-<pid> without moving the
// test's thread into it, and deletes it in t.Cleanup. It skips when the
// process may not create namespaces.
func testNS(t testing.TB, name string) (string, netns.NsHandle) {
	t.Helper()
	full := fmt.Sprintf("tbtest-%s-%d", name, os.Getpid())
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("get current netns: %v", err)
	}
	defer orig.Close()
	h, err := netns.NewNamed(full)
	if err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			testenv.SkipMissing(t, "creating network namespace %s needs CAP_SYS_ADMIN: %v", full, err)
		}
		t.Fatalf("create netns %s: %v", full, err)
	}
	// NewNamed moved this thread into the new namespace; move it back. If
	// that fails the thread stays locked, and the runtime discards it.
	if err := netns.Set(orig); err != nil {
		t.Fatalf("return to original netns: %v", err)
	}
	runtime.UnlockOSThread()
	t.Cleanup(func() {
		h.Close()
		if err := netns.DeleteNamed(full); err != nil {
			t.Errorf("delete netns %s: %v", full, err)
		}
	})
	return full, h
}

// testbed is a veth pair va (in A) / vb (in B), both up, with 198.18.0.1/24
// on va and 198.18.0.2/24 on vb, and optionally vxlan vx0 (VNI 42) over va.
type testbed struct {
	nameA, nameB string
	a, b         netns.NsHandle
}

func newTestbed(t testing.TB, vxlan bool) testbed {
	t.Helper()
	var tb testbed
	tb.nameA, tb.a = testNS(t, "nic-a")
	tb.nameB, tb.b = testNS(t, "nic-b")
	if c, err := dial(tb.a); errors.Is(err, ErrNotSupported) {
		t.Skipf("kernel lacks the ethtool netlink interface (Linux 5.6+, CONFIG_ETHTOOL_NETLINK): %v", err)
	} else if err != nil {
		t.Fatal(err)
	} else {
		c.close()
	}
	ha, err := rtnl.NewHandleAt(tb.a)
	if err != nil {
		t.Fatalf("rtnetlink in %s: %v", tb.nameA, err)
	}
	defer ha.Close()
	hb, err := rtnl.NewHandleAt(tb.b)
	if err != nil {
		t.Fatalf("rtnetlink in %s: %v", tb.nameB, err)
	}
	defer hb.Close()
	veth := &rtnl.Veth{LinkAttrs: rtnl.LinkAttrs{Name: "va"}, PeerName: "vb", PeerNamespace: rtnl.NsFd(int(tb.b))}
	if err := ha.LinkAdd(veth); err != nil {
		t.Skipf("creating a veth pair (CONFIG_VETH) failed: %v", err)
	}
	up := func(h *rtnl.Handle, name, cidr string) rtnl.Link {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatalf("look up %s: %v", name, err)
		}
		if cidr != "" {
			addr, err := rtnl.ParseAddr(cidr)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.AddrAdd(l, addr); err != nil {
				t.Fatalf("add %s to %s: %v", cidr, name, err)
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatalf("set %s up: %v", name, err)
		}
		return l
	}
	va := up(ha, "va", "198.18.0.1/24")
	up(hb, "vb", "198.18.0.2/24")
	if vxlan {
		vx := &rtnl.Vxlan{
			LinkAttrs:    rtnl.LinkAttrs{Name: "vx0"},
			VxlanId:      42,
			VtepDevIndex: va.Attrs().Index,
			SrcAddr:      net.ParseIP("198.18.0.1"),
			Group:        net.ParseIP("198.18.0.2"),
			Port:         4789,
		}
		if err := ha.LinkAdd(vx); err != nil {
			t.Skipf("creating a vxlan device (CONFIG_VXLAN) failed: %v", err)
		}
		up(ha, "vx0", "")
	}
	return tb
}

// ethtoolK runs `ip netns exec ns ethtool -k dev` and returns each line's
// feature name mapped to on, and the set of names marked "[fixed]".
func ethtoolK(t testing.TB, ns, dev string) (map[string]bool, map[string]bool) {
	t.Helper()
	testenv.NeedProgram(t, "ethtool", "apt-get install -y --no-install-recommends ethtool")
	argv := []string{"ip", "netns", "exec", ns, "ethtool", "-k", dev}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
	feats, fixed, err := parseEthtoolK(out)
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return feats, fixed
}

// parseEthtoolK parses `ethtool -k` output.
func parseEthtoolK(out []byte) (map[string]bool, map[string]bool, error) {
	feats, fixed := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "Features for ") {
			continue
		}
		name, rest, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, nil, fmt.Errorf("unexpected line %q", line)
		}
		state, suffix, _ := strings.Cut(rest, " ")
		switch state {
		case "on":
			feats[name] = true
		case "off":
			feats[name] = false
		default:
			return nil, nil, fmt.Errorf("unexpected state in %q", line)
		}
		if suffix == "[fixed]" {
			fixed[name] = true
		}
	}
	return feats, fixed, sc.Err()
}
