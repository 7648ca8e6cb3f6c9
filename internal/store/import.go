package store

import (
	"context"
	"fmt"
	"os"
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
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("look up run %s: %w", id, err)
	}
	return n > 0, nil
}

// importRun copies one run and its cells from other in one transaction and
// returns the number of cells copied.
func (s *Store) importRun(ctx context.Context, other *Store, id string) (int, error) {
	r, cells, err := other.Run(ctx, id)
	if err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := insertRun(ctx, tx, &r); err != nil {
		return 0, err
	}
	for i := range cells {
		if _, err := insertCell(ctx, tx, &cells[i]); err != nil {
			return 0, fmt.Errorf("cell %d: %w", cells[i].ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return len(cells), nil
}
