package result

import (
	"strings"
	"testing"
)

func TestValidateLabel(t *testing.T) {
	for _, ok := range [][2]string{{"kernel_commit", "abc123"}, {"cni.version", "1.4.0"}, {"ticket", "NET-42"}, {"k8s-cni", ""}, {"a", strings.Repeat("x", MaxLabelValue)}} {
		if err := ValidateLabel(ok[0], ok[1]); err != nil {
			t.Errorf("ValidateLabel(%q, %q) = %v, want ok", ok[0], ok[1], err)
		}
	}
	for _, tt := range []struct{ key, value, want string }{
		{"", "x", LabelKeyRule},
		{"Kernel", "x", `use "kernel"`},
		{"-x", "x", LabelKeyRule},
		{"a b", "x", LabelKeyRule},
		{strings.Repeat("k", 64), "x", "1 to 63"},
		{"k", "two\nlines", "one line"},
		{"k", strings.Repeat("x", MaxLabelValue+1), "at most 256 bytes"},
	} {
		err := ValidateLabel(tt.key, tt.value)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateLabel(%q, %q) = %v, want an error with %q", tt.key, tt.value, err, tt.want)
		}
	}
}
