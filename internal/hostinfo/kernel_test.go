package hostinfo

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
)

// mapFiles is another host's files, as Files sees them.
type mapFiles map[string]string

func (m mapFiles) ReadFile(name string) ([]byte, error) {
	s, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return []byte(s), nil
}

func (m mapFiles) FileNames(dir string) ([]string, error) {
	var out []string
	for p := range m {
		if strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, &fs.PathError{Op: "walk", Path: dir, Err: fs.ErrNotExist}
	}
	slices.Sort(out)
	return out, nil
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadKernelOfAnotherHost: the config and modules of a host read
// through its Files follow LoadKernelConfig's and FeatureUsable's rules:
// /proc/config.gz first, else /boot/config-<release>; "=m" counts when
// the module is loaded, listed in modules.dep, or (without modules.dep)
// found under /lib/modules/<release>.
func TestReadKernelOfAnotherHost(t *testing.T) {
	const rel = "6.1.0-remote"
	config := "CONFIG_VXLAN=y\nCONFIG_GENEVE=m\nCONFIG_WIREGUARD=m\nCONFIG_NET_IPGRE=m\n# CONFIG_NET_IPIP is not set\n"
	base := mapFiles{
		"/proc/modules": "wireguard 118784 0 - Live 0x0\n",
	}
	withDep := func(m mapFiles) mapFiles {
		m = maps.Clone(m)
		m["/lib/modules/"+rel+"/modules.dep"] = "kernel/drivers/net/geneve.ko.xz: kernel/net/ipv4/udp_tunnel.ko.xz\n"
		return m
	}
	walked := func(m mapFiles) mapFiles {
		m = maps.Clone(m)
		m["/lib/modules/"+rel+"/kernel/drivers/net/geneve.ko.zst"] = ""
		return m
	}
	fromGz := maps.Clone(base)
	fromGz["/proc/config.gz"] = gzipped(t, config)
	fromGz["/boot/config-"+rel] = "# CONFIG_VXLAN is not set\n" // ignored: config.gz comes first
	fromBoot := maps.Clone(base)
	fromBoot["/boot/config-"+rel] = config
	for name, files := range map[string]mapFiles{
		"config.gz, modules.dep": withDep(fromGz),
		"boot, modules.dep":      withDep(fromBoot),
		"boot, no modules.dep":   walked(fromBoot),
	} {
		k, err := ReadKernel(files, rel)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !k.Known() {
			t.Fatalf("%s: config not read", name)
		}
		for option, want := range map[string]bool{
			"CONFIG_VXLAN":     true,  // built in
			"CONFIG_GENEVE":    true,  // installed
			"CONFIG_WIREGUARD": true,  // loaded
			"CONFIG_NET_IPGRE": false, // =m, neither loaded nor installed
			"CONFIG_NET_IPIP":  false, // not set
			"CONFIG_IPV6_GRE":  false, // not mentioned
		} {
			module := map[string]string{"CONFIG_VXLAN": "vxlan", "CONFIG_GENEVE": "geneve", "CONFIG_WIREGUARD": "wireguard",
				"CONFIG_NET_IPGRE": "ip_gre", "CONFIG_NET_IPIP": "ipip", "CONFIG_IPV6_GRE": "ip6_gre"}[option]
			if got, err := k.Usable(option, module); got != want || err != nil {
				t.Errorf("%s: Usable(%s) = %v, %v; want %v", name, option, got, err, want)
			}
		}
	}

	// No config at all: it cannot tell, and says yes.
	k, err := ReadKernel(mapFiles{}, rel)
	if err != nil || k.Known() {
		t.Fatalf("without a config: %+v, %v; want unknown, no error", k, err)
	}
	if ok, err := k.Usable("CONFIG_GENEVE", "geneve"); !ok || err != nil {
		t.Errorf("without a config: Usable = %v, %v; want true", ok, err)
	}
	// A corrupt config.gz is an error, not a kernel without options.
	if _, err := ReadKernel(mapFiles{"/proc/config.gz": "not gzip"}, rel); err == nil {
		t.Error("a corrupt config.gz read without error")
	}
}
