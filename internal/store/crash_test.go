package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store/pgtest"
)

// crashEnv makes the test binary act as a benchmark that dies mid-run.
const crashEnv = "TUNBENCH_STORE_CRASH_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashingWriter(path)
	}
	os.Exit(pgtest.Main(m))
}

// crashingWriter begins a run, adds three cells and exits without
// finishing the run or closing the database, as a killed process would.
func crashingWriter(path string) {
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := newRun("crashed", t0)
	if err := s.BeginRun(ctx, &r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for rep := 1; rep <= 3; rep++ {
		c := fullCell(r.ID, rep)
		if _, err := s.AddCell(ctx, &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(42) // no FinishRun, no Close
}

func TestCrashKeepsCells(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 42 {
		t.Fatalf("crashing writer: %v\n%s", err, out)
	}

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, cells, err := s.Run(context.Background(), "crashed")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != result.RunRunning {
		t.Errorf("run status after crash = %q, want %q", r.Status, result.RunRunning)
	}
	var reps []int
	for _, c := range cells {
		reps = append(reps, c.Repetition)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, reps); diff != "" {
		t.Errorf("repetitions surviving the crash (-want +got):\n%s", diff)
	}
}
