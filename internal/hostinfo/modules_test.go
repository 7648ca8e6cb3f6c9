package hostinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeModules builds a /lib/modules/<release> tree and a /proc/modules file
// in the layout of a Debian kernel (xz-compressed modules).
func fakeModules(t *testing.T, withDep bool) Modules {
	t.Helper()
	root := t.TempDir()
	m := Modules{Dir: filepath.Join(root, "lib/modules/6.1.0-test"), ProcModules: filepath.Join(root, "proc-modules")}
	for _, f := range []string{"kernel/drivers/net/geneve.ko.xz", "kernel/net/ipv4/ip_gre.ko.xz", "kernel/net/ipv4/gre.ko.xz"} {
		p := filepath.Join(m.Dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if withDep {
		dep := "kernel/drivers/net/geneve.ko.xz: kernel/net/ipv4/udp_tunnel.ko.xz\n" +
			"kernel/net/ipv4/ip_gre.ko.xz: kernel/net/ipv4/gre.ko.xz\n" +
			"kernel/net/ipv4/gre.ko.xz:\n"
		if err := os.WriteFile(filepath.Join(m.Dir, "modules.dep"), []byte(dep), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loaded := "wireguard 118784 0 - Live 0x0000000000000000\ncurve25519_x86_64 36864 1 wireguard, Live 0x0000000000000000\n"
	if err := os.WriteFile(m.ProcModules, []byte(loaded), 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFeatureUsable(t *testing.T) {
	cfg := ParseKernelConfig([]byte(strings.Join([]string{
		"CONFIG_VXLAN=y", "CONFIG_GENEVE=m", "CONFIG_NET_IPGRE=m", "CONFIG_WIREGUARD=m",
		"CONFIG_OPENVSWITCH=m", "# CONFIG_NET_IPIP is not set", "CONFIG_FROB=m",
	}, "\n")))
	for _, withDep := range []bool{true, false} {
		m := fakeModules(t, withDep)
		for _, tc := range []struct {
			option, module string
			want           bool
		}{
			{"CONFIG_VXLAN", "", true},                   // built in: no module needed
			{"CONFIG_GENEVE", "geneve", true},            // installed file
			{"NET_IPGRE", "ip_gre", true},                // ip_gre.ko.xz
			{"CONFIG_WIREGUARD", "wireguard", true},      // loaded
			{"CONFIG_OPENVSWITCH", "openvswitch", false}, // =m but neither loaded nor installed
			{"CONFIG_NET_IPIP", "ipip", false},           // not set
			{"CONFIG_IPV6_GRE", "ip6_gre", false},        // not mentioned
			{"CONFIG_FROB", "ip-gre", true},              // '-' == '_'
		} {
			got, err := m.FeatureUsable(cfg, tc.option, tc.module)
			if err != nil || got != tc.want {
				t.Errorf("modules.dep=%v: FeatureUsable(%s) = %v, %v; want %v", withDep, tc.option, got, err, tc.want)
			}
		}
		if _, err := m.FeatureUsable(cfg, "CONFIG_FROB", ""); err == nil {
			t.Error("=m option with unknown module name gave no error")
		}
	}
}

// A kernel without module support has neither /proc/modules nor a
// modules directory; "=m" options are then unusable, not errors.
func TestFeatureUsableWithoutModules(t *testing.T) {
	root := t.TempDir()
	m := Modules{Dir: filepath.Join(root, "none"), ProcModules: filepath.Join(root, "no-proc-modules")}
	cfg := map[string]string{"CONFIG_GENEVE": "m", "CONFIG_VXLAN": "y"}
	if ok, err := m.FeatureUsable(cfg, "CONFIG_GENEVE", "geneve"); ok || err != nil {
		t.Errorf("GENEVE=m without modules: %v, %v; want false, nil", ok, err)
	}
	if ok, err := m.FeatureUsable(cfg, "CONFIG_VXLAN", ""); !ok || err != nil {
		t.Errorf("VXLAN=y without modules: %v, %v; want true, nil", ok, err)
	}
}

func TestHostModules(t *testing.T) {
	m, err := HostModules()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release()
	if err != nil {
		t.Fatal(err)
	}
	if m.Dir != "/lib/modules/"+rel || m.ProcModules != "/proc/modules" {
		t.Errorf("HostModules() = %+v", m)
	}
}
