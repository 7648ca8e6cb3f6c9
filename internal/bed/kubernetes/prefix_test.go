package kubernetes

import (
	"slices"
	"testing"
)

// TestPrefix: with the node's tools every command runs chrooted into the
// node's root, as it always has; with the image's, in the container as
// it is.
func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		tools string
		want  []string
	}{
		{"", []string{"chroot", "/host"}},
		{ToolsNode, []string{"chroot", "/host"}},
		{ToolsImage, nil},
	} {
		tb := &Testbed{cfg: Config{Kube: &Section{Tools: tc.tools}}}
		if got := tb.prefix(); !slices.Equal(got, tc.want) {
			t.Errorf("tools %q: prefix %q, want %q", tc.tools, got, tc.want)
		}
	}
}
