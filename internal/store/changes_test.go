package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// The measured_values view (Grafana's source): one row per measured value
// of an ok cell, with the run's start as its time.
func TestMeasuredValuesView(t *testing.T) { eachLocation(t, testMeasuredValuesView) }

func testMeasuredValuesView(t *testing.T, loc string) {
	ctx := context.Background()
	s, err := Open(loc)
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
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT time, machine, kernel, unit, value, background_busy_percent
FROM measured_values WHERE run_id = ? AND metric = 'throughput'`), r.ID).Scan(&tm, &machine, &kernel, &unit, &value, &busy); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL's timestamptz (Grafana's time column) keeps microseconds.
	if got, _ := time.Parse(time.RFC3339Nano, tm); !got.Equal(t0.Truncate(time.Microsecond)) && !got.Equal(t0) || machine != "bench1" || kernel != "6.8.0-45-generic" ||
		unit != "bit/s" || value != c.Throughput.BitsPerSecond || busy != c.Meta.BackgroundBusy {
		t.Errorf("throughput row: time %s machine %s kernel %s unit %s value %g busy %g; want %s bench1 6.8.0-45-generic bit/s %g %g",
			tm, machine, kernel, unit, value, busy, t0, c.Throughput.BitsPerSecond, c.Meta.BackgroundBusy)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT count(*) FROM measured_values WHERE run_id = ?`), r.ID).Scan(&n); err != nil || n != 12 {
		t.Errorf("rows of one full cell: %d, %v; want 12 (every figure of the view)", n, err)
	}
}

func TestAcksAndChangePoints(t *testing.T) { eachLocation(t, testAcksAndChangePoints) }

func testAcksAndChangePoints(t *testing.T, loc string) {
	ctx := context.Background()
	s, err := Open(loc)
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

// TestGrafanaDashboardQueries runs every query of the example dashboard
// (examples/grafana-dashboard.json), its Grafana macros and variables
// filled in, against a store with a run and a change point: the columns
// and tables it names exist and every query returns its rows.
func TestGrafanaDashboardQueries(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRun("grafana", t0)
	if err := s.BeginRun(ctx, &r); err != nil {
		t.Fatal(err)
	}
	c := fullCell(r.ID, 1)
	c.Status = result.StatusOK
	if _, err := s.AddCell(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordChangePoints(ctx, []ChangePoint{{ID: "c1", Time: t0, Series: "s", Key: c.Key, Metric: "throughput",
		Machine: "bench1", Testbed: "local", LastRun: r.ID, FirstRun: r.ID, Percent: -50, P: 1e-5, Regression: true, Summary: "x"}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "rawSql" || k == "query") {
					queries = append(queries, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	if len(queries) < 7 {
		t.Fatalf("found %d queries in the dashboard, want its 3 variables, 1 annotation and 4 panels", len(queries))
	}
	fill := strings.NewReplacer("($machine)", "('bench1')", "($method)", "('vxlan')", "($key)", "('"+c.Key+"')")
	timeFilter := regexp.MustCompile(`\$__timeFilter\(([^)]*)\)`)
	for _, q := range queries {
		sql := timeFilter.ReplaceAllString(fill.Replace(q), "$1 IS NOT NULL")
		rows, err := s.db.QueryContext(ctx, sql)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if n == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
}
