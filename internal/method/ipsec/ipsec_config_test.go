package ipsec

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
)

var updateIPsecGolden = flag.Bool("update-ipsec", false, "rewrite testdata/ipsec_*.conf from the generators")

func TestParseIPsecOptions(t *testing.T) {
	for _, tt := range []struct {
		opts    map[string]string
		ecmp    bool
		want    ipsecOptions
		wantErr string
	}{
		{opts: nil, want: ipsecOptions{Mode: "tunnel", Cipher: cipherAESGCM, Datapath: ipsecAuto, Tunnels: 1}},
		{opts: nil, ecmp: true, want: ipsecOptions{Mode: "tunnel", Cipher: cipherAESGCM, Datapath: ipsecAuto, Tunnels: 2}},
		{
			opts: map[string]string{"mode": "transport", "cipher": "chacha20poly1305", "natt": "on", "datapath": "xfrm"},
			want: ipsecOptions{Mode: "transport", Cipher: cipherChaCha20, NATT: true, Datapath: ipsecXfrm, Tunnels: 1},
		},
		{opts: map[string]string{"tunnels": "4"}, ecmp: true, want: ipsecOptions{Mode: "tunnel", Cipher: cipherAESGCM, Datapath: ipsecAuto, Tunnels: 4}},
		{opts: map[string]string{"tunnels": "9"}, ecmp: true, wantErr: "ipsec-ecmp: option tunnels=\"9\": want an integer from 1 to 8"},
		{opts: map[string]string{"tunnels": "2"}, wantErr: "ipsec: unknown option \"tunnels\": valid options are cipher, datapath, mode, natt"},
		{opts: map[string]string{"mode": "transport"}, ecmp: true, wantErr: "ipsec-ecmp: unknown option \"mode\": valid options are cipher, datapath, natt, tunnels"},
		{opts: map[string]string{"cipher": "aes128"}, wantErr: "ipsec: option cipher=\"aes128\": want one of aes256gcm, chacha20poly1305"},
		{opts: map[string]string{"natt": "yes"}, wantErr: "ipsec: option natt=\"yes\": want one of off, on"},
	} {
		got, err := parseIPsecOptions(tt.opts, tt.ecmp)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parseIPsecOptions(%v, %v) error = %v, want %q", tt.opts, tt.ecmp, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseIPsecOptions(%v, %v): %v", tt.opts, tt.ecmp, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseIPsecOptions(%v, %v) (-want +got):\n%s", tt.opts, tt.ecmp, diff)
		}
	}
}

func TestIPsecOverhead(t *testing.T) {
	for _, tt := range []struct {
		family, mode string
		udp          bool
		want         int
	}{
		{method.IPv4, "tunnel", false, 57},
		{method.IPv4, "tunnel", true, 65},
		{method.IPv6, "tunnel", false, 77},
		{method.IPv6, "tunnel", true, 85},
		{method.IPv4, "transport", false, 37},
		{method.IPv6, "transport", true, 45},
	} {
		if got := ipsecOverhead(tt.family, tt.mode, tt.udp); got != tt.want {
			t.Errorf("ipsecOverhead(%s, %s, udp %v) = %d, want %d", tt.family, tt.mode, tt.udp, got, tt.want)
		}
	}
	// The methods report the default options' worst case: libipsec's UDP.
	for _, m := range []interface{ Overhead(string) int }{NewIPsec(), NewIPsecECMP()} {
		if got := m.Overhead(method.IPv4); got != 65 {
			t.Errorf("Overhead(ipv4) = %d, want 65", got)
		}
		if got := m.Overhead(method.IPv6); got != 85 {
			t.Errorf("Overhead(ipv6) = %d, want 85", got)
		}
	}
}

func TestIPsecMTU(t *testing.T) {
	for _, tt := range []struct {
		dp      string
		overlay int
		want    int
		variant string
	}{
		{ipsecLibipsec, 1435, 1400, "kernel-libipsec, ESP in UDP 4500 (always), TUN MTU 1400 (capped from 1435)"},
		{ipsecLibipsec, 1300, 1300, "kernel-libipsec, ESP in UDP 4500 (always)"},
		{ipsecXfrm, 8935, 8935, "kernel xfrm, ESP"},
	} {
		env := &method.Env{OverlayMTU: tt.overlay}
		got := ipsecMTU(env, tt.dp)
		if got != tt.want {
			t.Errorf("ipsecMTU(%s, %d) = %d, want %d", tt.dp, tt.overlay, got, tt.want)
		}
		if v := ipsecVariant(tt.dp, tt.dp == ipsecLibipsec, got, tt.overlay); v != tt.variant {
			t.Errorf("ipsecVariant(%s) = %q, want %q", tt.dp, v, tt.variant)
		}
	}
}

// TestIPsecConfigGolden compares the generated strongswan.conf and
// swanctl.conf with testdata; -update-ipsec rewrites them.
func TestIPsecConfigGolden(t *testing.T) {
	const fakePSK = "0sTk9UQS1SRUFMLUtFWS1URVNULU9OTFktMDEyMzQ1Njc4OQ=="
	for _, tt := range []struct {
		file string
		text string
	}{
		{"ipsec_strongswan_libipsec.conf", charonConfig{Datapath: ipsecLibipsec, Port: 500, PortNATT: 4500, RouteMTU: 1400, InstallRoutes: true, Table: runTable{22042, 219}, Family: method.IPv4}.render()},
		{"ipsec_strongswan_xfrm_ecmp.conf", charonConfig{Datapath: ipsecXfrm, Port: 500, PortNATT: 4500, Table: runTable{22042, 219}, Family: method.IPv4}.render()},
		{"ipsec_strongswan_libipsec_ecmp.conf", charonConfig{Datapath: ipsecLibipsec, Port: 0, PortNATT: 4501, RouteMTU: 1400, InstallRoutes: true, Table: runTable{22042, 219}, Family: method.IPv6}.render()},
		{"ipsec_swanctl_tunnel.conf", swanctlConfig{
			Name: "tunbench", LocalAddr: "198.18.0.1", RemoteAddr: "198.18.0.2",
			LocalID: "tunbench-a", RemoteID: "tunbench-b", Encap: true,
			Children: []swanctlChild{{Name: "tunbench", Mode: "tunnel", LocalTS: "198.19.0.1/32", RemoteTS: "198.19.0.2/32", ESPProposal: espProposal(cipherAESGCM)}},
			PSK:      fakePSK,
		}.render()},
		{"ipsec_swanctl_xfrm_ecmp.conf", renderSwanctl([]swanctlConfig{
			{
				Name: "t0", LocalAddr: "2001:2::2", RemoteAddr: "2001:2::1",
				LocalID: "tunbench-b-t0", RemoteID: "tunbench-a-t0",
				Children: []swanctlChild{{Name: "t0", Mode: "tunnel", LocalTS: "2001:2:0:1::2/128", RemoteTS: "2001:2:0:1::1/128", ESPProposal: espProposal(cipherChaCha20), IfID: 1, NoRekey: true}},
				PSK:      fakePSK,
			},
			{
				Name: "t1", LocalAddr: "2001:2::2", RemoteAddr: "2001:2::1",
				LocalID: "tunbench-b-t1", RemoteID: "tunbench-a-t1",
				Children: []swanctlChild{{Name: "t1", Mode: "tunnel", LocalTS: "2001:2:0:1::2/128", RemoteTS: "2001:2:0:1::1/128", ESPProposal: espProposal(cipherChaCha20), IfID: 2, NoRekey: true}},
				PSK:      fakePSK,
			},
		})},
		{"ipsec_swanctl_libipsec_ecmp.conf", swanctlConfig{
			Name: "t1", LocalAddr: "198.18.0.1", RemoteAddr: "198.18.0.2", RemotePort: 4501,
			LocalID: "tunbench-a", RemoteID: "tunbench-b", Encap: true,
			Children: []swanctlChild{{Name: "t1", Mode: "tunnel", LocalTS: "198.19.0.1/32", RemoteTS: "198.19.0.2/32", ESPProposal: espProposal(cipherAESGCM), NoRekey: true}},
			PSK:      fakePSK,
		}.render()},
	} {
		path := filepath.Join("testdata", tt.file)
		if *updateIPsecGolden {
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-ipsec to create it)", err)
		}
		if diff := cmp.Diff(string(want), tt.text); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.file, diff)
		}
	}
}

func TestCharonPlugins(t *testing.T) {
	for _, dp := range []string{ipsecLibipsec, ipsecXfrm} {
		p := strings.Join(charonPlugins(dp), " ")
		if !strings.Contains(p, " kdf ") {
			t.Errorf("%s: plugins %q lack kdf", dp, p)
		}
		lib, nl := strings.Index(p, "kernel-libipsec"), strings.Index(p, "kernel-netlink")
		if dp == ipsecLibipsec && (lib < 0 || lib > nl) {
			t.Errorf("%s: plugins %q: kernel-libipsec must come before kernel-netlink", dp, p)
		}
		if dp == ipsecXfrm && lib >= 0 {
			t.Errorf("%s: plugins %q load kernel-libipsec", dp, p)
		}
	}
}

func TestParseListSAs(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []ikeSA
	}{
		{"ipsec_list_sas_empty.txt", nil},
		{"ipsec_list_sas_libipsec_v6_a.txt", []ikeSA{{
			Name: "tunbench", State: "ESTABLISHED",
			LocalHost: "2001:2::1", LocalPort: 4500, RemoteHost: "2001:2::2", RemotePort: 4500,
			Children: []childSA{{
				Name: "tunbench", State: "INSTALLED", Mode: "TUNNEL", Protocol: "ESP", Encap: true,
				SPIIn: "ebad8ed1", SPIOut: "c248daa5", EncrAlg: "CHACHA20_POLY1305",
				BytesIn: 312, BytesOut: 312, PacketsIn: 3, PacketsOut: 3,
				LocalTS: []string{"2001:2:0:1::1/128"}, RemoteTS: []string{"2001:2:0:1::2/128"},
			}},
		}}},
		{"ipsec_list_sas_xfrm_transport.txt", []ikeSA{{
			Name: "tunbench", State: "ESTABLISHED",
			LocalHost: "198.18.0.1", LocalPort: 500, RemoteHost: "198.18.0.2", RemotePort: 500,
			Children: []childSA{{
				Name: "tunbench", State: "INSTALLED", Mode: "TRANSPORT", Protocol: "ESP",
				SPIIn: "cd5c44fd", SPIOut: "c37aacef", EncrAlg: "AES_GCM_16",
				BytesIn: 192, BytesOut: 192, PacketsIn: 3, PacketsOut: 3,
				LocalTS: []string{"198.18.0.1/32"}, RemoteTS: []string{"198.18.0.2/32"},
			}},
		}}},
		{"ipsec_list_sas_xfrm_ecmp.txt", []ikeSA{
			{
				Name: "t1", State: "ESTABLISHED",
				LocalHost: "2001:2::1", LocalPort: 500, RemoteHost: "2001:2::2", RemotePort: 500,
				Children: []childSA{{
					Name: "t1", State: "INSTALLED", Mode: "TUNNEL", Protocol: "ESP",
					SPIIn: "cba5227a", SPIOut: "cd1f23ea", EncrAlg: "AES_GCM_16",
					LocalTS: []string{"2001:2:0:1::1/128"}, RemoteTS: []string{"2001:2:0:1::2/128"},
				}},
			},
			{
				Name: "t0", State: "ESTABLISHED",
				LocalHost: "2001:2::1", LocalPort: 500, RemoteHost: "2001:2::2", RemotePort: 500,
				Children: []childSA{{
					Name: "t0", State: "INSTALLED", Mode: "TUNNEL", Protocol: "ESP",
					SPIIn: "cfdd39f3", SPIOut: "ce444120", EncrAlg: "AES_GCM_16",
					BytesIn: 312, BytesOut: 312, PacketsIn: 3, PacketsOut: 3,
					LocalTS: []string{"2001:2:0:1::1/128"}, RemoteTS: []string{"2001:2:0:1::2/128"},
				}},
			},
		}},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseListSAs(data)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.file, diff)
		}
	}
}

func TestParseListSAsErrors(t *testing.T) {
	for _, in := range []string{
		"list-sa event {\n  x {\n",     // truncated
		"}\n",                          // unbalanced
		"plugin 'x': failed to load\n", // not vici output
		"list-sa event {\n local-ts = [\n a\n}\n",         // list never closed
		"list-sa event {\n x {\n local-port = z\n }\n}\n", // bad number
	} {
		if _, err := parseListSAs([]byte(in)); err == nil {
			t.Errorf("parseListSAs(%q) succeeded, want an error", in)
		}
	}
}

func TestInstalledChild(t *testing.T) {
	sas := []ikeSA{{Children: []childSA{{Name: "t0", State: "REKEYED"}, {Name: "t1", State: "INSTALLED"}}}}
	if _, ok := installedChild(sas, "t0"); ok {
		t.Error("t0 REKEYED reported installed")
	}
	if c, ok := installedChild(sas, "t1"); !ok || c.Name != "t1" {
		t.Errorf("installedChild(t1) = %v, %v", c, ok)
	}
}

func TestNewPSK(t *testing.T) {
	a, err := newPSK()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newPSK()
	if a == b || !strings.HasPrefix(a, "0s") || len(a) != 2+44 {
		t.Errorf("newPSK() = %q, %q: want two different 0s-prefixed base64 32-byte keys", a, b)
	}
}

var _ = errors.New

// TestParseListSAsBothSides: the responder lists the same CHILD_SA with
// the SPIs swapped.
func TestParseListSAsBothSides(t *testing.T) {
	var sides [2]childSA
	for i, f := range []string{"ipsec_list_sas_libipsec_v6_a.txt", "ipsec_list_sas_libipsec_v6_b.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		sas, err := parseListSAs(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c, ok := installedChild(sas, "tunbench")
		if !ok {
			t.Fatalf("%s: no INSTALLED tunbench CHILD_SA in %+v", f, sas)
		}
		sides[i] = c
	}
	if sides[0].SPIIn != sides[1].SPIOut || sides[0].SPIOut != sides[1].SPIIn {
		t.Errorf("SPIs a in/out %s/%s, b in/out %s/%s: want them swapped", sides[0].SPIIn, sides[0].SPIOut, sides[1].SPIIn, sides[1].SPIOut)
	}
}

// The overhead the ceiling uses follows the options that change the
// framing (docs/methods.md, "Ceiling arithmetic").
func TestHeaderOverhead(t *testing.T) {
	for _, tc := range []struct {
		m       method.Method
		family  string
		opts    map[string]string
		variant string
		want    int
	}{
		{&IPsec{}, method.IPv4, map[string]string{"datapath": "xfrm"}, "kernel xfrm, ESP", 57},
		{&IPsec{}, method.IPv4, map[string]string{"datapath": "xfrm", "natt": "on"}, "kernel xfrm, ESP in UDP 4500", 65},
		{&IPsec{}, method.IPv4, map[string]string{"mode": "transport", "datapath": "xfrm"}, "kernel xfrm, ESP", 37},
		{&IPsec{}, method.IPv4, nil, "kernel-libipsec, ESP in UDP 4500 (always)", 65},
		{&IPsec{}, method.IPv6, map[string]string{"mode": "transport"}, "kernel-libipsec, ESP in UDP 4500 (always)", 45},
		{&IPsecECMP{}, method.IPv4, map[string]string{"datapath": "xfrm"}, "kernel xfrm, ESP", 57},
	} {
		if got := method.HeaderOverhead(tc.m, tc.family, tc.opts, tc.variant); got != tc.want {
			t.Errorf("%s %s %v %q: %d, want %d", tc.m.Name(), tc.family, tc.opts, tc.variant, got, tc.want)
		}
	}
}

// TestIPsecChildren: the plan of N CHILD_SAs is in index order, the
// measured one in the middle with the single tunnel's name and
// addresses, the others with the scale blocks' host addresses, each side
// seeing its own address as local.
func TestIPsecChildren(t *testing.T) {
	var got []string
	for _, ch := range ipsecChildren(method.IPv4, 3) {
		got = append(got, fmt.Sprintf("%s %s-%s b:%s-%s", ch.Name, ch.local("a"), ch.remote("a"), ch.local("b"), ch.remote("b")))
	}
	want := []string{
		"t0 198.19.128.0-198.19.128.1 b:198.19.128.1-198.19.128.0",
		"tunbench 198.19.0.1-198.19.0.2 b:198.19.0.2-198.19.0.1",
		"t2 198.19.128.4-198.19.128.5 b:198.19.128.5-198.19.128.4",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ipsecChildren(ipv4, 3) (-want +got):\n%s", diff)
	}
	if cs := ipsecChildren(method.IPv6, 1); len(cs) != 1 || cs[0].Name != "tunbench" || cs[0].A != method.OverlayA6.Addr() {
		t.Errorf("ipsecChildren(ipv6, 1) = %+v, want the single tunnel's", cs)
	}
	grown := ipsecChildOf(method.IPv6, 3, 1)
	if grown.Name != "t3" || grown.A.String() != "2001:2:0:8003::1" {
		t.Errorf("the grown CHILD_SA of 3 is %+v", grown)
	}
}

// TestMissingChildren reads list-sas output of three CHILD_SAs: none of
// them is missing, a fourth is, and so is one listed twice.
func TestMissingChildren(t *testing.T) {
	out, err := os.ReadFile("testdata/ipsec_list_sas_tunnels3.txt")
	if err != nil {
		t.Fatal(err)
	}
	sas, err := parseListSAs(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := missingChildren(sas, ipsecChildren(method.IPv4, 3)); m != nil {
		t.Errorf("missing %v of three installed", m)
	}
	if m := missingChildren(sas, ipsecChildren(method.IPv4, 4)); !slices.Equal(m, []string{"t1", "t3"}) {
		t.Errorf("missing %v of four (measured t2 = tunbench), want t1 t3", m)
	}
	twice := append(sas, sas...)
	if m := missingChildren(twice, ipsecChildren(method.IPv4, 3)); len(m) != 3 {
		t.Errorf("missing %v when each is listed twice, want all three", m)
	}
}
