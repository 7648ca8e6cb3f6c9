package method_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

func TestOverheadAndMTU(t *testing.T) {
	tests := []struct {
		m        method.Method
		family   string
		underlay int
		overlay  int
	}{
		{method.Native{}, method.IPv4, 1500, 1500},
		{method.VXLAN{}, method.IPv4, 1500, 1450},
		{method.VXLAN{}, method.IPv4, 9000, 8950},
		{method.VXLAN{}, method.IPv6, 1500, 1430},
		{method.SRv6{}, method.IPv4, 1500, 1436},
		{method.SRv6{}, method.IPv6, 9000, 8936},
	}
	for _, tt := range tests {
		if got := tt.underlay - tt.m.Overhead(tt.family); got != tt.overlay {
			t.Errorf("%s/%s: overlay MTU over %d = %d, want %d", tt.m.Name(), tt.family, tt.underlay, got, tt.overlay)
		}
	}
}

func TestRegistry(t *testing.T) {
	r := method.NewRegistry(method.VXLAN{}, method.Native{}, method.SRv6{})
	if diff := cmp.Diff([]string{"native", "srv6", "vxlan"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	_, err := r.Get("vxlna")
	if err == nil || !strings.Contains(err.Error(), "native, srv6, vxlan") {
		t.Errorf("Get(unknown) error = %v, want it to list the valid methods", err)
	}
}

type fakeProbe struct {
	kernel   map[string]bool
	programs map[string]bool
}

func (f fakeProbe) HasKernel(o string) (bool, error) { return f.kernel[o], nil }
func (f fakeProbe) HasProgram(p string) bool         { return f.programs[p] }

func TestCheck(t *testing.T) {
	p := fakeProbe{kernel: map[string]bool{"CONFIG_VXLAN": true}}
	if err := method.Check(p, method.VXLAN{}.Requirements()); err != nil {
		t.Errorf("vxlan with CONFIG_VXLAN: %v", err)
	}
	err := method.Check(p, []method.Requirement{{Kernel: "CONFIG_GENEVE"}, {Program: "wg", Package: "wireguard-tools"}})
	if !errors.Is(err, method.ErrNotSupported) {
		t.Fatalf("Check = %v, want ErrNotSupported", err)
	}
	for _, want := range []string{"CONFIG_GENEVE", "apt-get install -y --no-install-recommends wireguard-tools"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %q does not mention %q", err, want)
		}
	}
}

// linkState lists the links of a namespace as "name mtu" lines.
func linkState(t *testing.T, ep *testbed.Endpoint) []string {
	t.Helper()
	links, err := ep.NL.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range links {
		lines = append(lines, l.Attrs().Name+" "+l.Type())
	}
	return lines
}

// TestMethodsCarryTraffic sets up every host-kernel method in a real
// testbed, sends one second of iperf3 through it, and tears it down.
func TestMethodsCarryTraffic(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 not installed: apt-get install -y --no-install-recommends iperf3")
	}
	for _, m := range []method.Method{method.Native{}, method.VXLAN{}, method.SRv6{}} {
		for _, family := range m.Families() {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				l := testbedtest.New(t, 1500)
				env := &method.Env{
					A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(family),
					Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir,
				}
				before := [][]string{linkState(t, l.A), linkState(t, l.B)}
				ctx := context.Background()
				path, err := m.Setup(ctx, env)
				if err != nil {
					_ = m.Teardown(ctx, env)
					t.Fatalf("Setup: %v", err)
				}
				for _, side := range []string{"a", "b"} {
					ep := l.A
					if side == "b" {
						ep = l.B
					}
					for _, d := range path.Devices[side] {
						link, err := ep.NL.LinkByName(d)
						if err != nil {
							t.Fatalf("device %s on %s: %v", d, side, err)
						}
						if d != ep.Dev && link.Attrs().MTU != env.OverlayMTU {
							t.Errorf("%s MTU = %d, want overlay MTU %d", d, link.Attrs().MTU, env.OverlayMTU)
						}
					}
				}
				srv := l.B.Command(ctx, "iperf3", "-s", "-1", "-B", path.B.String(), "-p", "5201")
				if err := l.B.Start(srv); err != nil {
					t.Fatal(err)
				}
				var out []byte
				for try := 0; try < 20; try++ {
					out, err = l.A.Run(ctx, "iperf3", "-c", path.B.String(), "-p", "5201", "-t", "1", "-J")
					if err == nil || !strings.Contains(string(out), "Connection refused") {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if err != nil {
					t.Fatalf("iperf3 through %s: %v", m.Name(), err)
				}
				if !strings.Contains(string(out), `"sum_received"`) {
					t.Errorf("iperf3 output has no sum_received:\n%s", out)
				}
				_ = srv.Wait()
				l.B.Forget(srv)
				if err := m.Teardown(ctx, env); err != nil {
					t.Errorf("Teardown: %v", err)
				}
				if err := m.Teardown(ctx, env); err != nil {
					t.Errorf("second Teardown: %v", err)
				}
				after := [][]string{linkState(t, l.A), linkState(t, l.B)}
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("links after teardown (-before +after):\n%s", diff)
				}
			})
		}
	}
}
