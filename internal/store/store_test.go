package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
)

func TestCellRoundTrip(t *testing.T) { eachBackend(t, testCellRoundTrip) }

func testCellRoundTrip(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	s := open(t)
	run := newRun("20250314T092653-a1b2", t0)
	if err := s.BeginRun(ctx, &run); err != nil {
		t.Fatal(err)
	}
	want := fullCell(run.ID, 2)
	id, err := s.AddCell(ctx, &want)
	if err != nil {
		t.Fatal(err)
	}
	if id == 0 || want.ID != id {
		t.Fatalf("AddCell returned id %d and set c.ID = %d; want equal and non-zero", id, want.ID)
	}
	// The first interval starts at 0 and the first CDF point is at
	// fraction 0; everything else must be set.
	allowed := map[string]bool{
		".Throughput.Intervals[0].Start": true,
		".Latency.CDF[0].Fraction":       true,
	}
	for _, p := range zeroFields(reflect.ValueOf(want), "") {
		if !allowed[p] {
			t.Errorf("fixture leaves %s zero; set it so the round trip covers it", p)
		}
	}

	gotRun, cells, err := s.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(run, gotRun); diff != "" {
		t.Errorf("run after round trip (-want +got):\n%s", diff)
	}
	if len(cells) != 1 {
		t.Fatalf("got %d cells, want 1", len(cells))
	}
	if diff := cmp.Diff(want, cells[0]); diff != "" {
		t.Errorf("cell after round trip (-want +got):\n%s", diff)
	}
}

func TestFinishRunAndList(t *testing.T) { eachBackend(t, testFinishRunAndList) }

func testFinishRunAndList(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	s := open(t)
	older := newRun("run-old", t0)
	newer := newRun("run-new", t0.Add(time.Hour))
	for _, r := range []*result.Run{&newer, &older} { // insertion order must not matter
		if err := s.BeginRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	fin := t0.Add(2 * time.Hour)
	if err := s.FinishRun(ctx, "run-old", result.RunFailed, "setup srv6: missing seg6 module", fin); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"run-new", "run-old"}, ids); diff != "" {
		t.Errorf("Runs order, newest first (-want +got):\n%s", diff)
	}
	got := runs[1]
	if got.Status != result.RunFailed || got.Error != "setup srv6: missing seg6 module" || !got.Finished.Equal(fin) {
		t.Errorf("finished run = status %q error %q finished %v; want failed, the error, %v",
			got.Status, got.Error, got.Finished, fin)
	}
	if !runs[0].Finished.IsZero() || runs[0].Status != result.RunRunning {
		t.Errorf("unfinished run = status %q finished %v; want running with zero finish time",
			runs[0].Status, runs[0].Finished)
	}
	if err := s.FinishRun(ctx, "nope", result.RunDone, "", fin); !errors.Is(err, ErrNotFound) {
		t.Errorf("FinishRun of a missing run: err = %v, want ErrNotFound", err)
	}
}

func TestBeginRunRejects(t *testing.T) { eachBackend(t, testBeginRunRejects) }

func testBeginRunRejects(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	s := open(t)
	if err := s.BeginRun(ctx, &result.Run{}); err == nil {
		t.Error("BeginRun with an empty id succeeded")
	}
	r := newRun("dup", t0)
	if err := s.BeginRun(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(ctx, &r); err == nil {
		t.Error("BeginRun with a used id succeeded")
	}
	c := fullCell("no-such-run", 1)
	if _, err := s.AddCell(ctx, &c); err == nil {
		t.Error("AddCell for a run never begun succeeded")
	}
}

func TestRunLookup(t *testing.T) { eachBackend(t, testRunLookup) }

func testRunLookup(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	s := open(t)
	for i, id := range []string{"20250314-aaaa", "20250314-aabb", "20250315-cccc", "2025"} {
		r := newRun(id, t0.Add(time.Duration(i)*time.Hour))
		if err := s.BeginRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id, want string
		err      error
	}{
		{id: "20250314-aaaa", want: "20250314-aaaa"},
		{id: "20250314-aab", want: "20250314-aabb"},
		{id: "20250315", want: "20250315-cccc"},
		{id: "2025", want: "2025"}, // exact match beats the longer ids it prefixes
		{id: Latest, want: "2025"}, // started last
		{id: "20250314-aa", err: ErrAmbiguous},
		{id: "202503", err: ErrAmbiguous},
		{id: "2026", err: ErrNotFound},
		{id: "%", err: ErrNotFound}, // not a LIKE pattern
	} {
		r, _, err := s.Run(ctx, tc.id)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Run(%q): err = %v, want %v", tc.id, err, tc.err)
			}
			continue
		}
		if err != nil || r.ID != tc.want {
			t.Errorf("Run(%q) = %q, %v; want %q", tc.id, r.ID, err, tc.want)
		}
	}
	_, _, err := s.Run(ctx, "20250314-aa")
	if err == nil || !strings.Contains(err.Error(), "20250314-aaaa") || !strings.Contains(err.Error(), "20250314-aabb") {
		t.Errorf("ambiguity error %q should list both candidates", err)
	}
	empty := open(t)
	if _, _, err := empty.Run(ctx, Latest); !errors.Is(err, ErrNotFound) {
		t.Errorf("Run(latest) on an empty store: err = %v, want ErrNotFound", err)
	}
}

func TestImport(t *testing.T) { eachBackend(t, testImport) }

func testImport(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	dir := t.TempDir()
	guestPath := filepath.Join(dir, "guest", "results.db")
	guest, err := Open(guestPath)
	if err != nil {
		t.Fatal(err)
	}
	host := open(t)

	shared := newRun("shared", t0)
	for _, st := range []*Store{guest, host} {
		r := shared
		if err := st.BeginRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	guestRun := newRun("from-guest", t0.Add(time.Hour))
	guestRun.Testbed = "vm"
	if err := guest.BeginRun(ctx, &guestRun); err != nil {
		t.Fatal(err)
	}
	var want []result.Cell
	for rep := 1; rep <= 3; rep++ {
		c := fullCell(guestRun.ID, rep)
		if _, err := guest.AddCell(ctx, &c); err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	if err := guest.FinishRun(ctx, guestRun.ID, result.RunDone, "", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The host already holds a cell, so imported cells must get new ids.
	hc := fullCell("shared", 1)
	if _, err := host.AddCell(ctx, &hc); err != nil {
		t.Fatal(err)
	}
	if err := guest.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := host.ImportFile(ctx, guestPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ImportStats{Runs: 1, Cells: 3, Skipped: []string{"shared"}}, st); diff != "" {
		t.Errorf("import stats (-want +got):\n%s", diff)
	}
	r, cells, err := host.Run(ctx, "from-guest")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != result.RunDone || r.Testbed != "vm" {
		t.Errorf("imported run status %q testbed %q, want done, vm", r.Status, r.Testbed)
	}
	if diff := cmp.Diff(want, cells, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".ID"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("imported cells (-want +got):\n%s", diff)
	}
	for _, c := range cells {
		if c.ID == hc.ID {
			t.Errorf("imported cell reuses id %d of an existing cell", c.ID)
		}
	}

	again, err := host.ImportFile(ctx, guestPath)
	if err != nil {
		t.Fatal(err)
	}
	if again.Runs != 0 || again.Cells != 0 {
		t.Errorf("second import copied %d runs, %d cells; want nothing", again.Runs, again.Cells)
	}
	if _, err := host.ImportFile(ctx, filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("import of a missing file: err = %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Error("import of a missing file created it")
	}
}

func TestOpenFreshFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a", "b", "results.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Version(ctx)
	if err != nil || v != 5 || SchemaVersion != 5 || len(migrations) != SchemaVersion {
		t.Errorf("schema version of a fresh file = %d, %v; want 5 = SchemaVersion (%d) = number of migrations (%d)",
			v, err, SchemaVersion, len(migrations))
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var timeout int
	if err := s.db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil || timeout != int(BusyTimeout.Milliseconds()) {
		t.Errorf("busy_timeout = %d, %v; want %d", timeout, err, BusyTimeout.Milliseconds())
	}
	for _, table := range []string{"runs", "cells", "schema_version", "change_acks", "change_points"} {
		var n int
		if err := s.db.QueryRowContext(ctx,
			`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: count %d, %v; want present", table, n, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening applies nothing twice and keeps one version row.
	s, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM schema_version`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("schema_version rows after reopen = %d, %v; want 1", rows, err)
	}
	// A database from a newer tunbench is refused rather than misread.
	if _, err := s.db.ExecContext(ctx, `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(path); err == nil {
		s.Close()
		t.Error("Open of a database with schema version 99 succeeded")
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#%name", "results.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not created at the literal path: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/srv/data")
	if got, want := DefaultPath(), "/srv/data/tunbench/results.db"; got != want {
		t.Errorf("DefaultPath with XDG_DATA_HOME = %q, want %q", got, want)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/root")
	if got, want := DefaultPath(), "/root/.local/share/tunbench/results.db"; got != want {
		t.Errorf("DefaultPath for root = %q, want %q", got, want)
	}
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	if got, want := DefaultPath(), "/root/.local/share/tunbench/results.db"; got != want {
		t.Errorf("DefaultPath with relative XDG_DATA_HOME = %q, want %q (relative values are ignored)", got, want)
	}
}

func BenchmarkAddCell(b *testing.B) {
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "results.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := newRun("bench", t0)
	if err := s.BeginRun(ctx, &r); err != nil {
		b.Fatal(err)
	}
	c := fullCell(r.ID, 1)
	b.ReportAllocs()
	for b.Loop() {
		c.ID = 0
		if _, err := s.AddCell(ctx, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentWriters: four writers at once, as four machines running
// tunbench into one PostgreSQL database (or four processes into one file)
// would, each with a store of its own, writing its own run and a share of
// a common one: nothing is lost, and no cell lands in another's run.
func TestConcurrentWriters(t *testing.T) {
	eachLocation(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		const writers, perWriter = 4, 20
		var stores []*Store
		for range writers {
			s, err := Open(loc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			stores = append(stores, s)
		}
		shared := newRun("shared", t0)
		if err := stores[0].BeginRun(ctx, &shared); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, writers)
		for w, s := range stores {
			go func() {
				own := newRun(fmt.Sprintf("machine-%d", w), t0.Add(time.Duration(w+1)*time.Minute))
				own.Labels = map[string]string{"machine": strconv.Itoa(w)}
				if err := s.BeginRun(ctx, &own); err != nil {
					errs <- err
					return
				}
				for i := range perWriter {
					for _, id := range []string{own.ID, shared.ID} {
						c := fullCell(id, w*perWriter+i+1)
						if _, err := s.AddCell(ctx, &c); err != nil {
							errs <- err
							return
						}
					}
				}
				errs <- s.FinishRun(ctx, own.ID, result.RunDone, "", t0.Add(time.Hour))
			}()
		}
		for range stores {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		_, cells, err := stores[1].Run(ctx, shared.ID)
		if err != nil {
			t.Fatal(err)
		}
		reps := map[int]bool{}
		for _, c := range cells {
			if c.RunID != shared.ID || reps[c.Repetition] {
				t.Errorf("shared run: cell %d of run %s, repetition %d (seen before: %v)", c.ID, c.RunID, c.Repetition, reps[c.Repetition])
			}
			reps[c.Repetition] = true
		}
		if len(cells) != writers*perWriter {
			t.Errorf("shared run: %d cells, want %d", len(cells), writers*perWriter)
		}
		for w := range writers {
			r, cells, err := stores[(w+1)%writers].Run(ctx, fmt.Sprintf("machine-%d", w))
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != result.RunDone || r.Labels["machine"] != strconv.Itoa(w) || len(cells) != perWriter {
				t.Errorf("run %s: status %s, labels %v, %d cells; want done, machine=%d, %d", r.ID, r.Status, r.Labels, len(cells), w, perWriter)
			}
			for i, c := range cells {
				if c.RunID != r.ID || c.Repetition != w*perWriter+i+1 {
					t.Errorf("run %s: cell %d is run %s repetition %d, want repetition %d", r.ID, i, c.RunID, c.Repetition, w*perWriter+i+1)
				}
			}
		}
	})
}
