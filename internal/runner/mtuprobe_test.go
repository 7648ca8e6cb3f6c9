package runner

import (
	"context"
	"os/exec"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

func TestLargestCrossing(t *testing.T) {
	for _, tc := range []struct{ lo, hi, limit, want int }{
		{68, 1450, 1450, 1450}, // the usual answer: one probe
		{68, 1450, 1400, 1400},
		{68, 1450, 68, 68},
		{68, 1450, 0, 67}, // nothing crosses
		{1280, 1430, 1390, 1390},
	} {
		probes := 0
		got, n, err := largestCrossing(tc.lo, tc.hi, func(size int) (bool, error) {
			probes++
			return size <= tc.limit, nil
		})
		if err != nil || got != tc.want || n != probes {
			t.Errorf("largestCrossing(%d, %d) with limit %d = %d after %d probes (%v), want %d", tc.lo, tc.hi, tc.limit, got, n, err, tc.want)
		}
		if n > 12 {
			t.Errorf("%d probes", n)
		}
	}
}

// A vxlan tunnel whose underlay cannot carry what its MTU promises: b's
// veth is lowered to 1450 after setup, so outer packets above that are
// dropped silently (the veth lets 4 bytes of VLAN tag through: 1454-byte
// outer packets, 1404-byte inner ones, still pass). mtu_probe finds a path
// MTU of 1404 and flags the mismatch, and runs TCP with MSS 1365 (IP
// packets of 1405 bytes). On this veth testbed that transfer still flows
// (measured: 1.8 to 3 Gbit/s with offloads off), so the stall flag is
// recorded but not asserted here: why the veth passes those TCP segments
// while it drops pings of the same size is not established yet.
func TestMTUProbeFindsBlackHole(t *testing.T) {
	tb := testbedtest.New(t, 1500)
	for _, tool := range []string{"ping", "iperf3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	m := kernel.VXLAN{}
	env := &method.Env{A: tb.A, B: tb.B, Family: "ipv4", UnderlayMTU: 1500, OverlayMTU: 1450,
		Prefix: testbed.DevicePrefix(tb.ID), Dir: tb.Dir}
	ctx := context.Background()
	path, err := m.Setup(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Teardown(context.Background(), env) })

	good, err := measureMTUProbe(ctx, tb.Pair(), path, result.Params{}, 1450)
	if err != nil {
		t.Fatal(err)
	}
	if good.PathMTU != 1450 || good.Mismatch || good.Stalled || good.TCPMSS != 1411 {
		t.Errorf("healthy vxlan: %+v", good)
	}

	if err := nic.SetMTU(tb.B.NS, tb.B.Dev, 1450); err != nil {
		t.Fatal(err)
	}
	for _, ep := range tb.Endpoints() {
		for _, dev := range append([]string{ep.Dev}, path.Devices[ep.Side]...) {
			if err := nic.SetOffloads(ep.NS, dev, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	bad, err := measureMTUProbe(ctx, tb.Pair(), path, result.Params{}, 1450)
	if err != nil {
		t.Fatal(err)
	}
	if bad.PathMTU != 1404 || !bad.Mismatch || bad.TCPMSS != 1365 || bad.TCPSeconds == 0 && bad.TCPError == "" {
		t.Errorf("vxlan over a 1450-byte underlay: %+v, want path MTU 1404, a mismatch and a TCP record at MSS 1365", bad)
	}
	t.Logf("black hole: %+v", bad)
}
