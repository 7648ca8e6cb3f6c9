package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/compare"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// fixtureDB copies the report packages' fixture database (two real runs,
// see internal/report/internal/fixture/db.go) and returns its path and run ids,
// oldest first.
func fixtureDB(t *testing.T) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	src, err := os.Open("../report/internal/fixture/testdata/fixture.db")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := len(runs) - 1; i >= 0; i-- {
		ids = append(ids, runs[i].ID)
	}
	return path, ids
}

// addRegressedCopy stores a copy of run id as a new run in which every
// vxlan throughput is 30% lower: a known regression.
func addRegressedCopy(t *testing.T, db, id string) string {
	t.Helper()
	return addCopy(t, db, id, "slow", func(c *result.Cell) bool {
		if c.Method == "vxlan" && c.Throughput != nil {
			tp := *c.Throughput
			tp.BitsPerSecond *= 0.7
			c.Throughput = &tp
		}
		return true
	})
}

// addCopy stores a copy of run id as run id-suffix, each cell passed
// through edit first; cells edit returns false for are left out.
func addCopy(t *testing.T, db, id, suffix string, edit func(*result.Cell) bool) string {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	run, cells, err := st.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	run.ID = id + "-" + suffix
	run.Started = run.Started.Add(time.Hour)
	if err := st.BeginRun(ctx, &run); err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		c.RunID = run.ID
		if !edit(&c) {
			continue
		}
		if _, err := st.AddCell(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.FinishRun(ctx, run.ID, result.RunDone, "", run.Started.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

func TestReportCommand(t *testing.T) {
	db, ids := fixtureDB(t)
	out := filepath.Join(t.TempDir(), "kernels.html")
	code, stdout, stderr := run(t, "report", "--db", db, "-o", out, ids[0], ids[1])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Run " + ids[0], "Run " + ids[1], "Take-aways", "Comparison", "Environment"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	files, err := os.ReadDir(strings.TrimSuffix(out, ".html") + "-files")
	if err != nil {
		t.Fatal(err)
	}
	var svg, png int
	for _, f := range files {
		switch filepath.Ext(f.Name()) {
		case ".svg":
			svg++
		case ".png":
			png++
		}
	}
	if svg == 0 || svg != png {
		t.Errorf("%d SVG and %d PNG figure files", svg, png)
	}
	if !strings.Contains(stdout, "kernels-files") {
		t.Errorf("stdout does not say where the figures went: %q", stdout)
	}
}

// TestCompareCommand: every outcome of compare with its exit status and
// what it prints: no change, better, worse within the threshold, a
// regression, no cell in common, a cell missing from run B and a cell that
// failed in run B (each refused unless --allow-missing).
func TestCompareCommand(t *testing.T) {
	db, ids := fixtureDB(t)
	a := ids[0]
	scaled := func(f float64) func(*result.Cell) bool {
		return func(c *result.Cell) bool {
			if c.Method == "vxlan" && c.Throughput != nil {
				tp := *c.Throughput
				tp.BitsPerSecond *= f
				c.Throughput = &tp
			}
			return true
		}
	}
	slow := addRegressedCopy(t, db, a)
	fast := addCopy(t, db, a, "fast", scaled(3))
	other := addCopy(t, db, a, "other", func(c *result.Cell) bool {
		c.Key = "other-matrix/" + c.Key
		return true
	})
	missing := addCopy(t, db, a, "missing", func(c *result.Cell) bool { return c.Method != "vxlan" })
	failed := addCopy(t, db, a, "failed", func(c *result.Cell) bool {
		if c.Method == "vxlan" {
			c.Status, c.Error = result.StatusFailed, "setup: vxlan: operation not supported"
			c.Throughput, c.Latency, c.CPU, c.Derived = nil, nil, nil, nil
		}
		return true
	})

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     string
		noInStdout string
	}{
		{"no change", []string{a, a}, 0, []string{"verdict: no significant change\n", "doubts, said, not failing the gate"}, "", "lost"},
		{"no change, strict", []string{"--strict", a, a}, ExitInconclusive, []string{"unstable", "doubts, failing the gate (--strict)"}, "--strict:", ""},
		{"better", []string{a, fast}, 0, []string{" better ", "verdict: better\n"}, "", "(regression)"},
		{"worse within the threshold", []string{"--threshold", "50%", a, slow}, 0, []string{" worse ", "verdict: some figures worse, none by more than 50%"}, "", "(regression)"},
		{"regression", []string{"--threshold", "5%", a, slow}, ExitRegression, []string{"worse (regression)", "verdict: regression:"}, "regress by more than 5%", ""},
		{"no common cells", []string{a, other}, ExitNoCommon, []string{"0 figures compared", "verdict: no common cells"}, "no cell in common", ""},
		{"no common cells, missing allowed", []string{"--allow-missing", a, other}, ExitNoCommon, []string{"verdict: no common cells"}, "no cell in common", ""},
		{"a cell missing", []string{a, missing}, ExitLost, []string{"lost: ok in run A, missing or failed in run B", "vxlan", ": missing", "verdict: lost: "}, "--allow-missing", ""},
		{"a cell missing, allowed", []string{"--allow-missing", a, missing}, 0, []string{"(allowed by --allow-missing)", "lost cell(s) allowed"}, "", ""},
		{"a cell failed", []string{a, failed}, ExitLost, []string{": failed: setup: vxlan: operation not supported", "verdict: lost: "}, "missing or failed", ""},
		{"a cell failed, allowed", []string{"--allow-missing", a, failed}, 0, []string{": failed: setup: vxlan"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"compare", "--db", db}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q: %s", tt.stderr, stderr)
			}
			if tt.noInStdout != "" && strings.Contains(stdout, tt.noInStdout) {
				t.Errorf("stdout has %q:\n%s", tt.noInStdout, stdout)
			}
		})
	}

	t.Run("json and one-sided cells", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, "--json", ids[0], ids[1])
		// The matrix run has MTU 9000 and offloads-off cells the streams
		// run lacks: lost, so the gate fails.
		if code != ExitLost {
			t.Fatalf("exit %d, want %d: %s", code, ExitLost, stderr)
		}
		var c compare.Comparison
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatalf("--json output does not parse: %v\n%s", err, stdout)
		}
		if c.Schema != compare.CompareSchema || c.Confidence != 0.95 || len(c.Rows) == 0 {
			t.Errorf("comparison: schema %q, confidence %g, %d rows", c.Schema, c.Confidence, len(c.Rows))
		}
		// The streams run has 4-stream cells the matrix run lacks.
		if len(c.OnlyA) == 0 || len(c.OnlyB) == 0 {
			t.Errorf("cells in only one run not listed: only A %q, only B %q", c.OnlyA, c.OnlyB)
		}
		if c.Outcome != compare.OutcomeLost || len(c.Lost) == 0 {
			t.Errorf("outcome %q with %d lost cells, want %q", c.Outcome, len(c.Lost), compare.OutcomeLost)
		}
		for _, l := range c.Lost {
			if l.Status != "missing" {
				t.Errorf("lost cell %s: status %q, want missing", l.Name, l.Status)
			}
		}
	})

	t.Run("bad threshold", func(t *testing.T) {
		code, _, stderr := run(t, "compare", "--db", db, "--threshold", "five", a, a)
		if code != 1 || !strings.Contains(stderr, "--threshold") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}

// TestCompareGate: the judgement a CI gate rests on, on the stored real
// runs of the fixture (issue 42). The matrix run and the streams run
// measured the same single-stream cells three times each: six real
// repetitions of native and of vxlan.
func TestCompareGate(t *testing.T) {
	db, ids := fixtureDB(t)
	ctx := context.Background()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	matrix, matrixCells, err := st.Run(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	_, streamsCells, err := st.Run(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	shared := func(c result.Cell) bool {
		return (c.Method == "native" || c.Method == "vxlan") && c.Params.Streams == 1 &&
			c.Params.UnderlayMTU == 1500 && c.Params.Offloads
	}
	// store adds run id with cells: reps picks the shared cells' first n
	// repetitions of the matrix run, then the streams run's, renumbered.
	store := func(id string, n int, edit func(*result.Cell)) string {
		t.Helper()
		r := matrix
		r.ID, r.Started = id, matrix.Started.Add(time.Duration(len(id))*time.Minute)
		if err := st.BeginRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, c := range append(append([]result.Cell{}, matrixCells...), streamsCells...) {
			if !shared(c) || count[c.Key] == n {
				continue
			}
			count[c.Key]++
			c.RunID, c.Repetition = id, count[c.Key]
			edit(&c)
			if _, err := st.AddCell(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishRun(ctx, id, result.RunDone, "", r.Started.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	same := func(*result.Cell) {}
	halved := func(c *result.Cell) {
		tp := *c.Throughput
		tp.BitsPerSecond /= 2
		c.Throughput = &tp
	}
	// Issue 42's run B: half the throughput, a p99 RTT that looks better,
	// on a busy machine.
	halvedBusy := func(c *result.Cell) {
		halved(c)
		l := *c.Latency
		l.P99 *= 0.7
		c.Latency = &l
		c.Meta.Busy, c.Meta.BackgroundBusy = true, 55
	}
	a2, b2 := store("a-two", 2, same), store("b-two-halved", 2, halvedBusy)
	a5, b5 := store("a-five", 5, same), store("b-five-halved", 5, halved)
	st.Close()

	t.Run("halved at two repetitions", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, a2, b2)
		if code == 0 || strings.Contains(stdout, "verdict: better") {
			t.Fatalf("a halved throughput passed: exit %d\n%s", code, stdout)
		}
		if code != ExitInconclusive && code != ExitRegression {
			t.Fatalf("exit %d, want %d (inconclusive) or %d (regression): %s", code, ExitInconclusive, ExitRegression, stderr)
		}
		if code == ExitInconclusive && (!strings.Contains(stdout, "verdict: inconclusive") || !strings.Contains(stdout, "repetitions per run")) {
			t.Errorf("inconclusive without the repetitions that would decide it:\n%s", stdout)
		}
		for _, want := range []string{"busy background", "secondary"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
	})
	t.Run("identical", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, a5, a5)
		if code != 0 || !strings.Contains(stdout, "verdict: no significant change\n") {
			t.Fatalf("identical runs: exit %d, stderr %q\n%s", code, stderr, stdout)
		}
	})
	t.Run("halved at five repetitions", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, "--json", a5, b5)
		if code != ExitRegression {
			t.Fatalf("exit %d, want %d: %s\n%s", code, ExitRegression, stderr, stdout)
		}
		var c compare.Comparison
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Rows {
			if r.Metric == "throughput" && (r.Verdict != compare.VerdictWorse || !r.Regression || !r.Primary) {
				t.Errorf("%s throughput halved at five repetitions: %s (regression %v), want worse, a regression", r.Name, r.Verdict, r.Regression)
			}
		}
	})
}
