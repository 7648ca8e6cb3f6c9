package labtest

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTestOutput(t *testing.T) {
	// Captured from a test binary run with -test.v (Go 1.26).
	b, err := os.ReadFile("testdata/verbose.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := parseTestOutput(string(b))
	want := []testResult{
		{"TestKernelGeneve", "PASS", "=== RUN   TestKernelGeneve\n    c_test.go:3: geneve up\n--- PASS: TestKernelGeneve (0.00s)", 0},
		{"TestKernelGRE", "FAIL", "=== RUN   TestKernelGRE\n=== RUN   TestKernelGRE/v4\n    c_test.go:5: ok\n=== RUN   TestKernelGRE/v6\n" +
			"    c_test.go:6: ip6gre: RTNETLINK answers: Operation not supported\n--- FAIL: TestKernelGRE (0.00s)\n" +
			"    --- PASS: TestKernelGRE/v4 (0.00s)\n    --- FAIL: TestKernelGRE/v6 (0.00s)", 0},
		{"TestKernelOVS", "SKIP", "=== RUN   TestKernelOVS\n    c_test.go:8: needs ovs-vswitchd\n--- SKIP: TestKernelOVS (0.00s)", 0},
		{"TestInLab", "SKIP", "=== RUN   TestInLab\n    c_test.go:9: already inside the kernel lab\n--- SKIP: TestInLab (0.00s)", 0},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(testResult{})); d != "" {
		t.Errorf("parse (-want +got):\n%s", d)
	}
	if got := parseTestOutput("testing: warning: no tests to run\nPASS\n"); len(got) != 0 {
		t.Errorf("no tests: got %v", got)
	}
}

// TestParseTestOutputTimes: each top-level test keeps the duration of
// its result line, which the kernel lab's time lines report. The output
// is internal/method/kernel's test binary's, captured in a lab guest
// (two lanes, on a loaded machine).
func TestParseTestOutputTimes(t *testing.T) {
	b, err := os.ReadFile("testdata/kernel-lab.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range parseTestOutput(string(b)) {
		if r.status != "PASS" {
			t.Errorf("%s: %s", r.name, r.status)
		}
		got[r.name] = r.seconds
	}
	want := map[string]float64{
		"TestLabGeneve": 48.60, "TestLabGRE": 49.05, "TestLabGretap": 62.85, "TestLabIP6GRE": 42.51,
		"TestLabIP6GREThroughAgents": 52.32, "TestLabIP6IP6": 17.95, "TestLabIPIP": 22.38,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("durations (-want +got):\n%s", d)
	}
}
