package labtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
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
	// Lanes is how many of RunPackagesInGuest's test binaries run at
	// once in the guest; zero means TUNBENCH_LAB_LANES when that is a
	// positive number, else 1. Each lane takes the next package not yet
	// started, in the order given, so name the longest first. With more
	// than one lane the guest gets at least as many CPUs and 1024 MiB
	// per lane unless CPUs and MemoryMiB say otherwise.
	Lanes int
	// Modules are kernel modules RunPackagesInGuest loads in the guest
	// before its lanes start, when there is more than one. Tests that run
	// side by side need them: loading ip_gre, ip6_gre, ipip, ip6_tunnel
	// or sit creates fallback devices (gre0, tunl0...) in every existing
	// namespace, which a test in another lane would see as links left
	// behind.
	Modules []string
	// Reserved lets the guest take the lab slot make test keeps for its
	// floor (TUNBENCH_LAB_RESERVE=1): only TestKernelLab sets it.
	Reserved bool
}

// lanes is opt.Lanes, or TUNBENCH_LAB_LANES, or 1.
func (opt Options) lanes() int {
	if opt.Lanes > 0 {
		return opt.Lanes
	}
	if n, err := strconv.Atoi(os.Getenv("TUNBENCH_LAB_LANES")); err == nil && n > 0 {
		return n
	}
	return 1
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
// each package of pkgs (import paths), each in its package's source
// directory: one test binary after the other, or as many at once as
// there are lanes (Options.Lanes). Each guest test is mirrored as a subtest named after its
// package's last element and the test ("kernel/TestLabGRE"). It is how a
// module whose kernel-only tests sit in several packages pays for one
// boot.
func RunPackagesInGuest(t *testing.T, pkgs []string, run string, opt Options) {
	t.Helper()
	runInGuest(t, pkgs, run, opt)
}

// pkgMarker starts each package's output in a multi-package guest run's
// log.
const pkgMarker = "=== LABTEST PACKAGE "

func runInGuest(t *testing.T, pkgs []string, run string, opt Options) {
	t.Helper()
	if InLab() {
		t.Skip("already inside the kernel lab")
	}
	kernelStart := time.Now()
	Kernel(t)
	kernelTime := time.Since(kernelStart)
	slotStart := time.Now()
	cfg := config(t, opt.Reserved)
	slotWait := time.Since(slotStart)
	if opt.Timeout > 0 {
		cfg.Timeout = boundTimeout(t, opt.Timeout)
	}
	lanes := 1
	if len(pkgs) > 1 {
		lanes = opt.lanes()
	}
	switch {
	case opt.MemoryMiB != 0:
		cfg.MemoryMiB = opt.MemoryMiB
	case lanes > 1:
		cfg.MemoryMiB = lanes * lab.DefaultMemoryMiB
	}
	switch {
	case opt.CPUs != 0:
		cfg.CPUs = opt.CPUs
	case lanes > 1:
		cfg.CPUs = max(lanes, lab.DefaultCPUs)
	}
	results := lab.ResultsDir(cfg.WorkDir)
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatalf("kernel lab: %v", err)
	}
	// flags are the guest test binaries' flags for a guest given timeout.
	flags := func(timeout time.Duration) []string {
		f := []string{"-test.v", "-test.run", run}
		if timeout > 2*guestTestTimeoutMargin {
			f = append(f, "-test.timeout", (timeout - guestTestTimeoutMargin).Round(time.Second).String())
		}
		return append(f, opt.Args...)
	}

	var guestFor func(timeout time.Duration) lab.Guest
	names := make([]string, len(pkgs))
	compileStart := time.Now()
	if len(pkgs) == 1 {
		dir, err := packageDir(pkgs[0])
		if err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		if err := compileTest(pkgs[0], filepath.Join(results, guestBinary)); err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		guestFor = func(timeout time.Duration) lab.Guest {
			return lab.Guest{Argv: append([]string{lab.GuestResultsDir + "/" + guestBinary}, flags(timeout)...), Env: opt.Env, Dir: dir}
		}
	} else {
		// One go test -c builds every binary, in parallel, as
		// <last element>.test; in the guest, each lane's shell runs
		// them (lanePackagesScript).
		dirs, err := packageDirs(pkgs)
		if err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		if err := compileTests(pkgs, results); err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		for i, dir := range dirs {
			names[i] = filepath.Base(dir)
		}
		guestFor = func(timeout time.Duration) lab.Guest {
			script := lanePackagesScript(lab.GuestResultsDir, names, dirs, flags(timeout), lanes)
			if lanes > 1 && len(opt.Modules) > 0 {
				script = "modprobe -a " + shellJoin(opt.Modules) + " || exit 1\n" + script
			}
			return lab.Guest{Argv: []string{"sh", "-c", script}, Env: opt.Env}
		}
	}
	compileTime := time.Since(compileStart)

	// SIGINT ends the guest through the context, so qemu and the work dir
	// go away before the test binary does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	guest := guestFor(cfg.Timeout)
	runStart := time.Now()
	out, err := lab.Run(ctx, cfg, guest)
	var lockedUp time.Duration
	if errors.Is(err, lab.ErrGuestLockup) && ctx.Err() == nil {
		// The guest kernel hung (lab.ErrGuestLockup), a fault of the
		// emulated machine that no test's result depends on: one more
		// boot, from scratch, runs every test again. A second lockup
		// fails the test.
		lockedUp = time.Since(runStart)
		t.Logf("kernel lab: the guest locked up after %.0fs; booting it once more to run every test again:\n%v", lockedUp.Seconds(), err)
		if err := clearLaneFiles(results, names); err != nil {
			t.Fatalf("kernel lab: %v", err)
		}
		timeout := opt.Timeout
		if timeout <= 0 {
			timeout = lab.DefaultTimeout
		}
		cfg.Timeout = boundTimeout(t, timeout)
		guest = guestFor(cfg.Timeout)
		runStart = time.Now()
		out, err = lab.Run(ctx, cfg, guest)
	}
	if err != nil {
		t.Fatal(err)
	}
	runTime := time.Since(runStart)
	output := string(out.Stdout)
	if len(out.Stderr) > 0 {
		output += "\n--- stderr ---\n" + string(out.Stderr)
	}
	var tests []testResult
	var packages []partTime
	guestSeconds := -1.0
	if len(pkgs) == 1 {
		tests = parseTestOutput(output)
	} else {
		var all strings.Builder
		all.WriteString(output)
		for _, name := range names {
			p := readPackageRun(results, name)
			fmt.Fprintf(&all, "\n%s%s (exit status %s, %.1fs)\n%s", pkgMarker, name, p.status, p.seconds, p.output)
			if p.stderr != "" {
				fmt.Fprintf(&all, "\n--- stderr of %s ---\n%s", name, p.stderr)
			}
			if p.seconds >= 0 {
				packages = append(packages, partTime{name, p.seconds})
			}
			for _, r := range parseTestOutput(p.output) {
				r.name = name + "/" + r.name
				tests = append(tests, r)
			}
		}
		output = all.String()
		guestSeconds = readMillis(filepath.Join(results, allTimeFile))
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
	logTimes(t, times{
		kernel: kernelTime, slotWait: slotWait, compile: compileTime, lockedUp: lockedUp, run: runTime, boot: out.BootTime,
		guest: guestSeconds, packages: packages, tests: tests,
	})
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

// lanePackagesScript is the guest's shell script for a multi-package
// run, results being the results share as the guest sees it: lanes
// shells at once, each taking the next package no lane has claimed
// (mkdir is the atomic claim), in the order given, and running its test
// binary (<name>.test in results) in the package's source directory, its
// output into <name>.out and <name>.err, its exit status into <name>.rc and its
// milliseconds into <name>.ms, in results, and the
// lanes' milliseconds in all into allTimeFile. The script's status is 1
// when a binary failed or did not run.
func lanePackagesScript(results string, names, dirs, flags []string, lanes int) string {
	var b strings.Builder
	r := shellQuote(results)
	b.WriteString("lane() {\n")
	for i, name := range names {
		q := shellQuote(name)
		fmt.Fprintf(&b, "\tif mkdir %s/%s.claim 2>/dev/null; then\n", r, q)
		fmt.Fprintf(&b, "\t\ts=$(date +%%s%%N)\n")
		fmt.Fprintf(&b, "\t\t(cd %s && exec %s/%s.test %s) >%s/%s.out 2>%s/%s.err\n", shellQuote(dirs[i]), r, q, shellJoin(flags), r, q, r, q)
		fmt.Fprintf(&b, "\t\techo $? >%s/%s.rc\n", r, q)
		fmt.Fprintf(&b, "\t\techo $(( ($(date +%%s%%N) - s) / 1000000 )) >%s/%s.ms\n", r, q)
		b.WriteString("\tfi\n")
	}
	b.WriteString("}\n")
	b.WriteString("s0=$(date +%s%N)\n")
	for range lanes {
		b.WriteString("lane &\n")
	}
	fmt.Fprintf(&b, "wait\necho $(( ($(date +%%s%%N) - s0) / 1000000 )) >%s/%s\nrc=0\n", r, allTimeFile)
	for _, name := range names {
		q := shellQuote(name)
		fmt.Fprintf(&b, "[ \"$(cat %s/%s.rc 2>/dev/null)\" = 0 ] || rc=1\n", r, q)
	}
	b.WriteString("exit $rc\n")
	return b.String()
}

// clearLaneFiles removes what lanePackagesScript's lanes left in results
// (claims, outputs, statuses, times) for names, so that a second boot runs
// every package again.
func clearLaneFiles(results string, names []string) error {
	files := []string{filepath.Join(results, allTimeFile)}
	for _, name := range names {
		for _, ext := range []string{".claim", ".out", ".err", ".rc", ".ms"} {
			files = append(files, filepath.Join(results, name+ext))
		}
	}
	for _, f := range files {
		if err := os.RemoveAll(f); err != nil {
			return fmt.Errorf("clear the first boot's lane files: %w", err)
		}
	}
	return nil
}

// allTimeFile keeps, in the results share, the milliseconds all of
// lanePackagesScript's lanes took.
const allTimeFile = "all.ms"

// packageRun is what one package's test binary left in the results share.
type packageRun struct {
	output  string  // its standard output, where go test -v writes
	stderr  string  // its standard error
	status  string  // its exit status, or "none" when it did not run
	seconds float64 // its wall time, or -1 when unknown
}

// readPackageRun reads the files lanePackagesScript's lane left for name
// in the host side of the results share.
func readPackageRun(results, name string) packageRun {
	p := packageRun{status: "none", seconds: -1}
	if b, err := os.ReadFile(filepath.Join(results, name+".out")); err == nil {
		p.output = string(b)
	}
	if b, err := os.ReadFile(filepath.Join(results, name+".err")); err == nil {
		p.stderr = string(b)
	}
	if b, err := os.ReadFile(filepath.Join(results, name+".rc")); err == nil {
		p.status = strings.TrimSpace(string(b))
	}
	p.seconds = readMillis(filepath.Join(results, name+".ms"))
	return p
}

// readMillis reads a file of milliseconds as seconds, or -1 when it
// cannot.
func readMillis(file string) float64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return float64(ms) / 1000
}

// times are where a guest run's wall time went.
type times struct {
	kernel, slotWait time.Duration // finding (or fetching) the kernel; waiting for a lab slot
	compile          time.Duration // building the test binaries
	lockedUp         time.Duration // a first boot given up when its kernel locked up, or 0
	run, boot        time.Duration // lab.Run in all; of it, qemu's start to the command's
	guest            float64       // the guest command's seconds, or -1 when unknown
	packages         []partTime    // each test binary's run, in a multi-package run (lanes overlap)
	tests            []testResult  // each guest test, with its own duration
}

// partTime is one named stretch of wall time.
type partTime struct {
	name    string
	seconds float64
}

// logTimes logs where the guest run's time went as "time: NAME 12.3s"
// lines, which scripts/skips shows under make test's slowest tests: the
// kernel's lookup, the wait for a lab slot, the compile, the guest's
// boot, the guest's tests in all, each package's binary, each guest test,
// and the rest of lab.Run (the initramfs, the accelerator probe, the
// power-off).
func logTimes(t *testing.T, tm times) {
	t.Helper()
	logPart := func(name string, d float64) { t.Logf("time: %s %.1fs", name, d) }
	logPart("kernel-lab/lookup-kernel", tm.kernel.Seconds())
	logPart("kernel-lab/slot-wait", tm.slotWait.Seconds())
	logPart("kernel-lab/compile", tm.compile.Seconds())
	if tm.lockedUp > 0 {
		logPart("kernel-lab/locked-up-boot", tm.lockedUp.Seconds())
	}
	logPart("kernel-lab/boot", tm.boot.Seconds())
	inGuest := tm.guest
	if inGuest < 0 { // a single binary: its tests one after the other
		inGuest = 0
		for _, r := range tm.tests {
			inGuest += r.seconds
		}
	}
	logPart("kernel-lab/guest-tests", inGuest)
	for _, p := range tm.packages {
		logPart("kernel-lab/"+p.name, p.seconds)
	}
	for _, r := range tm.tests {
		logPart("kernel-lab/"+r.name, r.seconds)
	}
	logPart("kernel-lab/other", max(0, tm.run.Seconds()-tm.boot.Seconds()-inGuest))
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

// packageDirs are the source directories of pkgs, in their order.
func packageDirs(pkgs []string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{.Dir}}"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%q: %w", cmd.Args, err)
	}
	byPath := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, _ := strings.Cut(line, " ")
		byPath[path] = dir
	}
	dirs := make([]string, len(pkgs))
	for i, pkg := range pkgs {
		if dirs[i] = byPath[pkg]; dirs[i] == "" {
			return nil, fmt.Errorf("%q: no directory for %s: %s", cmd.Args, pkg, out)
		}
	}
	return dirs, nil
}

// compileTests builds the test binary of each of pkgs into dir, as
// <last element of its path>.test, with one go test -c (which builds
// them in parallel, and refuses two packages of the same last element).
func compileTests(pkgs []string, dir string) error {
	cmd := exec.Command("go", append([]string{"test", "-c", "-o", dir + "/"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%q: %w: %s", cmd.Args, err, out)
	}
	return nil
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
