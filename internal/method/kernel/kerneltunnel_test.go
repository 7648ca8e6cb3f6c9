package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// The kernel tunnel methods: geneve, gre, gretap, ipip, ip6ip6, ip6gre.
func kernelTunnels() []method.Method {
	return []method.Method{kernel.Geneve{}, kernel.GRE{}, kernel.Gretap{}, kernel.IPIP{}, kernel.IP6IP6{}, kernel.IP6GRE{}}
}

// TestKernelTunnelOverhead checks the arithmetic of each overhead and the
// overlay MTU it gives.
func TestKernelTunnelOverhead(t *testing.T) {
	tests := []struct {
		m        method.Method
		family   string
		underlay int
		overlay  int
	}{
		{kernel.Geneve{}, method.IPv4, 1500, 1450},
		{kernel.Geneve{}, method.IPv6, 1500, 1430},
		{kernel.Geneve{}, method.IPv4, 9000, 8950},
		{kernel.GRE{}, method.IPv4, 1500, 1476},
		{kernel.GRE{}, method.IPv6, 1500, 1476},
		{kernel.Gretap{}, method.IPv4, 1500, 1458},
		{kernel.Gretap{}, method.IPv6, 1500, 1438},
		{kernel.IPIP{}, method.IPv4, 1500, 1480},
		{kernel.IP6IP6{}, method.IPv6, 1500, 1460},
		{kernel.IP6IP6{}, method.IPv6, 1280, 1240},
		{kernel.IP6GRE{}, method.IPv4, 1500, 1456},
		{kernel.IP6GRE{}, method.IPv6, 1500, 1456},
		{kernel.IP6GRE{}, method.IPv6, 512, 468},
	}
	for _, tt := range tests {
		if got := tt.underlay - tt.m.Overhead(tt.family); got != tt.overlay {
			t.Errorf("%s/%s: overlay MTU over %d = %d, want %d", tt.m.Name(), tt.family, tt.underlay, got, tt.overlay)
		}
	}
}

func TestKernelTunnelDescriptions(t *testing.T) {
	wantFamilies := map[string]string{
		"geneve": "ipv4 ipv6", "gre": "ipv4 ipv6", "gretap": "ipv4 ipv6",
		"ipip": "ipv4", "ip6ip6": "ipv6", "ip6gre": "ipv4 ipv6",
	}
	wantKernel := map[string]string{
		"geneve": "CONFIG_GENEVE", "gre": "CONFIG_NET_IPGRE", "gretap": "CONFIG_NET_IPGRE CONFIG_IPV6_GRE",
		"ipip": "CONFIG_NET_IPIP", "ip6ip6": "CONFIG_IPV6_TUNNEL", "ip6gre": "CONFIG_IPV6_GRE",
	}
	r := method.NewRegistry(kernelTunnels()...) // names are unique
	for _, m := range r.All() {
		if got := strings.Join(m.Families(), " "); got != wantFamilies[m.Name()] {
			t.Errorf("%s families %q, want %q", m.Name(), got, wantFamilies[m.Name()])
		}
		var opts []string
		for _, req := range m.Requirements() {
			opts = append(opts, req.Kernel)
		}
		if got := strings.Join(opts, " "); got != wantKernel[m.Name()] {
			t.Errorf("%s requires %q, want %q", m.Name(), got, wantKernel[m.Name()])
		}
		if m.Implementation() == "" {
			t.Errorf("%s has no implementation description", m.Name())
		}
	}
}

// TestKernelTunnelOptions checks option validation, which happens before
// anything is created (so a nil testbed is fine).
func TestKernelTunnelOptions(t *testing.T) {
	tests := []struct {
		m       method.Method
		family  string
		opts    map[string]string
		wantErr string
	}{
		{kernel.Geneve{}, method.IPv4, map[string]string{"vni": "0"}, `option vni="0"`},
		{kernel.Geneve{}, method.IPv4, map[string]string{"vni": "16777216"}, `option vni="16777216"`},
		{kernel.Geneve{}, method.IPv4, map[string]string{"key": "1"}, `geneve: unknown option "key": valid options are vni`},
		{kernel.GRE{}, method.IPv4, map[string]string{"key": "42"}, `gre: unknown option "key": it takes no options`},
		{kernel.Gretap{}, method.IPv4, map[string]string{"key": "0"}, `option key="0"`},
		{kernel.Gretap{}, method.IPv6, map[string]string{"key": "4294967296"}, `option key="4294967296"`},
		{kernel.Gretap{}, method.IPv4, map[string]string{"key": "nvgre"}, `option key="nvgre"`},
		{kernel.Gretap{}, method.IPv4, map[string]string{"vni": "42", "ttl": "1"}, `gretap: unknown option "ttl": valid options are key`},
		{kernel.IPIP{}, method.IPv6, nil, "ipip carries only ipv4, not ipv6"},
		{kernel.IP6IP6{}, method.IPv4, nil, "ip6ip6 carries only ipv6, not ipv4"},
		{kernel.IP6GRE{}, method.IPv6, map[string]string{"encaplimit": "4"}, `ip6gre: unknown option "encaplimit": it takes no options`},
	}
	for _, tt := range tests {
		env := &method.Env{Family: tt.family, Options: tt.opts}
		_, err := tt.m.Setup(context.Background(), env)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s %v: Setup error %v, want one containing %q", tt.m.Name(), tt.opts, err, tt.wantErr)
		}
	}
}

// TestKernelTunnelNotSupported runs Setup of every tunnel on a kernel
// without its option: it must fail with ErrNotSupported naming the option,
// and Teardown must still succeed. Where this kernel lacks the option (all
// of them on the host) the kernel itself refuses; where it has it (or has
// no readable config), the refusal is faked (Env.Faults.KernelLacks) the
// way rtnetlink answers for a link kind it does not know, so the refusal
// path runs on any kernel.
func TestKernelTunnelNotSupported(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	cfg, cfgErr := hostinfo.LoadKernelConfig()
	for _, m := range kernelTunnels() {
		for _, family := range m.Families() {
			option := ""
			for _, r := range m.Requirements() {
				// gretap is in CONFIG_NET_IPGRE, ip6gretap in CONFIG_IPV6_GRE.
				if m.Name() == "gretap" && r.Kernel != map[string]string{method.IPv4: "CONFIG_NET_IPGRE", method.IPv6: "CONFIG_IPV6_GRE"}[family] {
					continue
				}
				if r.Kernel != "" && option == "" {
					option = r.Kernel
				}
			}
			if option == "" {
				t.Fatalf("%s/%s requires no kernel option", m.Name(), family)
			}
			fake := cfgErr != nil || hostinfo.HasKernelFeature(cfg, option)
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				t.Parallel()
				l := testbedtest.New(t, 1500)
				env := &method.Env{A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(family), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
				if fake {
					env.Faults = &method.Faults{KernelLacks: []string{option}}
					t.Logf("this kernel has %s (or no readable config): its refusal is faked", option)
				}
				_, err := m.Setup(context.Background(), env)
				if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks "+option) {
					t.Errorf("Setup error %v, want ErrNotSupported naming %s", err, option)
				}
				if err := m.Teardown(context.Background(), env); err != nil {
					t.Errorf("Teardown after failed Setup: %v", err)
				}
			})
		}
	}
}
