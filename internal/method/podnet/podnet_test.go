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
