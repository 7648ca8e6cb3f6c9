package method

import "testing"

// The overhead the ceiling uses follows the options that change the
// framing (docs/methods.md, "Ceiling arithmetic").
func TestHeaderOverhead(t *testing.T) {
	for _, tc := range []struct {
		m       Method
		family  string
		opts    map[string]string
		variant string
		want    int
	}{
		{&OpenVPN{}, IPv4, nil, "", 52},
		{&OpenVPN{}, IPv4, map[string]string{"proto": "tcp"}, "", 66},
		{&OpenVPN{}, IPv6, map[string]string{"proto": "tcp"}, "", 86},
		{&IPsec{}, IPv4, map[string]string{"datapath": "xfrm"}, "kernel xfrm, ESP", 57},
		{&IPsec{}, IPv4, map[string]string{"datapath": "xfrm", "natt": "on"}, "kernel xfrm, ESP in UDP 4500", 65},
		{&IPsec{}, IPv4, map[string]string{"mode": "transport", "datapath": "xfrm"}, "kernel xfrm, ESP", 37},
		{&IPsec{}, IPv4, nil, "kernel-libipsec, ESP in UDP 4500 (always)", 65},
		{&IPsec{}, IPv6, map[string]string{"mode": "transport"}, "kernel-libipsec, ESP in UDP 4500 (always)", 45},
		{VXLAN{}, IPv6, nil, "", 70},
		{Native{}, IPv4, nil, "", 0},
	} {
		if got := HeaderOverhead(tc.m, tc.family, tc.opts, tc.variant); got != tc.want {
			t.Errorf("%s %s %v %q: %d, want %d", tc.m.Name(), tc.family, tc.opts, tc.variant, got, tc.want)
		}
	}
}
