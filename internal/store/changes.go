package store

import (
	"context"
	"fmt"
	"time"
)

// Ack records change point id as known ("tunbench trend --ack"), with a
// note; acknowledging it again replaces the note.
func (s *Store) Ack(ctx context.Context, id, note string, at time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.q(`
INSERT INTO change_acks (change_id, acked, note) VALUES (?, ?, ?)
ON CONFLICT (change_id) DO UPDATE SET acked = excluded.acked, note = excluded.note`),
		id, at.UTC().Format(timeFormat), note); err != nil {
		return fmt.Errorf("acknowledge change %s: %w", id, err)
	}
	return nil
}

// Acks returns the acknowledged change ids.
func (s *Store) Acks(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT change_id FROM change_acks`)
	if err != nil {
		return nil, fmt.Errorf("read acknowledged changes: %w", err)
	}
	defer rows.Close()
	acks := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read acknowledged changes: %w", err)
		}
		acks[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read acknowledged changes: %w", err)
	}
	return acks, nil
}

// ChangePoint is a row of the change_points table: a change point
// "tunbench trend --record" found, which the Grafana dashboard shows as an
// annotation at Time (the first run after it).
type ChangePoint struct {
	ID, Series, Key, Metric, Machine, Testbed string
	Time                                      time.Time
	LastRun, FirstRun                         string
	Before, After, Percent, P                 float64
	Regression                                bool
	Summary                                   string
}

// RecordChangePoints replaces the stored change points with cps in one
// transaction: the table holds what the latest recorded trend found.
func (s *Store) RecordChangePoints(ctx context.Context, cps []ChangePoint) (err error) {
	if err := s.writable(); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record change points: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `DELETE FROM change_points`); err != nil {
		return fmt.Errorf("record change points: %w", err)
	}
	for _, c := range cps {
		reg := 0
		if c.Regression {
			reg = 1
		}
		if _, err := tx.ExecContext(ctx, s.q(`
INSERT INTO change_points (change_id, time, series, key, metric, machine, testbed, last_run, first_run,
	before_value, after_value, change_percent, p, regression, summary)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			c.ID, c.Time.UTC().Format(timeFormat), c.Series, c.Key, c.Metric, c.Machine, c.Testbed, c.LastRun, c.FirstRun,
			c.Before, c.After, c.Percent, c.P, reg, c.Summary); err != nil {
			return fmt.Errorf("record change point %s: %w", c.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record change points: %w", err)
	}
	return nil
}

// RunMethods returns the methods each run measured, sorted, by run id.
func (s *Store) RunMethods(ctx context.Context) (map[string][]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT run_id, method FROM cells ORDER BY run_id, method`)
	if err != nil {
		return nil, fmt.Errorf("list runs' methods: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id, m string
		if err := rows.Scan(&id, &m); err != nil {
			return nil, fmt.Errorf("list runs' methods: %w", err)
		}
		out[id] = append(out[id], m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs' methods: %w", err)
	}
	return out, nil
}
