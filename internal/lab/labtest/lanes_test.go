package labtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLanePackagesScript runs the guest's multi-package script with sh on
// the host, with shell scripts in place of the test binaries: every
// package runs exactly once, in its own directory with the flags, two at
// a time with two lanes (the two 1-second packages overlap), and each
// leaves its output, exit status and time, which readPackageRun reads
// back; the script fails when one binary failed.
func TestLanePackagesScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("no sh: %v", err)
	}
	results := t.TempDir()
	names := []string{"slow", "slower", "fails", "quick"}
	sleeps := map[string]string{"slow": "1", "slower": "1", "fails": "0", "quick": "0"}
	var dirs []string
	for _, name := range names {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		status := 0
		if name == "fails" {
			status = 3
		}
		bin := fmt.Sprintf("#!/bin/sh\nsleep %s\necho \"%s in $(pwd) with $*\"\necho oops >&2\nexit %d\n", sleeps[name], name, status)
		if err := os.WriteFile(filepath.Join(results, name+".test"), []byte(bin), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := lanePackagesScript(results, names, dirs, []string{"-test.run", "^TestLab it's"}, 2)
	start := time.Now()
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	took := time.Since(start)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("script: %v (want exit status 1: a binary failed)\n%s", err, out)
	}
	if took >= 2*time.Second {
		t.Errorf("two lanes took %v for two 1-second packages: they did not run at once", took)
	}
	for i, name := range names {
		p := readPackageRun(results, name)
		want := fmt.Sprintf("%s in %s with -test.run ^TestLab it's\n", name, dirs[i])
		if p.output != want || p.stderr != "oops\n" {
			t.Errorf("%s: output %q and %q, want %q and \"oops\\n\"", name, p.output, p.stderr, want)
		}
		wantStatus := "0"
		if name == "fails" {
			wantStatus = "3"
		}
		if p.status != wantStatus {
			t.Errorf("%s: exit status %q, want %s", name, p.status, wantStatus)
		}
		if p.seconds < 0 || (sleeps[name] == "1" && p.seconds < 1) {
			t.Errorf("%s: %.3fs", name, p.seconds)
		}
	}
	if s := readMillis(filepath.Join(results, allTimeFile)); s < 1 || s >= 2 {
		t.Errorf("all lanes: %.3fs, want between the longest package's 1 s and their sum", s)
	}

	// After a guest's lockup the next boot starts from the binaries
	// alone: no claim would let a lane skip a package.
	if err := clearLaneFiles(results, names); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(results, "*"))
	for _, f := range left {
		if !strings.HasSuffix(f, ".test") {
			t.Errorf("clearLaneFiles left %s", f)
		}
	}

	// A binary that never ran is reported so, and fails the script.
	if err := os.Remove(filepath.Join(results, "quick.test")); err != nil {
		t.Fatal(err)
	}
	names, dirs = names[3:], dirs[3:]
	if out, err := exec.Command("sh", "-c", lanePackagesScript(results, names, dirs, nil, 1)).CombinedOutput(); err == nil {
		t.Errorf("script passed with a missing binary:\n%s", out)
	}
	if p := readPackageRun(results, "quick"); p.status == "0" || !strings.Contains(p.stderr, "quick.test") {
		t.Errorf("missing binary: status %q, stderr %q", p.status, p.stderr)
	}
}
