package methodtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// CheckProgramVersion asserts that v turns the output captured in file
// (testdata/PROGRAM_version.txt, the real program's) into want, and that
// the program installed on this machine names a version, the same one
// whether asked here (Local) or through an endpoint on this machine (On).
// It returns that version.
func CheckProgramVersion(t *testing.T, v *method.ProgramVersion, file, want string) string {
	t.Helper()
	out, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	parse := v.Parse
	if parse == nil {
		parse = method.FirstLine
	}
	if got := parse(out); got != want {
		t.Errorf("%s: version %q, want %q", file, got, want)
	}
	local := v.Local()
	if strings.HasSuffix(local, " (not installed)") || strings.HasSuffix(local, " (version unknown)") {
		t.Errorf("%s on this machine: %q, want its version", v.Program, local)
	}
	ep := &testbed.Endpoint{Side: "a", Host: "this machine", NS: -1, Dir: t.TempDir()}
	if on := v.On(context.Background(), ep); on != local {
		t.Errorf("%s through an endpoint on this machine: %q, want %q (Local)", v.Program, on, local)
	}
	return local
}
