package labtest

import (
	"strconv"
	"strings"
)

// testResult is one top-level test of a "go test -v" run.
type testResult struct {
	name   string
	status string // "PASS", "FAIL" or "SKIP"
	output string // its lines, from "=== RUN" to its subtests' results
	// seconds is its duration, as its result line gives it.
	seconds float64
}

// parseTestOutput finds the top-level tests in the output of a test binary
// run with -test.v, in the order their results appear.
func parseTestOutput(out string) []testResult {
	lines := strings.Split(out, "\n")
	started := map[string]int{} // test name -> index of its first "=== RUN" line
	var results []testResult
	for i, line := range lines {
		if name, ok := strings.CutPrefix(line, "=== RUN   "); ok {
			name = strings.TrimSpace(name)
			if _, seen := started[name]; !seen && !strings.Contains(name, "/") {
				started[name] = i
			}
			continue
		}
		status, name, seconds, ok := resultLine(line)
		if !ok {
			continue
		}
		from, ok := started[name]
		if !ok {
			from = i
		}
		to := i + 1
		for to < len(lines) && strings.HasPrefix(lines[to], " ") {
			to++
		}
		results = append(results, testResult{
			name:    name,
			status:  status,
			output:  strings.Join(lines[from:to], "\n"),
			seconds: seconds,
		})
	}
	return results
}

// resultLine parses an unindented "--- PASS: TestX (0.01s)" line; seconds
// is 0 when the line gives no duration.
func resultLine(line string) (status, name string, seconds float64, ok bool) {
	rest, ok := strings.CutPrefix(line, "--- ")
	if !ok {
		return "", "", 0, false
	}
	status, rest, ok = strings.Cut(rest, ": ")
	if !ok || (status != "PASS" && status != "FAIL" && status != "SKIP") {
		return "", "", 0, false
	}
	name, rest, _ = strings.Cut(rest, " ")
	if name == "" {
		return "", "", 0, false
	}
	if d, ok := strings.CutPrefix(rest, "("); ok {
		seconds, _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(d), "s)"), 64)
	}
	return status, name, seconds, true
}
