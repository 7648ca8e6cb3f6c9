package openvpn

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
)

// The overhead the ceiling uses follows proto (docs/methods.md, "Ceiling
// arithmetic").
func TestHeaderOverhead(t *testing.T) {
	for _, tc := range []struct {
		family string
		opts   map[string]string
		want   int
	}{
		{method.IPv4, nil, 52},
		{method.IPv4, map[string]string{"proto": "tcp"}, 66},
		{method.IPv6, map[string]string{"proto": "tcp"}, 86},
	} {
		if got := method.HeaderOverhead(&OpenVPN{}, tc.family, tc.opts, ""); got != tc.want {
			t.Errorf("openvpn %s %v: %d, want %d", tc.family, tc.opts, got, tc.want)
		}
	}
}
