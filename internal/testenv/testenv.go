// Package testenv decides what a test does when something it needs is
// missing: skip with the reason, or, in strict mode, fail.
//
// Strict mode is on when TUNBENCH_STRICT is set (to anything but "0"),
// which "make test" does, or when CI is set. In it, whatever "make test"
// guarantees is no reason to skip: a program scripts/install.sh test
// installs, root's capabilities (install.sh refuses to run without them),
// or the kernel lab, whose tools install.sh also installs. Tests report
// those through SkipMissing or NeedProgram. Skips for kernel features this
// host may truly lack (GENEVE, GRE, ESP...; the kernel lab's tests cover
// them) stay plain t.Skip calls: scripts/skips lists every skip of a
// "make test" run and fails on one that no expected-skips file names
// (scripts/expected-skips.txt, or a family's in its folder).
//
// It also gives fuzz targets their seeds: FuzzSeeds adds the captured
// outputs in a package's testdata.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// EnvStrict turns strict mode on.
const EnvStrict = "TUNBENCH_STRICT"

// Strict reports whether tests run in strict mode: TUNBENCH_STRICT set to
// anything but "" or "0", or CI set to anything but "".
func Strict() bool {
	if v := os.Getenv(EnvStrict); v != "" && v != "0" {
		return true
	}
	return os.Getenv("CI") != ""
}

// SkipMissing skips t with the reason, or fails it in strict mode. Use it
// for what "make test" provides: a program scripts/install.sh test
// installs, root's capabilities, the kernel lab.
func SkipMissing(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("%s\n(strict mode, %s or CI set: make test provides this, so its absence is a failure, not a skip)", reason, EnvStrict)
		return
	}
	t.Skip(reason)
}

// NeedProgram looks program up in PATH and, when it is missing, calls
// SkipMissing with fix, the command or package that installs it.
func NeedProgram(t testing.TB, program, fix string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		SkipMissing(t, "%s not installed (%s): %v", program, fix, err)
	}
}
