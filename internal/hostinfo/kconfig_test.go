package hostinfo

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testdata/config-6.18-excerpt holds the lines tunbench cares about from
// the development machine's /proc/config.gz (a 6.18 kernel without
// loadable modules).
func TestParseKernelConfigCaptured(t *testing.T) {
	cfg := ParseKernelConfig(readTestdata(t, "config-6.18-excerpt"))
	for opt, want := range map[string]bool{
		"CONFIG_VXLAN": true, "CONFIG_VETH": true, "CONFIG_TUN": true, "CONFIG_IPV6_SEG6_LWTUNNEL": true,
		"CONFIG_BPF_SYSCALL": true, "CONFIG_XFRM_USER": true, "CONFIG_NET_CLS_BPF": true,
		"CONFIG_GENEVE": false, "CONFIG_WIREGUARD": false, "CONFIG_INET_ESP": false, "CONFIG_OPENVSWITCH": false,
		"CONFIG_NET_IPIP": false, "CONFIG_IPV6_TUNNEL": false, "CONFIG_MODULES": false,
		// Not even mentioned: they depend on NET_IPGRE_DEMUX, which is off.
		"CONFIG_NET_IPGRE": false, "CONFIG_IPV6_GRE": false,
	} {
		if got := HasKernelFeature(cfg, opt); got != want {
			t.Errorf("HasKernelFeature(%s) = %v, want %v", opt, got, want)
		}
	}
	if !HasKernelFeature(cfg, "VXLAN") {
		t.Error("HasKernelFeature without the CONFIG_ prefix failed")
	}
	for opt, want := range map[string]string{
		"CONFIG_GENEVE":          "n",
		"CONFIG_LOCALVERSION":    "-fc-v595",
		"CONFIG_CC_VERSION_TEXT": "gcc (GCC) 15.3.0",
	} {
		if cfg[opt] != want {
			t.Errorf("%s = %q, want %q", opt, cfg[opt], want)
		}
	}
	if _, ok := cfg["CONFIG_NET_IPGRE"]; ok {
		t.Error("an option the file does not mention is present")
	}
}

func TestHasKernelFeatureModule(t *testing.T) {
	cfg := ParseKernelConfig([]byte("CONFIG_GENEVE=m\nCONFIG_HZ=250\n"))
	if !HasKernelFeature(cfg, "CONFIG_GENEVE") {
		t.Error("=m does not count")
	}
	if HasKernelFeature(cfg, "CONFIG_HZ") {
		t.Error("a numeric option counts as a feature")
	}
}

func TestLoadKernelConfigFallbacks(t *testing.T) {
	excerpt := readTestdata(t, "config-6.18-excerpt")
	want := ParseKernelConfig(excerpt)
	dir := t.TempDir()
	gz := filepath.Join(dir, "config.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(excerpt)
	zw.Close()
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	boot := filepath.Join(dir, "config-6.18.44")
	if err := os.WriteFile(boot, []byte("CONFIG_GENEVE=m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")

	got, err := loadKernelConfig(gz, boot)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("from config.gz (-want +got):\n%s", diff)
	}
	got, err = loadKernelConfig(missing, boot)
	if err != nil || got["CONFIG_GENEVE"] != "m" {
		t.Errorf("from /boot fallback: %v, %v", got, err)
	}
	if _, err := loadKernelConfig(missing, missing); !errors.Is(err, ErrNoKernelConfig) {
		t.Errorf("with neither file: err = %v, want ErrNoKernelConfig", err)
	}
	if err := os.WriteFile(gz, excerpt, 0o644); err != nil { // not gzip
		t.Fatal(err)
	}
	if _, err := loadKernelConfig(gz, boot); err == nil {
		t.Error("a corrupt config.gz loaded without error")
	}
}

func TestLoadKernelConfigHost(t *testing.T) {
	cfg, err := LoadKernelConfig()
	if errors.Is(err, ErrNoKernelConfig) {
		t.Skip("this kernel exposes no configuration")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !HasKernelFeature(cfg, "CONFIG_NET") {
		t.Errorf("host kernel config lacks CONFIG_NET (%d options read)", len(cfg))
	}
}
