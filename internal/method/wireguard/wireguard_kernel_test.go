package wireguard_test

import (
	"errors"
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/wireguard"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// requireKernelWireGuard skips t when the kernel cannot create a WireGuard
// device (probed in a throwaway testbed namespace); in the kernel lab that
// is a failure.
func requireKernelWireGuard(t *testing.T) {
	t.Helper()
	l := testbedtest.New(t, 1500)
	link := &netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: "tbwgprobe"}}
	err := l.A.NL.LinkAdd(link)
	if err == nil {
		if err := l.A.NL.LinkDel(link); err != nil {
			t.Fatalf("delete probe device: %v", err)
		}
		return
	}
	if methodtest.InLab() {
		t.Fatalf("kernel lab: create a wireguard device: %v", err)
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("kernel lacks CONFIG_WIREGUARD (create a wireguard device: %v); runs in the kernel lab", err)
	}
	t.Fatalf("probe for kernel wireguard: %v", err)
}

func TestLabWireGuard(t *testing.T) {
	requireKernelWireGuard(t)
	m := wireguard.WireGuard{}
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) {
			runWireGuard(t, m, family, nil, func(r *wgRun) { wgShow(t, r); wgRekeyCheck(t, m, r) })
		})
	}
}

func TestLabWireGuardWire(t *testing.T) {
	requireKernelWireGuard(t)
	m := wireguard.WireGuard{}
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { wireGuardWire(t, m, family) })
	}
}

func TestLabWireGuardHandshakeFailure(t *testing.T) {
	requireKernelWireGuard(t)
	wgHandshakeFailure(t, wireguard.WireGuard{})
}
