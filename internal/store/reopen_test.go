package store

import (
	"context"
	"errors"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// An interrupted run reopens as running, with its cells, and finishes done.
func TestReopenRun(t *testing.T) { eachBackend(t, testReopenRun) }

func testReopenRun(t *testing.T, open func(*testing.T) *Store) {
	ctx := context.Background()
	s := open(t)
	r := newRun("run-killed", t0)
	if err := s.BeginRun(ctx, &r); err != nil {
		t.Fatal(err)
	}
	c := fullCell(r.ID, 1)
	if _, err := s.AddCell(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, r.ID, result.RunInterrupted, "interrupted during step 2/4", t0.Add(60e9)); err != nil {
		t.Fatal(err)
	}
	got, cells, err := s.ReopenRun(ctx, "run-k")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.Status != result.RunRunning || got.Error != "" || !got.Finished.IsZero() || len(cells) != 1 {
		t.Fatalf("ReopenRun = %+v with %d cells, want run-killed running, no error, 1 cell", got, len(cells))
	}
	stored, _, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != result.RunRunning || !stored.Finished.IsZero() {
		t.Errorf("stored run after reopen: status %q finished %v", stored.Status, stored.Finished)
	}
	if _, _, err := s.ReopenRun(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReopenRun(nope) = %v, want ErrNotFound", err)
	}
}
