package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store/pgtest"
)

// localRuns fills a SQLite file with n finished runs of cells cells each
// and returns it.
func localRuns(t testing.TB, n, cells int) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for i := range n {
		r := newRun("run-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), t0.Add(time.Duration(i)*time.Minute))
		if err := s.BeginRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
		for rep := 1; rep <= cells; rep++ {
			c := fullCell(r.ID, rep)
			if _, err := s.AddCell(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FinishRun(ctx, r.ID, result.RunDone, "", r.Started.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestPush: runs pushed from a local file arrive whole, labels and all;
// pushing them again is a no-op; a push interrupted half way through a run
// leaves no part of that run on the target, and pushing again completes
// it. Against both kinds of target.
func TestPush(t *testing.T) { eachBackend(t, testPush) }

func testPush(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	local := localRuns(t, 3, 4)
	target := open(t)

	st, err := local.Push(ctx, target, []string{"run-a", "run-b"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ImportStats{Runs: 2, Cells: 8}, st); diff != "" {
		t.Errorf("first push (-want +got):\n%s", diff)
	}
	for _, id := range []string{"run-a", "run-b"} {
		wantRun, wantCells, _ := local.Run(ctx, id)
		gotRun, gotCells, err := target.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantRun, gotRun); diff != "" {
			t.Errorf("pushed run %s (-local +target):\n%s", id, diff)
		}
		if diff := cmp.Diff(wantCells, gotCells, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ID" }, cmp.Ignore())); diff != "" {
			t.Errorf("pushed cells of %s (-local +target):\n%s", id, diff)
		}
	}
	again, err := local.Push(ctx, target, []string{"run-a", "run-b"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ImportStats{Skipped: []string{"run-a", "run-b"}}, again); diff != "" {
		t.Errorf("second push is not a no-op (-want +got):\n%s", diff)
	}

	// Interrupted after the first two of run-c's four cells.
	cctx, cancel := context.WithCancel(ctx)
	copyBatch = 2
	testHookCopied = func(n int) {
		if n == 2 {
			cancel()
		}
	}
	_, err = local.Push(cctx, target, []string{"run-c"})
	testHookCopied, copyBatch = nil, 100
	if err == nil {
		t.Fatal("a push cancelled half way succeeded")
	}
	if _, _, err := target.Run(ctx, "run-c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after an interrupted push the target has run-c (err %v): a partial run", err)
	}
	st, err = local.Push(ctx, target, []string{"run-c"})
	if err != nil || st.Runs != 1 || st.Cells != 4 {
		t.Fatalf("push after the interruption: %+v, %v; want run-c's 4 cells", st, err)
	}

	// A run still running is not pushed, nor is an unknown one.
	r := newRun("run-live", t0.Add(time.Hour))
	if err := local.BeginRun(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Push(ctx, target, []string{"run-live"}); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("push of a running run: %v, want refused as still running", err)
	}
	if _, err := local.Push(ctx, target, []string{"nope"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("push of an unknown run: %v, want ErrNotFound", err)
	}
}

func TestParseLocation(t *testing.T) {
	for _, ok := range []struct {
		v        string
		postgres bool
	}{
		{"results.db", false},
		{"/srv/tunbench/results.db", false},
		{"./a:b.db", false},
		{"postgres://tunbench@db.example:5432/tb", true},
		{"postgresql://u:secret@127.0.0.1/tb?sslmode=disable", true},
		{"postgres:///tb?host=/run/postgresql", true},
	} {
		loc, err := ParseLocation(ok.v)
		if err != nil || loc.Postgres != ok.postgres || loc.Value != ok.v {
			t.Errorf("ParseLocation(%q) = %+v, %v; want postgres %v", ok.v, loc, err, ok.postgres)
		}
	}
	for _, bad := range []struct{ v, want string }{
		{"", "empty"},
		{"mysql://root@db/tb", `scheme "mysql:"`},
		{"sqlite:///tmp/r.db", `scheme "sqlite:"`},
		{"file:r.db", `scheme "file:"`},
		{"postgres:tb", "malformed"},
		{"postgres://u:hunter2@/tb", "no host"},
		{"postgres://u:hunter2@db.example:5432", "no database"},
	} {
		_, err := ParseLocation(bad.v)
		if err == nil || !errors.Is(err, ErrBadLocation) || !strings.Contains(err.Error(), bad.want) ||
			!strings.Contains(err.Error(), "postgres://USER@HOST:PORT/DATABASE") {
			t.Errorf("ParseLocation(%q) = %v; want an error with %q and the accepted forms", bad.v, err, bad.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseLocation(%q): the error shows the password: %v", bad.v, err)
		}
	}
}

// TestOpenRefusesUnknownURL: a URL of an unsupported kind is refused and
// nothing is created (once, "postgres:" became a directory).
func TestOpenRefusesUnknownURL(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, v := range []string{"mysql://root@127.0.0.1:3306/tb", "postgres:tb", "sqlite:results.db"} {
		if s, err := Open(v); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", v)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused locations created %v", entries)
	}
}

// BenchmarkPush1000Runs: push 1,000 runs of 9 cells each (three methods,
// three repetitions) from a local file to a PostgreSQL database on this
// machine (issue 42's target: under 30 s). Each iteration pushes to a
// fresh database.
func BenchmarkPush1000Runs(b *testing.B) {
	const runs, cells = 1000, 9
	local := localRuns(b, runs, cells)
	ctx := context.Background()
	all, err := local.Runs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(all))
	for i, r := range all {
		ids[i] = r.ID
	}
	for b.Loop() {
		b.StopTimer()
		target, err := Open(pgtest.URL(b))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := local.Push(ctx, target, ids)
		if err != nil || st.Runs != runs || st.Cells != runs*cells {
			b.Fatalf("push: %+v, %v", st, err)
		}
		b.StopTimer()
		target.Close()
		b.StartTimer()
	}
}
