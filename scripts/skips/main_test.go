package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pkgA = "github.com/tunbench/tunbench/internal/a"

// stream builds a go test -json stream: each event is a JSON object, or a
// plain line when it is a string.
func stream(t *testing.T, events ...any) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if s, ok := e.(string); ok {
			b.WriteString(s + "\n")
			continue
		}
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

func out(pkg, test, text string) event {
	return event{Action: "output", Package: pkg, Test: test, Output: text + "\n"}
}

func act(action, pkg, test string) event { return event{Action: action, Package: pkg, Test: test} }

// A run as go test -json prints it: a passing test, a skipped top-level
// test with a two-line reason after a log line, a skipped subtest.
func passingRun(t *testing.T) string {
	return stream(t,
		"go: downloading example.com/x v1.0.0",
		act("start", pkgA, ""),
		act("run", pkgA, "TestPass"),
		out(pkgA, "TestPass", "=== RUN   TestPass"),
		out(pkgA, "TestPass", "    a_test.go:5: hello"),
		out(pkgA, "TestPass", "--- PASS: TestPass (0.00s)"),
		act("pass", pkgA, "TestPass"),
		act("run", pkgA, "TestLabGeneve"),
		out(pkgA, "TestLabGeneve", "=== RUN   TestLabGeneve"),
		out(pkgA, "TestLabGeneve", "    a_test.go:6: first a log line"),
		out(pkgA, "TestLabGeneve", "    a_test.go:7: kernel lacks CONFIG_GENEVE"),
		out(pkgA, "TestLabGeneve", "        runs in the kernel lab"),
		out(pkgA, "TestLabGeneve", "--- SKIP: TestLabGeneve (0.00s)"),
		act("skip", pkgA, "TestLabGeneve"),
		act("run", pkgA, "TestSub"),
		out(pkgA, "TestSub", "=== RUN   TestSub"),
		act("run", pkgA, "TestSub/one"),
		out(pkgA, "TestSub/one", "=== RUN   TestSub/one"),
		out(pkgA, "TestSub/one", "    a_test.go:9: needs the lab's kernel"),
		out(pkgA, "TestSub/one", "--- SKIP: TestSub/one (0.00s)"),
		act("skip", pkgA, "TestSub/one"),
		out(pkgA, "TestSub", "--- PASS: TestSub (0.00s)"),
		act("pass", pkgA, "TestSub"),
		out(pkgA, "", "PASS"),
		out(pkgA, "", "ok  \t"+pkgA+"\t0.01s"),
		act("pass", pkgA, ""),
		act("start", "github.com/tunbench/tunbench/internal/b", ""),
		out("github.com/tunbench/tunbench/internal/b", "", "?   \tgithub.com/tunbench/tunbench/internal/b\t[no test files]"),
		act("skip", "github.com/tunbench/tunbench/internal/b", ""),
	)
}

func expect(t *testing.T, lines ...string) []expectation {
	t.Helper()
	exp, err := parseExpected("expected", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func runOn(t *testing.T, in string, exp []expectation) (bool, string) {
	t.Helper()
	var w bytes.Buffer
	ok, err := run(strings.NewReader(in), &w, exp, false)
	if err != nil {
		t.Fatal(err)
	}
	return ok, w.String()
}

func TestExpectedSkipsPass(t *testing.T) {
	exp := expect(t,
		"# comment",
		"",
		"internal/a TestLab.* host kernel lacks the tunnel; TestKernelLab covers it",
		"github.com/tunbench/tunbench/internal/a TestSub/.* runs in the lab",
	)
	ok, got := runOn(t, passingRun(t), exp)
	if !ok {
		t.Errorf("every skip expected, no failure: run failed\n%s", got)
	}
	for _, want := range []string{
		"go: downloading example.com/x v1.0.0\n", // not JSON: copied
		"ok  \t" + pkgA + "\t0.01s\n",
		"?   \tgithub.com/tunbench/tunbench/internal/b\t[no test files]\n",
		"skipped tests: 2 (2 expected, 0 unexpected)",
		"expected   internal/a TestLabGeneve\n                a_test.go:7: kernel lacks CONFIG_GENEVE\n                runs in the kernel lab\n",
		"expected   internal/a TestSub/one\n                a_test.go:9: needs the lab's kernel\n",
		"packages: 1 ok, 0 failed (0 did not build), 1 without tests; tests: 2 passed, 0 failed, 2 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "\nPASS\n") {
		t.Errorf("output does not end with PASS:\n%s", got)
	}
	for _, noise := range []string{"=== RUN", "--- PASS", "hello", "first a log line", "\nPASS\nok"} {
		if strings.Contains(got, noise) {
			t.Errorf("output of passing tests shown (%q), unlike a plain go test:\n%s", noise, got)
		}
	}
}

func TestUnexpectedSkipFails(t *testing.T) {
	for name, exp := range map[string][]expectation{
		"no file lines":   nil,
		"other package":   expect(t, "internal/ab TestLab.* x", "internal TestSub/one x"),
		"partial name":    expect(t, "internal/a TestLab x", "internal/a TestSub x"),
		"other test only": expect(t, "internal/a TestSub/one the lab"),
	} {
		ok, got := runOn(t, passingRun(t), exp)
		if ok {
			t.Errorf("%s: an unexpected skip passed:\n%s", name, got)
		}
		if !strings.Contains(got, "UNEXPECTED internal/a TestLabGeneve\n") || !strings.HasSuffix(got, "\nFAIL\n") {
			t.Errorf("%s: unexpected skip not named, or no final FAIL:\n%s", name, got)
		}
	}
}

func TestFailureShownAndFails(t *testing.T) {
	in := stream(t,
		act("start", pkgA, ""),
		act("run", pkgA, "TestSub"),
		out(pkgA, "TestSub", "=== RUN   TestSub"),
		act("run", pkgA, "TestSub/ok"),
		out(pkgA, "TestSub/ok", "=== RUN   TestSub/ok"),
		out(pkgA, "TestSub/ok", "    a_test.go:3: chatter of a passing subtest"),
		out(pkgA, "TestSub/ok", "--- PASS: TestSub/ok (0.00s)"),
		act("pass", pkgA, "TestSub/ok"),
		act("run", pkgA, "TestSub/bad"),
		out(pkgA, "TestSub/bad", "=== RUN   TestSub/bad"),
		out(pkgA, "TestSub/bad", "    a_test.go:9: boom"),
		out(pkgA, "TestSub/bad", "--- FAIL: TestSub/bad (0.00s)"),
		act("fail", pkgA, "TestSub/bad"),
		out(pkgA, "TestSub", "--- FAIL: TestSub (0.00s)"),
		act("fail", pkgA, "TestSub"),
		out(pkgA, "", "FAIL"),
		out(pkgA, "", "FAIL\t"+pkgA+"\t0.01s"),
		act("fail", pkgA, ""),
	)
	ok, got := runOn(t, in, nil)
	if ok {
		t.Errorf("a failed test passed:\n%s", got)
	}
	want := "    a_test.go:9: boom\n--- FAIL: TestSub/bad (0.00s)\n--- FAIL: TestSub (0.00s)\nFAIL\nFAIL\t" + pkgA + "\t0.01s\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("output does not start with the failure as go test shows it, %q:\n%s", want, got)
	}
	if strings.Contains(got, "chatter") {
		t.Errorf("a passing subtest's output shown:\n%s", got)
	}
	if !strings.Contains(got, "packages: 0 ok, 1 failed") || !strings.HasSuffix(got, "\nFAIL\n") {
		t.Errorf("counts or final FAIL missing:\n%s", got)
	}
}

func TestBuildFailureFails(t *testing.T) {
	in := stream(t,
		event{ImportPath: pkgA + " [" + pkgA + ".test]", Action: "build-output", Output: "# " + pkgA + "\n"},
		event{ImportPath: pkgA + " [" + pkgA + ".test]", Action: "build-output", Output: "a_test.go:5:28: undefined: x\n"},
		event{ImportPath: pkgA + " [" + pkgA + ".test]", Action: "build-fail"},
		act("start", pkgA, ""),
		out(pkgA, "", "FAIL\t"+pkgA+" [build failed]"),
		event{Action: "fail", Package: pkgA, FailedBuild: pkgA + " [" + pkgA + ".test]"},
	)
	ok, got := runOn(t, in, nil)
	if ok || !strings.Contains(got, "a_test.go:5:28: undefined: x\n") || !strings.Contains(got, "FAIL\t"+pkgA+" [build failed]\n") {
		t.Errorf("build failure: ok %v\n%s", ok, got)
	}
}

// A test binary that dies mid-test (a timeout's panic) fails the package;
// the running test's output is shown.
func TestCrashShowsRunningTest(t *testing.T) {
	in := stream(t,
		act("start", pkgA, ""),
		act("run", pkgA, "TestHang"),
		out(pkgA, "TestHang", "=== RUN   TestHang"),
		out(pkgA, "TestHang", "    a_test.go:4: waiting"),
		out(pkgA, "", "panic: test timed out after 1s"),
		out(pkgA, "", "FAIL\t"+pkgA+"\t1.01s"),
		act("fail", pkgA, ""),
	)
	ok, got := runOn(t, in, nil)
	if ok || !strings.Contains(got, "panic: test timed out after 1s\n") || !strings.Contains(got, "a_test.go:4: waiting\n") {
		t.Errorf("crash: ok %v\n%s", ok, got)
	}
}

func TestTruncatedOrEmptyStreamFails(t *testing.T) {
	full := passingRun(t)
	cut := full[:strings.Index(full, "--- PASS: TestSub ")]
	cut = cut[:strings.LastIndex(cut, "\n")+1] // the package never ends
	exp := expect(t, "internal/a Test.* x")
	for name, in := range map[string]string{"truncated": cut, "empty": "", "not JSON": "go: no Go files\n"} {
		ok, got := runOn(t, in, exp)
		if ok || !strings.HasSuffix(got, "\nFAIL\n") {
			t.Errorf("%s stream passed:\n%s", name, got)
		}
	}
}

func TestParseExpectedErrors(t *testing.T) {
	for _, in := range []string{
		"internal/a TestX",                  // no reason
		"internal/a Test( missing ) reason", // bad pattern
	} {
		if _, err := parseExpected("e", strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// The repository's own files parse (the central one and every family's),
// and each line names a directory of the module.
func TestRepositoryExpectedSkips(t *testing.T) {
	exp, err := readRepository(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, e := range exp {
		files[filepath.ToSlash(e.file)] = true
		if strings.Contains(e.pkg, ".") {
			t.Errorf("%s:%d: package %q: use the directory relative to the module", e.file, e.line, e.pkg)
		} else if _, err := os.Stat(filepath.Join("..", "..", e.pkg)); err != nil {
			t.Errorf("%s:%d: package %q: %v", e.file, e.line, e.pkg, err)
		}
	}
	for _, want := range []string{"../../scripts/expected-skips.txt", "../../internal/method/kernel/expected-skips.txt"} {
		if !files[want] {
			t.Errorf("no expected skip read from %s (read: %v)", want, files)
		}
	}
}

// A family's file is read beside the central one: a skip only it names is
// expected, and a bad line in it is an error naming the file and line.
func TestFamilyExpectedSkips(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"scripts/expected-skips.txt":             "internal/cli  TestLabX  lab only\n",
		"internal/method/fam/expected-skips.txt": "# fam\ninternal/method/fam  TestLabFam(/.*)?  host kernel lacks it\ninternal/method/registry  TestMethodsThroughAgents/fam/.*  same\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exp, err := readRepository(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pkg, test string
		want      bool
	}{
		{"github.com/x/internal/method/fam", "TestLabFam/ipv4", true},
		{"github.com/x/internal/method/registry", "TestMethodsThroughAgents/fam/ipv6", true},
		{"github.com/x/internal/cli", "TestLabX", true},
		{"github.com/x/internal/method/fam", "TestOther", false},
	} {
		got := false
		for _, e := range exp {
			got = got || e.matches(c.pkg, c.test)
		}
		if got != c.want {
			t.Errorf("%s %s: expected %v, want %v", c.pkg, c.test, got, c.want)
		}
	}
	bad := filepath.Join(root, "internal/method/fam/expected-skips.txt")
	if err := os.WriteFile(bad, []byte("internal/method/fam  TestLab(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRepository(root); err == nil || !strings.Contains(err.Error(), "fam/expected-skips.txt:1") {
		t.Errorf("a bad line in a family's file: error %v, want one naming the file and line", err)
	}
}

// -v copies every line of test output, framing included, and still ends
// with the skip list.
func TestVerboseCopiesEverything(t *testing.T) {
	var w bytes.Buffer
	ok, err := run(strings.NewReader(passingRun(t)), &w, expect(t, "internal/a Test.* x"), true)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v\n%s", ok, err, w.String())
	}
	got := w.String()
	for _, want := range []string{"=== RUN   TestPass\n    a_test.go:5: hello\n--- PASS: TestPass (0.00s)\n", "\nPASS\nok  \t" + pkgA, "skipped tests: 2 (2 expected, 0 unexpected)"} {
		if !strings.Contains(got, want) {
			t.Errorf("verbose output lacks %q:\n%s", want, got)
		}
	}
}

// The summary lists the slowest top-level tests, slowest first, with
// their package: subtests and skips are not among them, and past the
// tenth no more are listed.
func TestSlowestTests(t *testing.T) {
	ev := []any{act("start", pkgA, "")}
	timed := func(action, test string, s float64) event {
		e := act(action, pkgA, test)
		e.Elapsed = s
		return e
	}
	for i := range 12 {
		name := "TestN" + strconv.Itoa(i)
		ev = append(ev, act("run", pkgA, name), timed("pass", name, float64(i)))
	}
	ev = append(ev,
		act("run", pkgA, "TestFailed"), act("run", pkgA, "TestFailed/sub"),
		timed("fail", "TestFailed/sub", 99), timed("fail", "TestFailed", 100),
		act("run", pkgA, "TestSkipped"), timed("skip", "TestSkipped", 200),
		out(pkgA, "", "FAIL"), act("fail", pkgA, ""))
	_, got := runOn(t, stream(t, ev...), nil)
	_, list, ok := strings.Cut(got, "slowest tests (wall time each; parallel tests overlap):\n")
	if !ok {
		t.Fatalf("no list of the slowest tests:\n%s", got)
	}
	list, _, _ = strings.Cut(list, "packages:")
	want := "    100.0s  internal/a TestFailed\n"
	for i := 11; i > 2; i-- {
		want += fmt.Sprintf("  %7.1fs  internal/a TestN%d\n", float64(i), i)
	}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("slowest tests (-want +got):\n%s", diff)
	}
}

// The summary also lists the slowest packages, and under a slow test
// the parts it timed itself ("time: NAME 12.3s" log lines, from the test
// or its subtests), slowest first; other log lines are not parts.
func TestSlowestPackagesAndParts(t *testing.T) {
	const pkgB = "github.com/tunbench/tunbench/internal/b"
	timed := func(action, pkg, test string, s float64) event {
		e := act(action, pkg, test)
		e.Elapsed = s
		return e
	}
	ev := []any{
		act("start", pkgA, ""), act("start", pkgB, ""),
		act("run", pkgA, "TestLab"),
		out(pkgA, "TestLab", "=== RUN   TestLab"),
		out(pkgA, "TestLab", "    lab_test.go:40: time: kernel-lab/compile 41.0s"),
		out(pkgA, "TestLab", "    lab_test.go:40: time: kernel-lab/registry 550.5s"),
		out(pkgA, "TestLab", "    lab_test.go:41: the time: is not a part"),
		act("run", pkgA, "TestLab/sub"),
		out(pkgA, "TestLab/sub", "    lab_test.go:50: time: kernel-lab/registry/TestLabX 186s"),
		timed("pass", pkgA, "TestLab/sub", 0),
		out(pkgA, "TestLab", "--- PASS: TestLab (700.00s)"),
		timed("pass", pkgA, "TestLab", 700),
		act("run", pkgB, "TestB"), timed("pass", pkgB, "TestB", 3),
		out(pkgA, "", "ok  \t"+pkgA+"\t701.0s"), timed("pass", pkgA, "", 701),
		out(pkgB, "", "ok  \t"+pkgB+"\t4.0s"), timed("pass", pkgB, "", 4),
	}
	_, got := runOn(t, stream(t, ev...), nil)
	_, list, ok := strings.Cut(got, "slowest packages (wall time each; packages run side by side):\n")
	if !ok {
		t.Fatalf("no list of the slowest packages:\n%s", got)
	}
	list, _, _ = strings.Cut(list, "packages:")
	want := "    701.0s  internal/a\n" +
		"      4.0s  internal/b\n" +
		"slowest tests (wall time each; parallel tests overlap):\n" +
		"    700.0s  internal/a TestLab\n" +
		"      550.5s  kernel-lab/registry\n" +
		"      186.0s  kernel-lab/registry/TestLabX\n" +
		"       41.0s  kernel-lab/compile\n" +
		"      3.0s  internal/b TestB\n"
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("slowest packages and tests (-want +got):\n%s", diff)
	}
}
