package method_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
)

func TestOverheadAndMTU(t *testing.T) {
	tests := []struct {
		m        method.Method
		family   string
		underlay int
		overlay  int
	}{
		{method.Native{}, method.IPv4, 1500, 1500},
		{kernel.VXLAN{}, method.IPv4, 1500, 1450},
		{kernel.VXLAN{}, method.IPv4, 9000, 8950},
		{kernel.VXLAN{}, method.IPv6, 1500, 1430},
		{kernel.SRv6{}, method.IPv4, 1500, 1436},
		{kernel.SRv6{}, method.IPv6, 9000, 8936},
	}
	for _, tt := range tests {
		if got := tt.underlay - tt.m.Overhead(tt.family); got != tt.overlay {
			t.Errorf("%s/%s: overlay MTU over %d = %d, want %d", tt.m.Name(), tt.family, tt.underlay, got, tt.overlay)
		}
	}
}

func TestRegistry(t *testing.T) {
	r := method.NewRegistry(kernel.VXLAN{}, method.Native{}, kernel.SRv6{})
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

func (f fakeProbe) HasKernel(o, _ string) (bool, error) { return f.kernel[o], nil }
func (f fakeProbe) HasProgram(p string) bool            { return f.programs[p] }

func TestCheck(t *testing.T) {
	p := fakeProbe{kernel: map[string]bool{"CONFIG_VXLAN": true}}
	if err := method.Check(p, kernel.VXLAN{}.Requirements()); err != nil {
		t.Errorf("vxlan with CONFIG_VXLAN: %v", err)
	}
	err := method.Check(p, []method.Requirement{{Kernel: "CONFIG_GENEVE", Module: "geneve"}, {Program: "wg", Package: "wireguard-tools"}})
	if !errors.Is(err, method.ErrNotSupported) {
		t.Fatalf("Check = %v, want ErrNotSupported", err)
	}
	for _, want := range []string{"CONFIG_GENEVE", "apt-get install -y --no-install-recommends wireguard-tools"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %q does not mention %q", err, want)
		}
	}
	// Several missing kernel options: one fix line for all of them.
	err = method.Check(p, []method.Requirement{{Kernel: "CONFIG_NET_FOU", Module: "fou"}, {Program: "wg", Package: "wireguard-tools"}, {Kernel: "CONFIG_NET_IPIP", Module: "ipip"}})
	want := "CONFIG_NET_FOU, CONFIG_NET_IPIP missing (fix: a kernel with all of them, or the kernel lab: --testbed vm); " +
		"wg missing (fix: apt-get install -y --no-install-recommends wireguard-tools)"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Check = %v, want it to end %q", err, want)
	}
}

// TestMethodsCarryTraffic sets up every host-kernel method in a real
// testbed, sends one second of iperf3 through it, and tears it down.
func TestMethodsCarryTraffic(t *testing.T) {
	for _, m := range []method.Method{method.Native{}, kernel.VXLAN{}, kernel.SRv6{}} {
		for _, family := range m.Families() {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				l, env, path := methodtest.Setup(t, m, family, 1500, nil)
				methodtest.DeviceMTU(t, l, path, env.OverlayMTU)
				methodtest.Ping(t, l, path)
				methodtest.PingFullSize(t, l, env, path)
				methodtest.Iperf3(t, l, path, 1)
			})
		}
	}
}
