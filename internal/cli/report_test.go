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

	"github.com/tunbench/tunbench/internal/report"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// fixtureDB copies the report package's fixture database (two real runs,
// see internal/report/fixturedb_test.go) and returns its path and run ids,
// oldest first.
func fixtureDB(t *testing.T) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	src, err := os.Open("../report/testdata/fixture.db")
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
	run.ID = id + "-slow"
	run.Started = run.Started.Add(time.Hour)
	if err := st.BeginRun(ctx, &run); err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		c.RunID = run.ID
		if c.Method == "vxlan" && c.Throughput != nil {
			tp := *c.Throughput
			tp.BitsPerSecond *= 0.7
			c.Throughput = &tp
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

func TestCompareCommand(t *testing.T) {
	db, ids := fixtureDB(t)
	a := ids[0]

	t.Run("identical runs", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, a, a)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "verdict: no significant change\n") {
			t.Errorf("identical runs not called unchanged:\n%s", stdout)
		}
	})

	slow := addRegressedCopy(t, db, a)
	t.Run("known regression", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, "--threshold", "5%", a, slow)
		if code != ExitRegression {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr: %s", code, ExitRegression, stdout, stderr)
		}
		if !strings.Contains(stdout, "worse (regression)") || !strings.Contains(stderr, "regress by more than 5%") {
			t.Errorf("regression not reported:\nstdout:\n%s\nstderr: %s", stdout, stderr)
		}
		// A 30% drop is under a 50% threshold: worse, but no failure.
		code, _, stderr = run(t, "compare", "--db", db, "--threshold", "50%", a, slow)
		if code != 0 {
			t.Errorf("exit %d with --threshold 50%%: %s", code, stderr)
		}
	})

	t.Run("json and one-sided cells", func(t *testing.T) {
		code, stdout, stderr := run(t, "compare", "--db", db, "--json", ids[0], ids[1])
		if code != 0 && code != ExitRegression {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var c report.Comparison
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatalf("--json output does not parse: %v\n%s", err, stdout)
		}
		if c.Schema != report.CompareSchema || c.Confidence != 0.95 || len(c.Rows) == 0 {
			t.Errorf("comparison: schema %q, confidence %g, %d rows", c.Schema, c.Confidence, len(c.Rows))
		}
		// The matrix run has MTU 9000 and offloads-off cells the streams
		// run lacks, and the streams run has 4-stream cells.
		if len(c.OnlyA) == 0 || len(c.OnlyB) == 0 {
			t.Errorf("cells in only one run not listed: only A %q, only B %q", c.OnlyA, c.OnlyB)
		}
	})

	t.Run("bad threshold", func(t *testing.T) {
		code, _, stderr := run(t, "compare", "--db", db, "--threshold", "five", a, a)
		if code != 1 || !strings.Contains(stderr, "--threshold") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}
