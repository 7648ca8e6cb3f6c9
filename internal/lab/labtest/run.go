package labtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/lab"
)

// Options tune RunTestsInGuestWith. The zero value means RunTestsInGuest's
// defaults.
type Options struct {
	// MemoryMiB and CPUs size the guest (lab defaults when zero).
	MemoryMiB, CPUs int
	// Args are extra test flags, e.g. "-test.count=2".
	Args []string
	// Env is added to the guest test's environment.
	Env []string
	// Timeout bounds the guest (lab.DefaultTimeout when zero); the test's
	// own deadline still wins.
	Timeout time.Duration
}

// RunTestsInGuest runs the tests of package pkg (an import path, or "."
// for the calling package) whose names match the -test.run regexp run,
// inside one lab guest; see the package doc. Inside the guest itself it
// skips t, so a package's wrapper test never recurses.
func RunTestsInGuest(t *testing.T, pkg string, run string) {
	t.Helper()
	RunTestsInGuestWith(t, pkg, run, Options{})
}

// guestTestTimeoutMargin is how long before the lab's timeout the guest's
// -test.timeout fires, so that a hung test prints its goroutines instead
// of being killed silently with the guest. It covers the boot.
const guestTestTimeoutMargin = 45 * time.Second

// guestBinary is the test binary's name in the results share.
const guestBinary = "lab.test"

// RunTestsInGuestWith is RunTestsInGuest with options.
func RunTestsInGuestWith(t *testing.T, pkg string, run string, opt Options) {
	t.Helper()
	runInGuest(t, []string{pkg}, run, opt)
}

// RunPackagesInGuest runs, in one guest boot, the tests matching run of
// each package of pkgs (import paths), one test binary after the other,
// each in its package's source directory. Each guest test is mirrored as
// a subtest named after its package's last element and the test
// ("kernel/TestLabGRE"). It is how a module whose kernel-only tests sit in
// several packages pays for one boot.
func RunPackagesInGuest(t *testing.T, pkgs []string, run string, opt Options) {
	t.Helper()
	runInGuest(t, pkgs, run, opt)
}

// pkgMarker starts each package's output in a multi-package guest run.
const pkgMarker = "=== LABTEST PACKAGE "

func runInGuest(t *testing.T, pkgs []string, run string, opt Options) {
	t.Helper()
	if InLab() {
		t.Skip("already inside the kernel lab")
	}
	cfg := Config(t)
	if opt.Timeout > 0 {
		cfg.Timeout = boundTimeout(t, opt.Timeout)
	}
	if opt.MemoryMiB != 0 {
		cfg.MemoryMiB = opt.MemoryMiB
	}
	if opt.CPUs != 0 {
		cfg.CPUs = opt.CPUs
	}
	results := lab.ResultsDir(cfg.WorkDir)
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatalf("kernel lab: %v", err)
	}
	flags := []string{"-test.v", "-test.run", run}
	if cfg.Timeout > 2*guestTestTimeoutMargin {
		flags = append(flags, "-test.timeout", (cfg.Timeout - guestTestTimeoutMargin).Round(time.Second).String())
	}
	flags = append(flags, opt.Args...)

	var guest lab.Guest
	names := make([]string, len(pkgs))
	if len(pkgs) == 1 {
		dir, err := packageDir(pkgs[0])
		if err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		if err := compileTest(pkgs[0], filepath.Join(results, guestBinary)); err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		guest = lab.Guest{Argv: append([]string{lab.GuestResultsDir + "/" + guestBinary}, flags...), Env: opt.Env, Dir: dir}
	} else {
		// One shell runs every binary; its status is the first failure's.
		var script strings.Builder
		script.WriteString("rc=0\n")
		for i, pkg := range pkgs {
			dir, err := packageDir(pkg)
			if err != nil {
				t.Fatalf("kernel lab: %v", err)
			}
			names[i] = filepath.Base(dir)
			bin := fmt.Sprintf("lab%d.test", i)
			if err := compileTest(pkg, filepath.Join(results, bin)); err != nil {
				t.Fatalf("kernel lab: %v", err)
			}
			fmt.Fprintf(&script, "echo %s\ncd %s && %s %s || rc=$?\n", shellQuote(pkgMarker+names[i]), shellQuote(dir),
				shellQuote(lab.GuestResultsDir+"/"+bin), shellJoin(flags))
		}
		script.WriteString("exit $rc\n")
		guest = lab.Guest{Argv: []string{"sh", "-c", script.String()}, Env: opt.Env}
	}

	// SIGINT ends the guest through the context, so qemu and the work dir
	// go away before the test binary does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out, err := lab.Run(ctx, cfg, guest)
	if err != nil {
		t.Fatal(err)
	}
	output := string(out.Stdout)
	if len(out.Stderr) > 0 {
		output += "\n--- stderr ---\n" + string(out.Stderr)
	}
	var tests []testResult
	if len(pkgs) == 1 {
		tests = parseTestOutput(output)
	} else {
		for _, part := range strings.Split(string(out.Stdout), pkgMarker)[1:] {
			name, rest, _ := strings.Cut(part, "\n")
			for _, r := range parseTestOutput(rest) {
				r.name = name + "/" + r.name
				tests = append(tests, r)
			}
		}
	}
	for _, r := range tests {
		t.Run(r.name, func(t *testing.T) {
			switch r.status {
			case "FAIL":
				t.Errorf("failed in the kernel lab:\n%s", r.output)
			case "SKIP":
				t.Skipf("skipped in the kernel lab:\n%s", r.output)
			}
		})
	}
	header := fmt.Sprintf("kernel lab (kernel %s, boot %.1fs, emulated=%v): %q exited %d",
		cfg.Kernel.Version, out.BootTime.Seconds(), out.Emulated, guest.Argv, out.ExitCode)
	switch {
	case out.ExitCode != 0:
		t.Fatalf("%s\n%s", header, output)
	case len(tests) == 0:
		t.Fatalf("%s: no test matched %q\n%s", header, run, output)
	}
	t.Logf("%s\n%s", header, output)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// packageDir is the source directory of pkg, where go test would run its
// tests; the guest sees it at the same path.
func packageDir(pkg string) (string, error) {
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", pkg)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%q: %w: %s", cmd.Args, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// compileTest builds pkg's test binary at dst.
func compileTest(pkg, dst string) error {
	cmd := exec.Command("go", "test", "-c", "-o", dst, pkg)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%q: %w: %s", cmd.Args, err, out)
	}
	if _, err := os.Stat(dst); err != nil {
		return fmt.Errorf("go test -c %s built no binary (the package has no tests?): %w", pkg, err)
	}
	return nil
}
