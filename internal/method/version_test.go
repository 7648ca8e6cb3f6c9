package method_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// A ProgramVersion answers the same on this machine (Local) and through
// an endpoint on it (On): the first line by default, the version of a
// program that prints it and exits 1, the program's Name when it is
// missing or says nothing.
func TestProgramVersion(t *testing.T) {
	ep := &testbed.Endpoint{Side: "a", Host: "this machine", NS: -1, Dir: t.TempDir()}
	for _, c := range []struct {
		v    *method.ProgramVersion
		want string // a trailing "*" matches any rest
	}{
		{&method.ProgramVersion{Program: "true"}, "true (GNU coreutils) *"},
		// Prints its version, then exits 1.
		{&method.ProgramVersion{Program: "false"}, "false (GNU coreutils) *"},
		// Prints it on stderr.
		{&method.ProgramVersion{Program: "sh", Args: []string{"-c", "echo '\n  v1.2 \n more' >&2"}}, "v1.2"},
		{&method.ProgramVersion{Program: "tunbench-no-such-program"}, "tunbench-no-such-program (not installed)"},
		{&method.ProgramVersion{Program: "tunbench-no-such-program", Name: "NoSuch"}, "NoSuch (not installed)"},
		{&method.ProgramVersion{Program: "sh", Args: []string{"-c", "exit 3"}, Name: "Mute"}, "Mute (version unknown)"},
		{&method.ProgramVersion{Program: "sh", Args: []string{"-c", "echo"}}, "sh (version unknown)"},
		{&method.ProgramVersion{Program: "true", Parse: func([]byte) string { return "" }}, "true (version unknown)"},
	} {
		match := func(got string) bool {
			if prefix, ok := strings.CutSuffix(c.want, "*"); ok {
				return strings.HasPrefix(got, prefix) && !strings.Contains(got, "\n")
			}
			return got == c.want
		}
		if got := c.v.Local(); !match(got) {
			t.Errorf("%s %q: Local %q, want %q", c.v.Program, c.v.Args, got, c.want)
		}
		if got := c.v.On(context.Background(), ep); !match(got) {
			t.Errorf("%s %q: On %q, want %q", c.v.Program, c.v.Args, got, c.want)
		}
	}
}
