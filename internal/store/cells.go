package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tunbench/tunbench/internal/result"
)

// AddCell stores one measured cell in its own committed transaction and
// returns its id, which it also writes to c.ID. It fills an empty c.Schema
// with result.SchemaVersion. The cell's run must have been begun.
func (s *Store) AddCell(ctx context.Context, c *result.Cell) (int64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if c.Schema == "" {
		c.Schema = result.SchemaVersion
	}
	id, err := insertCell(ctx, s.d, s.db, c)
	if err != nil {
		return 0, fmt.Errorf("add cell %s rep %d to run %s: %w", c.Key, c.Repetition, c.RunID, err)
	}
	c.ID = id
	return id, nil
}

// insertCell writes c, ignoring c.ID: the database assigns it, and
// its figure columns (cellfigures.go).
func insertCell(ctx context.Context, d *dialect, db execer, c *result.Cell) (int64, error) {
	rec := *c
	rec.ID = 0 // the column is authoritative
	b, err := json.Marshal(&rec)
	if err != nil {
		return 0, fmt.Errorf("encode record: %w", err)
	}
	var id int64
	args := append([]any{c.RunID, c.Key, c.Method, c.Implementation, c.Repetition, c.Status, c.Error,
		formatTime(c.Started), formatTime(c.Finished), string(b)}, figuresOf(c).values()...)
	err = db.QueryRowContext(ctx, d.rebind(`
INSERT INTO cells (run_id, key, method, implementation, repetition, status, error, started, finished, record, `+CellFigureColumns+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), args...).Scan(&id)
	return id, err
}

// cells loads the cells of one run in insertion order.
func (s *Store) cells(ctx context.Context, runID string) ([]result.Cell, error) {
	rows, err := s.db.QueryContext(ctx,
		s.q(`SELECT id, record FROM cells WHERE run_id = ? ORDER BY id`), runID)
	if err != nil {
		return nil, fmt.Errorf("load cells of run %s: %w", runID, err)
	}
	defer rows.Close()
	var cells []result.Cell
	for rows.Next() {
		var (
			id  int64
			rec string
			c   result.Cell
		)
		if err := rows.Scan(&id, &rec); err != nil {
			return nil, fmt.Errorf("load cells of run %s: %w", runID, err)
		}
		if err := json.Unmarshal([]byte(rec), &c); err != nil {
			return nil, fmt.Errorf("load cell %d of run %s: decode record: %w", id, runID, err)
		}
		c.ID = id
		cells = append(cells, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load cells of run %s: %w", runID, err)
	}
	return cells, nil
}
