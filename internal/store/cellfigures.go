package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// The figures a trend reads of a cell are kept in columns of their own
// beside its record (schema version 4), so that trends (tunbench trend,
// serve's trend pages) read numbers rather than decode a record per
// point: the receiver's throughput, the p50 and p99 round-trip times,
// and whether the cell was measured while the machine was busy or under
// software emulation. The cells_figures index covers them with the
// columns a trend selects and groups by, so SQLite reads neither the
// record nor the row. The record stays the source of truth: the columns
// are derived from it (figuresOf) when a cell is added, copied as stored
// by push and import, and backfilled by the migration for cells stored
// before it. figures is 1 in a row whose columns are filled; a row with
// 0 (written by something that does not fill them) is read through its
// record.

// CellFigureColumns are the figure columns, in the order CellFigureValues
// gives their values, for code that inserts cells itself (benchdb).
const CellFigureColumns = `figures, throughput_bps, p50_rtt_us, p99_rtt_us, busy, emulated`

// cellFigures are a cell's figure columns.
type cellFigures struct {
	throughput, p50, p99 sql.NullFloat64
	busy, emulated       bool
}

// figuresOf derives the figure columns from a cell's record: NULL
// throughput without a throughput record, NULL RTTs without a latency
// record; emulated as summary.CellEmulated has it without the run's host
// (which the reader has).
func figuresOf(c *result.Cell) cellFigures {
	var f cellFigures
	if t := c.Throughput; t != nil {
		f.throughput = sql.NullFloat64{Float64: t.BitsPerSecond, Valid: true}
	}
	if l := c.Latency; l != nil {
		f.p50 = sql.NullFloat64{Float64: l.P50, Valid: true}
		f.p99 = sql.NullFloat64{Float64: l.P99, Valid: true}
	}
	f.busy = c.Meta.Busy
	f.emulated = c.Meta.Emulated || slices.ContainsFunc(c.Meta.Hosts, result.Host.IsEmulated)
	return f
}

// values are f's column values in CellFigureColumns' order.
func (f cellFigures) values() []any {
	return []any{int64(1), nullFloat(f.throughput), nullFloat(f.p50), nullFloat(f.p99), boolInt(f.busy), boolInt(f.emulated)}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// CellFigureValues are the values of CellFigureColumns for cell c.
func CellFigureValues(c *result.Cell) []any { return figuresOf(c).values() }

// figureCell is a cell as RunQuery.FiguresOnly returns it: what
// identifies it (id, run, key, method, implementation, repetition,
// status) and its figures; the parameters only for a cell stored without
// a key, which its readers group by them.
func figureCell(c result.Cell, f cellFigures) result.Cell {
	out := result.Cell{ID: c.ID, RunID: c.RunID, Key: c.Key, Method: c.Method, Implementation: c.Implementation,
		Repetition: c.Repetition, Status: c.Status}
	if c.Key == "" {
		out.Params = c.Params
	}
	if f.throughput.Valid {
		out.Throughput = &result.Throughput{BitsPerSecond: f.throughput.Float64}
	}
	if f.p50.Valid || f.p99.Valid {
		out.Latency = &result.Latency{P50: f.p50.Float64, P99: f.p99.Float64}
	}
	out.Meta.Busy, out.Meta.Emulated = f.busy, f.emulated
	return out
}

// figuresSelect reads a cell's identifying columns and its figures, all
// in the cells_figures index.
const figuresSelect = `SELECT run_id, id, key, method, implementation, repetition, status, ` + CellFigureColumns + ` FROM cells`

// scanFigureCells reads the cells query (figuresSelect ...) selects into
// their runs in byID, skipping those whose key lacks one of parts. Cells
// whose figures are not filled, and cells without a key, are read
// through their records.
func (s *Store) scanFigureCells(ctx context.Context, query string, args []any, byID map[string]*RunCells, parts []string) error {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return fmt.Errorf("load runs with cells: %w", err)
	}
	defer rows.Close()
	var slow []int64
	// One set of scan targets for every row: Scan's pointers make them
	// escape, and declared in the loop they were five allocations a row
	// (a whole result.Cell among them) for the garbage collector. Each
	// row overwrites every field read, and figureCell copies out what it
	// keeps.
	var (
		c              result.Cell
		f              cellFigures
		filled         int64
		busy, emulated int64
	)
	for rows.Next() {
		c, f = result.Cell{}, cellFigures{}
		if err := rows.Scan(&c.RunID, &c.ID, &c.Key, &c.Method, &c.Implementation, &c.Repetition, &c.Status,
			&filled, &f.throughput, &f.p50, &f.p99, &busy, &emulated); err != nil {
			return fmt.Errorf("load runs with cells: %w", err)
		}
		rc := byID[c.RunID]
		if rc == nil || !hasParts(c.Key, parts) {
			continue
		}
		if filled == 0 || c.Key == "" {
			slow = append(slow, c.ID)
			continue
		}
		f.busy, f.emulated = busy != 0, emulated != 0
		rc.Cells = append(rc.Cells, figureCell(c, f))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load runs with cells: %w", err)
	}
	rows.Close()
	for chunk := range slices.Chunk(slow, runChunk) {
		if err := s.scanRecordFigures(ctx, chunk, byID); err != nil {
			return err
		}
	}
	return nil
}

// scanRecordFigures reads the cells ids through their records, as
// scanFigureCells returns them.
func (s *Store) scanRecordFigures(ctx context.Context, ids []int64, byID map[string]*RunCells) error {
	marks := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		marks[i], args[i] = "?", id
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT run_id, id, record FROM cells WHERE id IN (`+strings.Join(marks, ", ")+`)`), args...)
	if err != nil {
		return fmt.Errorf("load runs with cells: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			runID string
			id    int64
			rec   sql.RawBytes
		)
		if err := rows.Scan(&runID, &id, &rec); err != nil {
			return fmt.Errorf("load runs with cells: %w", err)
		}
		c, err := decodeCell(rec, true)
		if err != nil {
			return fmt.Errorf("load cell %d of run %s: decode record: %w", id, runID, err)
		}
		c.ID = id
		if rc := byID[runID]; rc != nil {
			rc.Cells = append(rc.Cells, figureCell(c, figuresOf(&c)))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load runs with cells: %w", err)
	}
	return nil
}

// backfillBatch is how many cells the backfill reads at a time.
const backfillBatch = 1000

// backfillFigures fills the figure columns of every cell stored before
// schema version 4 from its record, in the migration's transaction.
func backfillFigures(ctx context.Context, tx *sql.Tx, d *dialect) error {
	update, err := tx.PrepareContext(ctx, d.rebind(`UPDATE cells SET figures = ?, throughput_bps = ?, p50_rtt_us = ?, p99_rtt_us = ?, busy = ?, emulated = ? WHERE id = ?`))
	if err != nil {
		return fmt.Errorf("backfill figures: %w", err)
	}
	defer update.Close()
	var last int64 = -1
	for {
		type rec struct {
			id  int64
			rec string
		}
		var batch []rec
		rows, err := tx.QueryContext(ctx, d.rebind(`SELECT id, record FROM cells WHERE id > ? ORDER BY id LIMIT ?`), last, backfillBatch)
		if err != nil {
			return fmt.Errorf("backfill figures: %w", err)
		}
		for rows.Next() {
			var r rec
			if err := rows.Scan(&r.id, &r.rec); err != nil {
				rows.Close()
				return fmt.Errorf("backfill figures: %w", err)
			}
			batch = append(batch, r)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return fmt.Errorf("backfill figures: %w", err)
		}
		rows.Close()
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			c, err := decodeCell([]byte(r.rec), true)
			if err != nil {
				return fmt.Errorf("backfill figures: cell %d: decode record: %w", r.id, err)
			}
			if _, err := update.ExecContext(ctx, append(figuresOf(&c).values(), r.id)...); err != nil {
				return fmt.Errorf("backfill figures: cell %d: %w", r.id, err)
			}
		}
		last = batch[len(batch)-1].id
	}
}
