package sample

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/testenv"
)

func TestRate(t *testing.T) {
	prev := Counters{RxBytes: 1000, TxBytes: 5000}
	cur := Counters{RxBytes: 1000 + 125_000_000, TxBytes: 5000 + 1_250_000}
	rx, tx := Rate(prev, cur, time.Second)
	if rx != 1e9 || tx != 1e7 {
		t.Errorf("Rate = %v, %v bit/s; want 1e9, 1e7", rx, tx)
	}
	rx, tx = Rate(prev, cur, 500*time.Millisecond)
	if rx != 2e9 || tx != 2e7 {
		t.Errorf("Rate over 0.5 s = %v, %v bit/s; want 2e9, 2e7", rx, tx)
	}
	// A recreated device starts again from zero.
	if rx, tx := Rate(cur, Counters{RxBytes: 10}, time.Second); rx != 0 || tx != 0 {
		t.Errorf("Rate after a counter reset = %v, %v; want 0, 0", rx, tx)
	}
	if rx, tx := Rate(prev, cur, 0); rx != 0 || tx != 0 {
		t.Errorf("Rate over no time = %v, %v; want 0, 0", rx, tx)
	}
}

// Capabilities from capability.h.
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// requireCaps skips the test unless the process holds the capabilities
// needed to create named network namespaces and devices.
func requireCaps(t *testing.T) {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		testenv.SkipMissing(t, "skipping: cannot read capabilities: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		hex, ok := strings.CutPrefix(sc.Text(), "CapEff:")
		if !ok {
			continue
		}
		eff, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			testenv.SkipMissing(t, "skipping: bad CapEff line %q", sc.Text())
		}
		for _, c := range []struct {
			bit  uint
			name string
		}{{capNetAdmin, "CAP_NET_ADMIN"}, {capSysAdmin, "CAP_SYS_ADMIN"}} {
			if eff&(1<<c.bit) == 0 {
				testenv.SkipMissing(t, "skipping: needs %s to create network namespaces and veth devices", c.name)
			}
		}
		return
	}
	testenv.SkipMissing(t, "skipping: no CapEff in /proc/self/status")
}

// newNamespace creates a named network namespace "tbtest-..." without
// leaving this thread in it, and deletes it when the test ends.
func newNamespace(t *testing.T, suffix string) (netns.NsHandle, string) {
	t.Helper()
	name := fmt.Sprintf("tbtest-sample-%d-%s", os.Getpid(), suffix)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatalf("get current namespace: %v", err)
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name)
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	if err := netns.Set(orig); err != nil {
		// The thread is stuck in the new namespace: let it die with the
		// locked goroutine rather than reuse it.
		runtime.LockOSThread()
		t.Fatalf("return from namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ns.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	// No IPv6 on the test devices: its autoconfiguration traffic would
	// move the counters under the test.
	inNamespace(t, ns, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644)
	})
	return ns, name
}

func newHandle(t *testing.T, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

func configure(t *testing.T, h *netlink.Handle, dev, cidr string) {
	t.Helper()
	l, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddrAdd(l, addr); err != nil {
		t.Fatalf("ip addr add %s dev %s: %v", cidr, dev, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		t.Fatalf("ip link set %s up: %v", dev, err)
	}
}

// inNamespace runs fn on a thread inside ns. Sockets fn creates stay in
// ns.
func inNamespace(t *testing.T, ns netns.NsHandle, fn func() error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatalf("enter namespace: %v", err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		runtime.LockOSThread() // never reuse a thread left in ns
		t.Fatalf("leave namespace: %v", err)
	}
	if fnErr != nil {
		t.Fatal(fnErr)
	}
}

// Datagrams sent from one namespace over a veth pair show in the sender's
// tx and the receiver's rx counters, read through handles bound to each
// namespace.
func TestLinkCountersVeth(t *testing.T) {
	requireCaps(t)
	a, _ := newNamespace(t, "a")
	b, nameB := newNamespace(t, "b")
	ha, hb := newHandle(t, a), newHandle(t, b)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "va"}, PeerName: "vb", PeerNamespace: netlink.NsFd(int(b))}
	if err := ha.LinkAdd(veth); err != nil {
		t.Fatalf("ip link add va type veth peer vb netns b: %v", err)
	}
	configure(t, ha, "va", "198.18.0.1/24")
	configure(t, hb, "vb", "198.18.0.2/24")

	beforeA, err := LinkCounters(ha, "va")
	if err != nil {
		t.Fatal(err)
	}
	beforeB, err := LinkCounters(hb, "vb")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var rcv net.PacketConn
	inNamespace(t, b, func() (err error) {
		rcv, err = net.ListenPacket("udp4", "198.18.0.2:5201")
		return err
	})
	t.Cleanup(func() { rcv.Close() })
	var c net.Conn
	inNamespace(t, a, func() (err error) {
		c, err = net.Dial("udp4", "198.18.0.2:5201")
		return err
	})
	t.Cleanup(func() { c.Close() })
	const n, size = 20, 1000
	payload := make([]byte, size)
	for range n {
		if _, err := c.Write(payload); err != nil {
			t.Fatalf("send datagram: %v", err)
		}
	}
	var afterA, afterB Counters
	for deadline := time.Now().Add(3 * time.Second); ; {
		if afterA, err = LinkCounters(ha, "va"); err != nil {
			t.Fatal(err)
		}
		if afterB, err = LinkCounters(hb, "vb"); err != nil {
			t.Fatal(err)
		}
		if afterB.RxPackets-beforeB.RxPackets >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	dt := time.Since(start)
	if got := afterA.TxPackets - beforeA.TxPackets; got < n {
		t.Errorf("va sent %d packets, want at least %d", got, n)
	}
	if got := afterB.RxPackets - beforeB.RxPackets; got < n {
		t.Errorf("vb received %d packets, want at least %d", got, n)
	}
	// Each datagram is size bytes of payload plus 42 of UDP, IP and Ethernet headers.
	if got := afterB.RxBytes - beforeB.RxBytes; got < n*(size+42) {
		t.Errorf("vb received %d bytes, want at least %d", got, n*(size+42))
	}
	rx, _ := Rate(beforeB, afterB, dt)
	if want := float64(8*n*(size+42)) / dt.Seconds(); rx < want {
		t.Errorf("vb receive rate %.0f bit/s, want at least %.0f", rx, want)
	}
	// ip -s link agrees, field by field.
	now, err := LinkCounters(hb, "vb")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(now, ipCounters(t, nameB, "vb")); diff != "" {
		t.Errorf("LinkCounters and ip -s link differ (-ours +ip):\n%s", diff)
	}
	if _, err := LinkCounters(ha, "nonexistent0"); err == nil || !strings.Contains(err.Error(), "nonexistent0") {
		t.Errorf("counters of a missing device: err = %v, want one naming it", err)
	}
}

// ipCounters reads a device's counters with "ip -n NS -s -j link show".
func ipCounters(t *testing.T, ns, dev string) Counters {
	t.Helper()
	cmd := exec.Command("ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", cmd.Args, err, out)
	}
	type dir struct {
		Bytes, Packets, Errors, Dropped uint64
	}
	var links []struct {
		Stats64 struct{ RX, TX dir } `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("%v: parse %q: %v", cmd.Args, out, err)
	}
	st := links[0].Stats64
	return Counters{
		RxBytes: st.RX.Bytes, TxBytes: st.TX.Bytes,
		RxPackets: st.RX.Packets, TxPackets: st.TX.Packets,
		RxDropped: st.RX.Dropped, TxDropped: st.TX.Dropped,
		RxErrors: st.RX.Errors, TxErrors: st.TX.Errors,
	}
}
