package hostinfo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Runner runs one command and returns its combined stdout and stderr.
// On failure it returns the output it got together with the error, so a
// tool that prints its version and exits non-zero is still usable.
// Implementations must be safe for concurrent use.
type Runner interface {
	Output(ctx context.Context, argv ...string) ([]byte, error)
}

// ExecRunner runs commands with os/exec in the C locale. A command that is
// not installed fails with an error matching exec.ErrNotFound.
type ExecRunner struct{}

// Output runs argv with LC_ALL=C. Its errors quote argv and the output.
func (ExecRunner) Output(ctx context.Context, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("run: empty argv")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("run %q: %w; output: %q", argv, err, out)
	}
	return out, nil
}
