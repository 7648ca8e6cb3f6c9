package store

import (
	"context"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// TestFiguresMigration: a store of schema version 3, whose cells have no
// figure columns, is migrated to version 4 on open and every cell's
// figures are backfilled from its record, as AddCell writes them; the
// figure reads then match the records. On both stores.
func TestFiguresMigration(t *testing.T) {
	eachLocation(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		s := openAt(t, loc)
		r := newRun("old", t0)
		if err := s.BeginRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
		var cells []result.Cell
		for rep := 1; rep <= 4; rep++ {
			c := fullCell(r.ID, rep)
			switch rep {
			case 2:
				c.Throughput, c.Latency = nil, nil // a cell without either: NULL figures
			case 3:
				c.Meta.Emulated, c.Meta.Busy = false, true
				c.Meta.Hosts = []result.Host{{Hostname: "qemu", Class: result.ClassEmulated}}
			case 4:
				c.Meta.Emulated, c.Meta.Busy, c.Meta.Hosts = false, false, nil
			}
			if _, err := s.AddCell(ctx, &c); err != nil {
				t.Fatal(err)
			}
			cells = append(cells, c)
		}
		written := figureRows(t, s)
		// Back to version 3, as a store written before the migration.
		undoGeneration(t, s)
		for _, q := range []string{`DROP INDEX cells_figures`,
			`ALTER TABLE cells DROP COLUMN figures`, `ALTER TABLE cells DROP COLUMN throughput_bps`,
			`ALTER TABLE cells DROP COLUMN p50_rtt_us`, `ALTER TABLE cells DROP COLUMN p99_rtt_us`,
			`ALTER TABLE cells DROP COLUMN busy`, `ALTER TABLE cells DROP COLUMN emulated`,
			`UPDATE schema_version SET version = 3`} {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		s.Close()
		s = openAt(t, loc)
		if v, err := s.Version(ctx); err != nil || v != SchemaVersion {
			t.Fatalf("version %d, %v after the migration; want %d", v, err, SchemaVersion)
		}
		if got := figureRows(t, s); len(got) != len(cells) || !equalRows(got, written) {
			t.Fatalf("backfilled figures %+v, want what AddCell wrote %+v", got, written)
		}
		for i, c := range cells {
			f := written[i]
			want := figuresOf(&c)
			if f.tput != want.throughput || f.p50 != want.p50 || f.p99 != want.p99 || (f.busy != 0) != want.busy || (f.emulated != 0) != want.emulated || f.figures != 1 {
				t.Errorf("cell %d: stored %+v, its record gives %+v", i+1, f, want)
			}
		}
		if w := written; w[1].tput.Valid || w[1].p50.Valid || w[2].busy != 1 || w[2].emulated != 1 || w[3].emulated != 0 {
			t.Errorf("figures %+v: want NULLs for the second cell, busy and emulated (by its host) for the third, not emulated for the fourth", w)
		}
	})
}

func equalRows(a, b []cellRow) bool {
	for i := range a {
		if a[i].figures != b[i].figures || a[i].tput != b[i].tput || a[i].p50 != b[i].p50 || a[i].p99 != b[i].p99 ||
			a[i].busy != b[i].busy || a[i].emulated != b[i].emulated {
			return false
		}
	}
	return true
}

// figureRows reads every cell's figure columns, in id order.
func figureRows(t *testing.T, s *Store) []cellRow {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `SELECT `+CellFigureColumns+` FROM cells ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []cellRow
	for rows.Next() {
		var r cellRow
		if err := rows.Scan(&r.figures, &r.tput, &r.p50, &r.p99, &r.busy, &r.emulated); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
