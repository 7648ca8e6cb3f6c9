// Command skips reads the output of "go test -json" on stdin, prints it the
// way a plain "go test" would (build errors, the output of failed tests,
// and an "ok", "FAIL" or "?" line per package), and at the end lists every
// skipped test with its reason, then the slowest packages and top-level
// tests (where the suite's time goes: "make test" has a budget), each
// test with the parts it timed itself (log lines "time: PART 12.3s", as
// the kernel lab's test logs its guest's packages and tests). It fails (exit 1) when a test or package
// failed, when the stream ends before every package finished, or when a
// test skipped that the expected-skips file does not name: a suite cannot
// skip its way to green. "make test" pipes its go test run through it:
//
//	go test -json -count=1 ./... 2>&1 | go run ./scripts/skips
//
// The expected skips are read from scripts/expected-skips.txt (the skips
// of no one family: lab-only tests, opt-in tests) and from every
// expected-skips.txt under internal/ (a method family's own, kept in its
// folder beside the tests that skip: internal/method/kernel/expected-skips.txt).
// A family's file also names the family's subtests in other packages
// (TestMethodsThroughAgents/l2tpv3 in internal/method/registry), so adding
// a method touches its own folder only.
// -expected names one file instead. Each file has one line per expected
// skip: the package (relative to the module, or its full import path), a
// regular expression that must match the whole test name (subtests
// included, as in TestA/sub), and the reason the skip is expected on the
// machines make test runs on. Blank lines and lines starting with # are
// ignored. Lines not on stdin in JSON (go's own messages) are copied
// through.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	expected := flag.String("expected", "", "read only this expected-skips file (default: scripts/expected-skips.txt and every expected-skips.txt under internal/)")
	verbose := flag.Bool("v", false, "copy every line of test output, as go test -v does")
	flag.Parse()
	var exp []expectation
	var err error
	if *expected != "" {
		exp, err = readExpected(*expected)
	} else {
		exp, err = readRepository(".")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "skips: %v\n", err)
		os.Exit(2)
	}
	ok, err := run(os.Stdin, os.Stdout, exp, *verbose)
	if err != nil {
		fmt.Fprintf(os.Stderr, "skips: %v\n", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// expectation is one line of the expected-skips file.
type expectation struct {
	pkg    string
	test   *regexp.Regexp
	reason string
	file   string
	line   int
}

// matches reports whether the skip of test in package pkg (a full import
// path) is this expectation's.
func (e expectation) matches(pkg, test string) bool {
	return (pkg == e.pkg || strings.HasSuffix(pkg, "/"+e.pkg)) && e.test.MatchString(test)
}

// parseExpected parses an expected-skips file; name is used in errors.
func parseExpected(name string, r io.Reader) ([]expectation, error) {
	var out []expectation
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: want a package, a test-name pattern and the reason the skip is expected, got %q", name, n, line)
		}
		re, err := regexp.Compile("^(?:" + f[1] + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: test-name pattern: %w", name, n, err)
		}
		out = append(out, expectation{pkg: strings.TrimSuffix(f[0], "/"), test: re, reason: strings.Join(f[2:], " "), file: name, line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// centralSkips is the expected-skips file of no one family, relative to
// the module's root.
const centralSkips = "scripts/expected-skips.txt"

// familySkips is the name of a folder's own expected-skips file.
const familySkips = "expected-skips.txt"

// readRepository reads the module's expected skips (root is the module's
// directory): the central file and every folder's file under internal/,
// so that a method family's skips, wherever its tests sit (its own
// package, or its subtest of internal/method/registry), live in its folder.
func readRepository(root string) ([]expectation, error) {
	exp, err := readExpected(filepath.Join(root, centralSkips))
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != familySkips {
			return err
		}
		more, err := readExpected(path)
		if err != nil {
			return err
		}
		exp = append(exp, more...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expected skips: %w", err)
	}
	return exp, nil
}

func readExpected(path string) ([]expectation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("expected skips: %w", err)
	}
	defer f.Close()
	return parseExpected(path, f)
}

// event is one line of go test -json (cmd/test2json's TestEvent, and the
// build events go test adds: ImportPath with build-output and build-fail).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string
	Elapsed     float64 // seconds, on a test's pass or fail
}

// line is one piece of a top-level test's output, with the (sub)test it
// belongs to.
type line struct {
	test, text string
}

// pkgState is what is known of one package while its tests run.
type pkgState struct {
	out    map[string][]line // top-level test -> its and its subtests' output
	failed map[string]bool   // tests (and subtests) that failed
	done   map[string]bool   // tests (and subtests) that ended
}

// skip is one skipped test and why.
type skip struct {
	pkg, test, reason string
	expected          *expectation
}

// timing is how long one top-level test (or, with test empty, one
// package) took, and the parts it timed itself.
type timing struct {
	pkg, test string
	seconds   float64
	parts     []part
}

// part is one "time: NAME 12.3s" log line of a test: a stretch of its
// wall time it measured and named itself.
type part struct {
	name    string
	seconds float64
}

// partLine matches a test's "time: NAME 12.3s" log line.
var partLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: time: (\S+) ([0-9]+(?:\.[0-9]+)?)s\s*$`)

// slowest is how many of the slowest top-level tests the summary lists,
// slowestPkgs how many packages, and slowestParts how many of each
// test's parts.
const (
	slowest      = 10
	slowestPkgs  = 5
	slowestParts = 12
)

// counts of the run.
type counts struct {
	pkgOK, pkgFailed, pkgNoTests int
	passed, failed               int
	buildFailed                  int
}

// run reads the stream from r, writes the plain go test output and the
// skip list to w, and reports whether the run passed.
func run(r io.Reader, w io.Writer, exp []expectation, verbose bool) (bool, error) {
	pkgs := map[string]*pkgState{}
	var order []string // packages in the order they started
	var skips []skip
	var times, pkgTimes []timing
	parts := map[[2]string][]part{} // package, top-level test -> its parts
	var c counts
	started := 0
	rd := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := rd.ReadString('\n')
		if raw != "" {
			var e event
			if !strings.HasPrefix(raw, "{") || json.Unmarshal([]byte(raw), &e) != nil || e.Action == "" {
				fmt.Fprint(w, raw) // not an event: go's own message
			} else {
				switch e.Action {
				case "build-output":
					fmt.Fprint(w, e.Output)
				case "build-fail":
					c.buildFailed++
				case "start":
					started++
					if pkgs[e.Package] == nil {
						pkgs[e.Package] = &pkgState{out: map[string][]line{}, failed: map[string]bool{}, done: map[string]bool{}}
						order = append(order, e.Package)
					}
				default:
					p := pkgs[e.Package]
					if p == nil { // an event before its package's start
						p = &pkgState{out: map[string][]line{}, failed: map[string]bool{}, done: map[string]bool{}}
						pkgs[e.Package] = p
						order = append(order, e.Package)
					}
					top, _, _ := strings.Cut(e.Test, "/")
					if m := partLine.FindStringSubmatch(e.Output); e.Action == "output" && e.Test != "" && m != nil {
						secs, _ := strconv.ParseFloat(m[2], 64)
						k := [2]string{e.Package, top}
						parts[k] = append(parts[k], part{m[1], secs})
					}
					switch {
					case e.Action != "pass" && e.Action != "fail":
					case e.Test == "":
						pkgTimes = append(pkgTimes, timing{pkg: e.Package, seconds: e.Elapsed})
					case e.Test == top:
						times = append(times, timing{e.Package, e.Test, e.Elapsed, parts[[2]string{e.Package, top}]})
					}
					if s, ok := handle(w, p, e, verbose, &c); ok {
						s.expected = match(exp, s.pkg, s.test)
						skips = append(skips, s)
					}
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, fmt.Errorf("read the go test -json stream: %w", err)
		}
	}

	pass := c.failed == 0 && c.pkgFailed == 0 && c.buildFailed == 0
	var unfinished []string
	for _, name := range order {
		if pkgs[name] != nil && pkgs[name].out != nil {
			unfinished = append(unfinished, name)
		}
	}
	if len(unfinished) > 0 {
		pass = false
		fmt.Fprintf(w, "FAIL: the stream ended before these packages finished (go test killed?): %s\n", strings.Join(unfinished, " "))
	}
	if started == 0 {
		pass = false
		fmt.Fprintln(w, "FAIL: no package started: the input holds no go test -json events")
	}

	unexpected := 0
	for _, s := range skips {
		if s.expected == nil {
			unexpected++
		}
	}
	fmt.Fprintf(w, "\nskipped tests: %d (%d expected, %d unexpected)\n", len(skips), len(skips)-unexpected, unexpected)
	for _, s := range skips {
		mark := "expected  "
		if s.expected == nil {
			mark = "UNEXPECTED"
		}
		reason := strings.ReplaceAll(s.reason, "\n", "\n                ")
		fmt.Fprintf(w, "  %s %s %s\n                %s\n", mark, relPkg(s.pkg), s.test, reason)
	}
	if unexpected > 0 {
		pass = false
		fmt.Fprintf(w, "FAIL: %d unexpected skips: fix what they need, or, when the skip is right on every machine make test runs on, add a line with the reason to the expected-skips file\n", unexpected)
	}
	printSlowestPackages(w, pkgTimes)
	printSlowest(w, times)
	fmt.Fprintf(w, "packages: %d ok, %d failed (%d did not build), %d without tests; tests: %d passed, %d failed, %d skipped\n",
		c.pkgOK, c.pkgFailed, c.buildFailed, c.pkgNoTests, c.passed, c.failed, len(skips))
	if pass {
		fmt.Fprintln(w, "PASS")
	} else {
		fmt.Fprintln(w, "FAIL")
	}
	return pass, nil
}

// printSlowestPackages lists the slowest packages, slowest first: each
// one's wall time from its test binary's start to its end (go test runs
// several side by side, so they overlap; the longest bounds the test
// step).
func printSlowestPackages(w io.Writer, times []timing) {
	if len(times) == 0 {
		return
	}
	slices.SortStableFunc(times, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	fmt.Fprintf(w, "slowest packages (wall time each; packages run side by side):\n")
	for _, t := range times[:min(slowestPkgs, len(times))] {
		fmt.Fprintf(w, "  %7.1fs  %s\n", t.seconds, relPkg(t.pkg))
	}
}

// printSlowest lists the slowest top-level tests, slowest first, each
// with its slowest parts. Tests of a package run in parallel and packages
// run side by side, so the figures overlap: they say where the time goes,
// not what adds up to it.
func printSlowest(w io.Writer, times []timing) {
	if len(times) == 0 {
		return
	}
	slices.SortStableFunc(times, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	fmt.Fprintf(w, "slowest tests (wall time each; parallel tests overlap):\n")
	for _, t := range times[:min(slowest, len(times))] {
		fmt.Fprintf(w, "  %7.1fs  %s %s\n", t.seconds, relPkg(t.pkg), t.test)
		parts := slices.Clone(t.parts)
		slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(b.seconds, a.seconds) })
		if len(parts) > slowestParts {
			fmt.Fprintf(w, "             its %d slowest parts of %d (it timed them itself):\n", slowestParts, len(parts))
			parts = parts[:slowestParts]
		}
		for _, p := range parts {
			fmt.Fprintf(w, "    %7.1fs  %s\n", p.seconds, p.name)
		}
	}
}

// handle takes one event of package p; it returns the skip when the event
// ends a skipped test.
func handle(w io.Writer, p *pkgState, e event, verbose bool, c *counts) (skip, bool) {
	if verbose && e.Action == "output" {
		fmt.Fprint(w, e.Output)
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			// The package's own lines: "ok", "FAIL", "?", a panic outside
			// any test. A passing package's bare "PASS" is go test -v's.
			if !verbose && e.Output != "PASS\n" {
				fmt.Fprint(w, e.Output)
			}
		case "pass", "fail", "skip":
			switch {
			case e.Action == "pass":
				c.pkgOK++
			case e.Action == "skip":
				c.pkgNoTests++
			default:
				c.pkgFailed++
				// Tests still running when the binary died: their output
				// is the only trace of why.
				for top, lines := range p.out {
					if !p.done[top] {
						printFailed(w, p, lines, verbose)
					}
				}
			}
			p.out = nil // finished
		}
		return skip{}, false
	}
	top, _, _ := strings.Cut(e.Test, "/")
	switch e.Action {
	case "output":
		if p.out != nil {
			p.out[top] = append(p.out[top], line{e.Test, e.Output})
		}
	case "pass", "fail", "skip":
		p.done[e.Test] = true
		var s skip
		switch e.Action {
		case "pass":
			c.passed++
		case "fail":
			c.failed++
			p.failed[e.Test] = true
		case "skip":
			s = skip{pkg: e.Package, test: e.Test, reason: reason(p.out[top], e.Test)}
		}
		if e.Test == top && p.out != nil {
			if p.failed[top] {
				printFailed(w, p, p.out[top], verbose)
			}
			delete(p.out, top)
		}
		return s, e.Action == "skip"
	}
	return skip{}, false
}

// printFailed prints the lines of failed (or unfinished) tests, without
// go test -json's framing, as a plain go test shows a failure.
func printFailed(w io.Writer, p *pkgState, lines []line, verbose bool) {
	if verbose {
		return // already printed
	}
	for _, l := range lines {
		if (p.failed[l.test] || !p.done[l.test]) && !framing(l.text) {
			fmt.Fprint(w, l.text)
		}
	}
}

// framing reports whether s is a line go test -v adds around a test's own
// output.
func framing(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- SKIP:", "--- PASS:"} {
		if strings.HasPrefix(strings.TrimLeft(s, " "), p) {
			return true
		}
	}
	return false
}

// logLine is the start of a message from t.Log, t.Skip and the like.
var logLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: `)

// reason is the skip message of test: its last logged message with its
// continuation lines, or all its output when none looks like one.
func reason(lines []line, test string) string {
	var own []string
	for _, l := range lines {
		if l.test == test && !framing(l.text) {
			own = append(own, strings.TrimRight(l.text, "\n"))
		}
	}
	start := -1
	for i := len(own) - 1; i >= 0; i-- {
		if logLine.MatchString(own[i]) {
			start = i
			break
		}
	}
	if start < 0 {
		start = 0
	}
	msg := own[start:]
	for i := range msg {
		msg[i] = strings.TrimSpace(msg[i])
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, "\n")
}

// match returns the first expectation the skip meets, or nil.
func match(exp []expectation, pkg, test string) *expectation {
	for i := range exp {
		if exp[i].matches(pkg, test) {
			return &exp[i]
		}
	}
	return nil
}

// relPkg shortens a package path of this module to its directory.
func relPkg(pkg string) string {
	if _, rest, ok := strings.Cut(pkg, "github.com/tunbench/tunbench/"); ok {
		return rest
	}
	return pkg
}
