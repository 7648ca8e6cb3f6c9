package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// ImportStats says what an import copied.
type ImportStats struct {
	Runs  int // runs copied
	Cells int // cells copied
	// Skipped lists the ids of runs that were already present and left
	// untouched, so importing the same database twice copies nothing.
	Skipped []string
}

// Import copies every run of other, with all its cells, that s does not
// already have (matched by run id). Each run is copied in one transaction,
// so a run is either fully imported or absent. Cells get new ids in s;
// everything else is unchanged. This is how results come back from a VM
// guest's database.
func (s *Store) Import(ctx context.Context, other *Store) (ImportStats, error) {
	var st ImportStats
	if err := s.writable(); err != nil {
		return st, err
	}
	runs, err := other.Runs(ctx)
	if err != nil {
		return st, fmt.Errorf("import from %s: %w", other.path, err)
	}
	// Oldest first, so insertion order in s follows the source.
	for i := len(runs) - 1; i >= 0; i-- {
		id := runs[i].ID
		have, err := s.hasRun(ctx, id)
		if err != nil {
			return st, fmt.Errorf("import from %s: %w", other.path, err)
		}
		if have {
			st.Skipped = append(st.Skipped, id)
			continue
		}
		n, err := s.importRun(ctx, other, id)
		if err != nil {
			return st, fmt.Errorf("import run %s from %s: %w", id, other.path, err)
		}
		if n < 0 {
			st.Skipped = append(st.Skipped, id)
			continue
		}
		st.Runs++
		st.Cells += n
	}
	return st, nil
}

// ImportFile imports from the database file at path (see Import). The file
// must exist; its schema is brought up to date if it is older.
func (s *Store) ImportFile(ctx context.Context, path string) (ImportStats, error) {
	if _, err := os.Stat(path); err != nil {
		return ImportStats{}, fmt.Errorf("import from %s: %w", path, err)
	}
	other, err := Open(path)
	if err != nil {
		return ImportStats{}, fmt.Errorf("import: %w", err)
	}
	st, err := s.Import(ctx, other)
	if cerr := other.Close(); err == nil && cerr != nil {
		return st, fmt.Errorf("import: %w", cerr)
	}
	return st, err
}

// hasRun reports whether a run with exactly this id exists.
func (s *Store) hasRun(ctx context.Context, id string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT count(*) FROM runs WHERE id = ?`), id).Scan(&n); err != nil {
		return false, fmt.Errorf("look up run %s: %w", id, err)
	}
	return n > 0, nil
}

// testHookCopied, when set (by tests), is called after each batch of
// cells a copy has written, with the number written so far, before the
// transaction commits.
var testHookCopied func(n int)

// copyBatch is how many cells one INSERT statement of a copy carries: one
// round trip to a database server per batch rather than per cell.
var copyBatch = 100

// cellRow is a stored cell as its columns, copied without decoding its
// record.
type cellRow struct {
	key, method, impl string
	rep               int
	status, err       string
	started, finished sql.NullString
	record            string
	// figures are the figure columns as stored (CellFigureColumns).
	figures        int64
	tput, p50, p99 sql.NullFloat64
	busy, emulated int64
}

// figureValues are the row's figure columns in CellFigureColumns' order.
func (c cellRow) figureValues() []any {
	return []any{c.figures, nullFloat(c.tput), nullFloat(c.p50), nullFloat(c.p99), c.busy, c.emulated}
}

func nullFloat(v sql.NullFloat64) any {
	if !v.Valid {
		return nil
	}
	return v.Float64
}

// cellRows loads a run's cells as stored, in insertion order.
func (s *Store) cellRows(ctx context.Context, runID string) ([]cellRow, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`
SELECT key, method, implementation, repetition, status, error, started, finished, record, `+CellFigureColumns+`
FROM cells WHERE run_id = ? ORDER BY id`), runID)
	if err != nil {
		return nil, fmt.Errorf("load cells of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []cellRow
	for rows.Next() {
		var c cellRow
		if err := rows.Scan(&c.key, &c.method, &c.impl, &c.rep, &c.status, &c.err, &c.started, &c.finished, &c.record,
			&c.figures, &c.tput, &c.p50, &c.p99, &c.busy, &c.emulated); err != nil {
			return nil, fmt.Errorf("load cells of run %s: %w", runID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load cells of run %s: %w", runID, err)
	}
	return out, nil
}

// importRun copies one run, its labels and its cells from other in one
// transaction and returns the number of cells copied; -1 when s already
// had the run (a copy that raced with another). Cell records are copied
// as stored, not decoded and encoded again, with their figure columns,
// in batches of copyBatch.
func (s *Store) importRun(ctx context.Context, other *Store, id string) (int, error) {
	r, err := scanRun(other.db.QueryRowContext(ctx, other.q(`SELECT `+runColumns+` FROM runs WHERE id = ?`), id))
	if err != nil {
		return 0, fmt.Errorf("load run %s: %w", id, err)
	}
	labels, err := other.labels(ctx, id)
	if err != nil {
		return 0, err
	}
	r.Labels = labels[id]
	cells, err := other.cellRows(ctx, id)
	if err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	inserted, err := insertRun(ctx, s.d, tx, &r, true)
	if err != nil {
		return 0, err
	}
	if !inserted {
		return -1, nil
	}
	for i := 0; i < len(cells); i += copyBatch {
		batch := cells[i:min(i+copyBatch, len(cells))]
		var q strings.Builder
		q.WriteString(`INSERT INTO cells (run_id, key, method, implementation, repetition, status, error, started, finished, record, ` + CellFigureColumns + `) VALUES `)
		args := make([]any, 0, 16*len(batch))
		for j, c := range batch {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, id, c.key, c.method, c.impl, c.rep, c.status, c.err, c.started, c.finished, c.record)
			args = append(args, c.figureValues()...)
		}
		if _, err := tx.ExecContext(ctx, s.q(q.String()), args...); err != nil {
			return 0, fmt.Errorf("cells %d to %d: %w", i+1, i+len(batch), err)
		}
		if testHookCopied != nil {
			testHookCopied(i + len(batch))
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return len(cells), nil
}

// Push copies the runs ids (full ids, unique prefixes or Latest) of s,
// with all their cells and labels, to the store to, which may be another
// kind (a SQLite file's runs to a team's PostgreSQL database). It is
// idempotent by run id: a run to already has is skipped, so pushing twice
// copies nothing the second time. Each run is copied in one transaction:
// a push interrupted half way (killed, cancelled, the connection lost)
// leaves every run on to whole or absent, and pushing again completes it.
func (s *Store) Push(ctx context.Context, to *Store, ids []string) (ImportStats, error) {
	var st ImportStats
	if err := to.writable(); err != nil {
		return st, err
	}
	var full []string
	for _, id := range ids {
		f, err := s.resolve(ctx, id)
		if err != nil {
			return st, fmt.Errorf("push: %w", err)
		}
		var status string
		if err := s.db.QueryRowContext(ctx, s.q(`SELECT status FROM runs WHERE id = ?`), f).Scan(&status); err != nil {
			return st, fmt.Errorf("push run %s: %w", f, err)
		}
		if status == result.RunRunning {
			return st, fmt.Errorf("push run %s: it is still running, or was killed (tunbench run --resume %s finishes it); push it once it has ended", f, f)
		}
		if !slices.Contains(full, f) {
			full = append(full, f)
		}
	}
	for _, id := range full {
		have, err := to.hasRun(ctx, id)
		if err != nil {
			return st, fmt.Errorf("push to %s: %w", to.path, err)
		}
		n := -1
		if !have {
			if n, err = to.importRun(ctx, s, id); err != nil {
				return st, fmt.Errorf("push run %s to %s: %w", id, to.path, err)
			}
		}
		if n < 0 {
			st.Skipped = append(st.Skipped, id)
			continue
		}
		st.Runs++
		st.Cells += n
	}
	return st, nil
}
