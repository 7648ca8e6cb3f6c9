package hostinfo

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// fakeRunner answers each argv from a table. A missing entry behaves like
// an absent program.
type fakeRunner struct {
	mu        sync.Mutex
	replies   map[string]fakeReply
	calls     []string
	deadlines []time.Duration // time left before each call's deadline
}

type fakeReply struct {
	out []byte
	err error
}

func (f *fakeRunner) Output(ctx context.Context, argv ...string) ([]byte, error) {
	key := strings.Join(argv, " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, key)
	if d, ok := ctx.Deadline(); ok {
		f.deadlines = append(f.deadlines, time.Until(d))
	} else {
		f.deadlines = append(f.deadlines, -1)
	}
	r, ok := f.replies[key]
	if !ok {
		return nil, fmt.Errorf("run %q: %w", argv, &exec.Error{Name: argv[0], Err: exec.ErrNotFound})
	}
	return r.out, r.err
}
