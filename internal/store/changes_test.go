package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// The measured_values view (Grafana's source): one row per measured value
// of an ok cell, with the run's start as its time.
func TestMeasuredValuesView(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRun("view-run", t0)
	if err := s.BeginRun(ctx, &r); err != nil {
		t.Fatal(err)
	}
	c := fullCell(r.ID, 1)
	c.Status = result.StatusOK
	if _, err := s.AddCell(ctx, &c); err != nil {
		t.Fatal(err)
	}
	var (
		tm, machine, kernel, unit string
		value, busy               float64
	)
	if err := s.db.QueryRowContext(ctx, `SELECT time, machine, kernel, unit, value, background_busy_percent
FROM measured_values WHERE run_id = ? AND metric = 'throughput'`, r.ID).Scan(&tm, &machine, &kernel, &unit, &value, &busy); err != nil {
		t.Fatal(err)
	}
	if got, _ := time.Parse(time.RFC3339Nano, tm); !got.Equal(t0) || machine != "bench1" || kernel != "6.8.0-45-generic" ||
		unit != "bit/s" || value != c.Throughput.BitsPerSecond || busy != c.Meta.BackgroundBusy {
		t.Errorf("throughput row: time %s machine %s kernel %s unit %s value %g busy %g; want %s bench1 6.8.0-45-generic bit/s %g %g",
			tm, machine, kernel, unit, value, busy, t0, c.Throughput.BitsPerSecond, c.Meta.BackgroundBusy)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM measured_values WHERE run_id = ?`, r.ID).Scan(&n); err != nil || n != 12 {
		t.Errorf("rows of one full cell: %d, %v; want 12 (every figure of the view)", n, err)
	}
}

func TestAcksAndChangePoints(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ack(ctx, "abc123", "known: rate limit", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(ctx, "abc123", "again", t0); err != nil {
		t.Fatalf("a second ack of the same change: %v", err)
	}
	acks, err := s.Acks(ctx)
	if err != nil || len(acks) != 1 || !acks["abc123"] {
		t.Errorf("acks = %v, %v; want abc123", acks, err)
	}
	cp := ChangePoint{ID: "c1", Time: t0, Series: "s", Key: "k", Metric: "throughput", Before: 2, After: 1, Percent: -50, P: 1e-5, Regression: true}
	for range 2 {
		if err := s.RecordChangePoints(ctx, []ChangePoint{cp}); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM change_points WHERE regression = 1`).Scan(&n); err != nil || n != 1 {
		t.Errorf("change points after recording one twice: %d, %v; want 1", n, err)
	}
}
