package serve

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/store/pgtest"
)

// TestFiguresMatchRecords: the trend pages and tunbench trend read the
// figure columns (store.RunQuery.FiguresOnly) rather than decode every
// record; the series they build must be those the records give, on both
// stores. The SQLite store is the fixture database as it was stored
// (schema version 1: the migration backfills its figures) with nightly
// runs added since (figures written with the cell), among them a cell
// without a key, an emulated one, busy ones and one whose figures were
// never filled (read through its record); the PostgreSQL store has the
// same runs pushed to it (figures copied as stored).
func TestFiguresMatchRecords(t *testing.T) {
	ctx := context.Background()
	path := fixture.DBFile(t)
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs := fixture.DB(t)
	streams := recs[1]
	for i := range 8 {
		run := streams.Run
		run.ID = fmt.Sprintf("n%05d", i)
		run.Started = streams.Run.Started.AddDate(0, 0, i+1)
		cells := streams.Cells
		if i >= 4 {
			run.Host.Kernel = "6.19.0-test"
			cells = fixture.ScaleThroughput(cells, "native", 0.25)
		}
		if err := st.BeginRun(ctx, &run); err != nil {
			t.Fatal(err)
		}
		for j, c := range cells {
			c.RunID = run.ID
			switch {
			case i == 2 && j == 0:
				c.Key = "" // grouped by method, implementation and parameters
			case i == 3 && j < 4:
				c.Meta.Emulated = true
			case i == 5:
				c.Meta.Busy = true
			}
			if _, err := st.AddCell(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishRun(ctx, run.ID, result.RunDone, "", run.Started.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	unfill := func(t *testing.T, driver, dsn, query string) {
		t.Helper()
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		res, err := db.ExecContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s: %d rows", query, n)
		}
	}
	const unfillQuery = `UPDATE cells SET figures = 0, throughput_bps = NULL WHERE id = (SELECT min(id) FROM cells WHERE run_id = 'n00006')`
	unfill(t, "sqlite", path, unfillQuery)

	t.Run("sqlite", func(t *testing.T) { sameTrends(t, st) })
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		pg, err := store.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		runs, err := st.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if _, err := st.Push(ctx, pg, ids); err != nil {
			t.Fatal(err)
		}
		unfill(t, "pgx", url, `UPDATE cells SET figures = 0, throughput_bps = NULL WHERE id = (SELECT min(id) FROM cells WHERE run_id = 'n00007')`)
		sameTrends(t, pg)
	})
}

// sameTrends builds the series of st's runs from the figure columns and
// from the records, under a few filters, and compares them.
func sameTrends(t *testing.T, st *store.Store) {
	ctx := context.Background()
	for _, f := range []trend.Filter{{}, {Method: "native"}, {Condition: []string{"mtu1500"}, Metric: trend.MetricThroughput}} {
		build := func(q store.RunQuery) ([]trend.Series, int) {
			q.Testbed, q.Machine, q.Method, q.KeyParts, q.Keep = f.Testbed, f.Machine, f.Method, f.Condition, f.SelectRun
			runs, err := st.RunsWithCells(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			recs := make([]trend.RunRecords, len(runs))
			fromColumns := 0
			for i, r := range runs {
				recs[i] = trend.RunRecords{Run: r.Run, Cells: r.Cells}
				for _, c := range r.Cells {
					if c.Throughput != nil && c.Throughput.Tool == "" {
						fromColumns++
					}
				}
			}
			return trend.Build(recs, trend.Options{Filter: f}), fromColumns
		}
		fast, fromColumns := build(store.RunQuery{FiguresOnly: true})
		slow, fromRecords := build(store.RunQuery{WithoutSeries: true})
		if len(slow) == 0 || fromColumns == 0 || fromRecords != 0 {
			t.Fatalf("filter %+v: %d series; %d cells read from the figure columns, %d from the records without a tool", f, len(slow), fromColumns, fromRecords)
		}
		if d := cmp.Diff(slow, fast); d != "" {
			t.Errorf("filter %+v: series from the figure columns differ from the records' (-records +columns):\n%s", f, d)
		}
		changes := 0
		for _, s := range fast {
			changes += len(s.Changes)
		}
		t.Logf("filter %+v: %d series, %d change points, %d cells from the figure columns", f, len(fast), changes, fromColumns)
	}
}
