package podnet_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/podnet"
	"github.com/tunbench/tunbench/internal/testbed"
)

func TestParseConf(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"10-bridge.conflist", "CNI tunbench-k8slab (bridge, host-local)"},
		{"10-flannel.conflist", "CNI cbr0 (flannel, portmap)"},
		{"87-podman-bridge.conf", "CNI podman (bridge, host-local)"},
	} {
		data, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := podnet.ParseConf(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got := c.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.file, got, tc.want)
		}
	}
	if _, err := podnet.ParseConf([]byte(`{"cniVersion": "1.0.0"}`)); err == nil || !strings.Contains(err.Error(), "names no network") {
		t.Errorf("empty configuration: %v", err)
	}
}

func TestParsePlugin(t *testing.T) {
	data, err := os.ReadFile("testdata/plugin-bridge-debian.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := podnet.ParsePlugin("bridge", string(data))
	want := podnet.Plugin{Type: "bridge", Path: "/usr/lib/cni/bridge", About: "CNI bridge plugin version unknown",
		Package: "containernetworking-plugins", Version: "1.1.1+ds1-3+b5"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(podnet.Plugin{})); diff != "" {
		t.Errorf("plugin (-want +got):\n%s", diff)
	}
	if s := got.String(); s != "bridge containernetworking-plugins 1.1.1+ds1-3+b5" {
		t.Errorf("String() = %q", s)
	}
	if s := podnet.ParsePlugin("cilium-cni", "").String(); s != "cilium-cni (not found)" {
		t.Errorf("missing plugin: %q", s)
	}
}

// TestSetupRefusesHostEndpoints: on a testbed without pods the method
// says where it runs instead of measuring the host network.
func TestSetupRefusesHostEndpoints(t *testing.T) {
	env := &method.Env{A: &testbed.Endpoint{Side: "a"}, B: &testbed.Endpoint{Side: "b"}, Family: method.IPv4}
	_, err := podnet.PodNetwork{}.Setup(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "not in a pod: pod-network runs on testbed kubernetes") {
		t.Errorf("Setup on host endpoints: %v", err)
	}
}

func TestOptions(t *testing.T) {
	if _, err := method.ParseOptions(podnet.PodNetwork{}, map[string]string{"cni_conf_dir": "relative/dir"}); err == nil || !strings.Contains(err.Error(), "want an absolute path") {
		t.Errorf("relative conf dir: %v", err)
	}
	v, err := method.ParseOptions(podnet.PodNetwork{}, map[string]string{"cni_bin_dir": "/opt/cni/bin/"})
	if err != nil || v.String("cni_bin_dir") != "/opt/cni/bin" || v.String("cni_conf_dir") != podnet.DefaultConfDir {
		t.Errorf("options: %v %v", v, err)
	}
}

// TestParseFlannel reads FlannelScript's output captured on a node of the
// test cluster running Flannel's vxlan backend (kubetest's
// TestClusterFlannel with TUNBENCH_FLANNEL_SAVE).
func TestParseFlannel(t *testing.T) {
	data, err := os.ReadFile("testdata/flannel-vxlan.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, ok, err := podnet.ParseFlannel(string(data))
	if err != nil || !ok {
		t.Fatalf("ParseFlannel: ok %v, %v", ok, err)
	}
	want := podnet.Flannel{Backend: "vxlan", Network: "198.19.208.0/20", Subnet: "198.19.209.1/24", MTU: 1450, IPMasq: true,
		Device: "flannel.1", Kind: "vxlan", DeviceMTU: 1450, VNI: 1, Port: 8472, Encryption: "none"}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("flannel (-want +got):\n%s", diff)
	}
	if s := f.String(); s != "flannel vxlan (device flannel.1 vxlan id 1 port 8472 mtu 1450, pod MTU 1450, encryption none, subnet 198.19.209.1/24 of 198.19.208.0/20)" {
		t.Errorf("String() = %q", s)
	}
	if _, ok, err := podnet.ParseFlannel(""); ok || err != nil {
		t.Errorf("a node without Flannel: ok %v, %v", ok, err)
	}
	lease, _, _ := strings.Cut(string(data), "== net-conf.json")
	if _, ok, err := podnet.ParseFlannel(lease + "== no flanneld\n"); !ok || err == nil || !strings.Contains(err.Error(), "no flanneld process") {
		t.Errorf("a lease without its flanneld: ok %v, %v", ok, err)
	}
	// The vxlan backend without its device is an error, not a guess.
	noDev := strings.Replace(string(data), `"ifname":"flannel.1"`, `"ifname":"other.1"`, 1)
	if _, _, err := podnet.ParseFlannel(noDev); err == nil || !strings.Contains(err.Error(), "no vxlan device flannel.1") {
		t.Errorf("vxlan without flannel.1: %v", err)
	}
}

// TestParseFlannelHostGW: host-gw has no overlay device (captured like
// flannel-vxlan.txt, with the host-gw backend).
func TestParseFlannelHostGW(t *testing.T) {
	data, err := os.ReadFile("testdata/flannel-host-gw.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, ok, err := podnet.ParseFlannel(string(data))
	if err != nil || !ok {
		t.Fatalf("ParseFlannel: ok %v, %v", ok, err)
	}
	if s := f.String(); !strings.HasPrefix(s, "flannel host-gw (no overlay device, pod MTU 1500, encryption none, subnet ") {
		t.Errorf("String() = %q", s)
	}
}
