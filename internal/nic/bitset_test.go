package nic

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func capturedView(t *testing.T) view {
	t.Helper()
	names, err := decodeFeatureNames(readTestdata(t, "strset-features.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return newView(names)
}

// The raw replies in testdata/ were captured from a 6.18 kernel together
// with `ethtool -k` output for the same devices (see TestCaptureTestdata);
// decoding them must reproduce what ethtool printed, line for line.
func TestDecodeCapturedRepliesMatchEthtool(t *testing.T) {
	v := capturedView(t)
	for _, dev := range []string{"va", "vx0"} {
		t.Run(dev, func(t *testing.T) {
			s, err := decodeFeatures(readTestdata(t, "features-"+dev+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			if s.dev != dev {
				t.Errorf("reply header names dev %q, want %q", s.dev, dev)
			}
			wantOn, wantFixed, err := parseEthtoolK(readTestdata(t, "ethtool-k-"+dev+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantOn, v.render(s.active)); diff != "" {
				t.Errorf("features of %s differ from ethtool -k (-ethtool +decoded):\n%s", dev, diff)
			}
			gotFixed := map[string]bool{}
			for i, name := range v.display {
				if name != "" && s.fixed(i) {
					gotFixed[name] = true
				}
			}
			if diff := cmp.Diff(wantFixed, gotFixed); diff != "" {
				t.Errorf("[fixed] features of %s differ (-ethtool +decoded):\n%s", dev, diff)
			}
		})
	}
}

func TestDecodeCapturedNames(t *testing.T) {
	v := capturedView(t)
	// Spot checks against include/linux/netdev_features.h bit order.
	for i, want := range map[int]string{0: "tx-scatter-gather", 11: "tx-generic-segmentation", 14: "rx-gro", 15: "rx-lro", 16: "tx-tcp-segmentation"} {
		if v.kernel[i] != want {
			t.Errorf("feature bit %d is %q, want %q", i, v.kernel[i], want)
		}
	}
	s, err := decodeFeatures(readTestdata(t, "features-va.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if s.active.size != len(v.kernel) {
		t.Errorf("active bitset has %d bits, string set names %d", s.active.size, len(v.kernel))
	}
	// Verbose bits carry names; they must agree with the string set.
	for _, b := range s.active.bits {
		if b.name != v.kernel[b.index] {
			t.Errorf("bit %d named %q in reply, %q in string set", b.index, b.name, v.kernel[b.index])
		}
	}
}

func TestDecodeFeaturesRejectsBrokenInput(t *testing.T) {
	full := readTestdata(t, "features-va.bin")
	for name, b := range map[string][]byte{
		"truncated": full[:len(full)-3],
		"empty":     {},
	} {
		if _, err := decodeFeatures(b); err == nil {
			t.Errorf("%s reply decoded without error", name)
		}
	}
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_FEATURES_HEADER, "va", 0)
	b, _ := ae.Encode()
	if _, err := decodeFeatures(b); err == nil {
		t.Error("reply without bitsets decoded without error")
	}
}

// The request must be a verbose bitset with a mask: each listed bit named,
// VALUE present exactly for "on". Decoding it with the reply decoder checks
// the layout; the integration tests check that the kernel accepts it.
func TestEncodeFeaturesSet(t *testing.T) {
	b, err := encodeFeaturesSet("va", map[string]bool{"rx-gro": true, "tx-generic-segmentation": false, "tx-tcp-segmentation": false})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	var (
		dev, flags = "", uint32(0)
		wanted     bitset
		nested     = true
	)
	for ad.Next() {
		nested = nested && ad.TypeFlags()&netlink.Nested != 0
		switch ad.Type() {
		case unix.ETHTOOL_A_FEATURES_HEADER:
			ad.Nested(func(h *netlink.AttributeDecoder) error {
				for h.Next() {
					switch h.Type() {
					case unix.ETHTOOL_A_HEADER_DEV_NAME:
						dev = h.String()
					case unix.ETHTOOL_A_HEADER_FLAGS:
						flags = h.Uint32()
					}
				}
				return nil
			})
		case unix.ETHTOOL_A_FEATURES_WANTED:
			ad.Do(func(b []byte) error {
				var err error
				wanted, err = decodeBitset(b)
				return err
			})
		default:
			t.Errorf("unexpected attribute %d", ad.Type())
		}
	}
	if err := ad.Err(); err != nil {
		t.Fatal(err)
	}
	if !nested {
		t.Error("nests lack NLA_F_NESTED, which strict kernel validation requires")
	}
	if dev != "va" || flags != unix.ETHTOOL_FLAG_OMIT_REPLY {
		t.Errorf("header dev %q flags %#x, want va and OMIT_REPLY", dev, flags)
	}
	if wanted.nomask {
		t.Error("request bitset has NOMASK: it would clear every unlisted feature")
	}
	type nv struct {
		Name string
		On   bool
	}
	var got []nv
	for _, x := range wanted.bits {
		got = append(got, nv{x.name, x.value})
	}
	want := []nv{{"rx-gro", true}, {"tx-generic-segmentation", false}, {"tx-tcp-segmentation", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requested bits (-want +got):\n%s", diff)
	}
}

func TestPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		name, pattern string
		want          bool
	}{
		{"tx-tcp-segmentation", "tx-tcp*-segmentation", true},
		{"tx-tcp6-segmentation", "tx-tcp*-segmentation", true},
		{"tx-tcp-accecn-segmentation", "tx-tcp*-segmentation", true},
		{"tx-udp-segmentation", "tx-tcp*-segmentation", false},
		{"tx-scatter-gather", "tx-scatter-gather*", true},
		{"rx-gro", "rx-gro", true},
		{"rx-gro-list", "rx-gro", false},
		{"tx-tcp", "tx-tcp*-tcp", false}, // prefix and suffix must not overlap
	} {
		if got := patternMatch(tc.name, tc.pattern); got != tc.want {
			t.Errorf("patternMatch(%q, %q) = %v, want %v", tc.name, tc.pattern, got, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	v := capturedView(t)
	names := func(bits map[int]bool) []string {
		var out []string
		for i, on := range bits {
			out = append(out, v.kernel[i]+"="+onOff(on))
		}
		sort.Strings(out)
		return out
	}
	for _, tc := range []struct {
		req  map[string]bool
		want []string
	}{
		{map[string]bool{"tso": false}, []string{
			"tx-tcp-accecn-segmentation=off", "tx-tcp-ecn-segmentation=off", "tx-tcp-mangleid-segmentation=off",
			"tx-tcp-segmentation=off", "tx-tcp6-segmentation=off"}},
		{map[string]bool{"generic-receive-offload": true, "gso": false}, []string{"rx-gro=on", "tx-generic-segmentation=off"}},
		{map[string]bool{"rx-gro-list": true, "rx-gro": false}, []string{"rx-gro-list=on", "rx-gro=off"}},
		{map[string]bool{"tcp-segmentation-offload": true, "tx-tcp6-segmentation": true}, []string{
			"tx-tcp-accecn-segmentation=on", "tx-tcp-ecn-segmentation=on", "tx-tcp-mangleid-segmentation=on",
			"tx-tcp-segmentation=on", "tx-tcp6-segmentation=on"}},
	} {
		bits, err := v.resolve(tc.req)
		if err != nil {
			t.Errorf("resolve(%v): %v", tc.req, err)
			continue
		}
		if diff := cmp.Diff(tc.want, names(bits)); diff != "" {
			t.Errorf("resolve(%v) (-want +got):\n%s", tc.req, diff)
		}
	}
	if _, err := v.resolve(map[string]bool{"no-such-feature": true}); err == nil {
		t.Error("unknown feature resolved without error")
	}
	if _, err := v.resolve(map[string]bool{"tso": false, "tx-tcp6-segmentation": true}); err == nil {
		t.Error("contradicting request resolved without error")
	}
}
