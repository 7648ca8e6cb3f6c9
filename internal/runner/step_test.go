package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// A cell that fails part-way keeps what was measured before the failure,
// with its derived figures, and its method and testbed are torn down; an
// interrupt before the tests fails the cell naming the test it stopped.
func TestStepFailureKeepsFiguresAndTearsDown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tests     []string
		interrupt bool
		wantErr   string
		wantThr   bool
	}{
		{name: "later test fails", tests: []string{scenario.TestTCPStream, "nonesuch"}, wantErr: `unknown test "nonesuch"`, wantThr: true},
		{name: "interrupted", tests: []string{scenario.TestTCPStream}, interrupt: true, wantErr: "tcp_stream: context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, bed := &cancelMethod{fakeMethod: &fakeMethod{}}, newFakeBed(t)
			sc := scenario.Default()
			sc.Methods = []string{"fake"}
			sc.Repetitions = 1
			sc.Duration, sc.Omit, sc.Latency = "1s", "0s", "0s"
			cfg := Config{Scenario: sc, Methods: method.NewRegistry(m), Bed: bed, ID: testbed.NewID(), BackgroundWindow: 10 * time.Millisecond}
			steps := plan.Build(sc, method.Catalog{R: cfg.Methods})
			if len(steps) == 0 {
				t.Fatal("no step planned")
			}
			st := steps[0]
			st.Params.Tests = tc.tests
			ctx := context.Background()
			if tc.interrupt {
				// Cancelled as the method is set up: after the testbed,
				// before the tests.
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				m.cancel = cancel
			}
			cell := runStep(ctx, cfg, "run", st, nil)
			if cell.Status != result.StatusFailed || !strings.Contains(cell.Error, tc.wantErr) {
				t.Errorf("cell %s %q, want failed naming %q", cell.Status, cell.Error, tc.wantErr)
			}
			if got := cell.Throughput != nil && cell.CPU != nil; got != tc.wantThr {
				t.Errorf("throughput and CPU kept: %v, want %v", got, tc.wantThr)
			}
			if cell.Derived == nil {
				t.Error("no derived figures")
			}
			if cell.Finished.Before(cell.Started) {
				t.Errorf("finished %v before started %v", cell.Finished, cell.Started)
			}
			if m.setups != 1 || m.teardowns != 1 || bed.pairs != 1 || bed.closed != 1 {
				t.Errorf("setups %d teardowns %d pairs %d closed %d, want 1 each", m.setups, m.teardowns, bed.pairs, bed.closed)
			}
		})
	}
}

// cancelMethod is fakeMethod calling cancel (if set) once it is set up.
type cancelMethod struct {
	*fakeMethod
	cancel func()
}

func (m *cancelMethod) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	path, err := m.fakeMethod.Setup(ctx, env)
	if m.cancel != nil {
		m.cancel()
	}
	return path, err
}
