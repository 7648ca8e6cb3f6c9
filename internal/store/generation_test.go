package store

import (
	"context"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// TestGeneration: every kind of write a trend reads raises the store's
// generation, through this handle, another handle on the same store (as
// another process or machine writes) and a statement written by hand;
// reading does not. On both stores.
func TestGeneration(t *testing.T) {
	eachLocation(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		s, other := openAt(t, loc), openAt(t, loc)
		last, err := s.Generation(ctx)
		if err != nil {
			t.Fatal(err)
		}
		step := func(what string, write func() error) {
			t.Helper()
			if err := write(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			g, err := s.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if g <= last {
				t.Errorf("%s: generation %d, was %d: want it raised", what, g, last)
			}
			last = g
		}
		r := newRun("gen", t0)
		r.Labels = map[string]string{"kernel": "6.1"}
		step("begin a run", func() error { return s.BeginRun(ctx, &r) })
		step("add a cell", func() error { c := fullCell(r.ID, 1); _, err := s.AddCell(ctx, &c); return err })
		step("finish the run", func() error { return s.FinishRun(ctx, r.ID, result.RunDone, "", t0.Add(time.Hour)) })
		step("acknowledge a change", func() error { return s.Ack(ctx, "c1", "known", t0) })
		o := newRun("other", t0.Add(time.Minute))
		step("another handle begins a run", func() error { return other.BeginRun(ctx, &o) })
		step("another handle adds a cell", func() error { c := fullCell(o.ID, 1); _, err := other.AddCell(ctx, &c); return err })
		step("a statement by hand", func() error {
			_, err := s.db.ExecContext(ctx, s.q(`UPDATE runs SET error = ? WHERE id = ?`), "noted", o.ID)
			return err
		})
		step("a label removed by hand", func() error {
			_, err := s.db.ExecContext(ctx, `DELETE FROM run_labels`)
			return err
		})
		for _, read := range []func() error{
			func() error { _, _, err := s.Run(ctx, r.ID); return err },
			func() error { _, err := s.RunsWithCells(ctx, RunQuery{FiguresOnly: true}); return err },
			func() error { _, err := s.Acks(ctx); return err },
		} {
			if err := read(); err != nil {
				t.Fatal(err)
			}
		}
		if g, err := other.Generation(ctx); err != nil || g != last {
			t.Errorf("after reads: generation %d, %v; want %d (reading writes nothing)", g, err, last)
		}
	})
}

// TestGenerationMigration: a store of schema version 4 (no generation)
// gains it on open, with its runs intact. On both stores.
func TestGenerationMigration(t *testing.T) {
	eachLocation(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		s := openAt(t, loc)
		r := newRun("old", t0)
		if err := s.BeginRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
		undoGeneration(t, s)
		s.Close()
		s = openAt(t, loc)
		if v, err := s.Version(ctx); err != nil || v != SchemaVersion {
			t.Fatalf("version %d, %v after the migration; want %d", v, err, SchemaVersion)
		}
		g, err := s.Generation(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := fullCell(r.ID, 1)
		if _, err := s.AddCell(ctx, &c); err != nil {
			t.Fatal(err)
		}
		if g2, err := s.Generation(ctx); err != nil || g2 <= g {
			t.Errorf("generation %d, %v after a cell added to the migrated store; was %d", g2, err, g)
		}
		if _, cells, err := s.Run(ctx, r.ID); err != nil || len(cells) != 1 {
			t.Errorf("run after the migration: %d cells, %v; want 1", len(cells), err)
		}
	})
}

// undoGeneration takes s back to schema version 4, as a store written
// before the generation was.
func undoGeneration(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	var qs []string
	for _, tbl := range generationTables {
		if s.d.name == "postgres" {
			qs = append(qs, `DROP TRIGGER `+tbl+`_generation ON `+tbl)
			continue
		}
		for _, op := range []string{"insert", "update", "delete"} {
			qs = append(qs, `DROP TRIGGER `+tbl+`_`+op+`_generation`)
		}
	}
	if s.d.name == "postgres" {
		qs = append(qs, `DROP FUNCTION store_generation_bump()`)
	}
	qs = append(qs, `DROP TABLE store_generation`, `UPDATE schema_version SET version = 4`)
	for _, q := range qs {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
