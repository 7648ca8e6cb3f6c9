package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder stands in for a test: it records a skip or a fatal failure
// instead of ending the goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skip(args ...any)               { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

func TestStrict(t *testing.T) {
	for _, tt := range []struct {
		strict, ci string
		want       bool
	}{
		{"", "", false},
		{"0", "", false},
		{"1", "", true},
		{"yes", "", true},
		{"", "true", true},
		{"0", "1", true},
	} {
		t.Setenv(EnvStrict, tt.strict)
		t.Setenv("CI", tt.ci)
		if got := Strict(); got != tt.want {
			t.Errorf("%s=%q CI=%q: Strict() = %v, want %v", EnvStrict, tt.strict, tt.ci, got, tt.want)
		}
	}
}

func TestSkipMissing(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(EnvStrict, "")
	r := &recorder{}
	SkipMissing(r, "%s not installed", "iperf3")
	if r.skipped != "iperf3 not installed" || r.failed != "" {
		t.Errorf("outside strict mode: skipped %q, failed %q; want a skip with the reason", r.skipped, r.failed)
	}

	t.Setenv(EnvStrict, "1")
	r = &recorder{}
	SkipMissing(r, "%s not installed", "iperf3")
	if r.skipped != "" || !strings.HasPrefix(r.failed, "iperf3 not installed\n") || !strings.Contains(r.failed, "strict mode") {
		t.Errorf("in strict mode: skipped %q, failed %q; want a failure with the reason", r.skipped, r.failed)
	}
}

func TestNeedProgram(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(EnvStrict, "1")
	r := &recorder{}
	NeedProgram(r, "sh", "apt-get install dash")
	if r.skipped != "" || r.failed != "" {
		t.Errorf("sh is installed: skipped %q, failed %q", r.skipped, r.failed)
	}
	NeedProgram(r, "tunbench-no-such-program", "apt-get install nothing")
	if !strings.Contains(r.failed, "tunbench-no-such-program not installed (apt-get install nothing)") {
		t.Errorf("missing program in strict mode: failed %q", r.failed)
	}
}
