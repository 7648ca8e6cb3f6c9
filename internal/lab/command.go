package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// runner runs an external command to completion and returns its combined
// output. It is the package's boundary to the OS for short commands
// (apt-get, dpkg, depmod); tests swap in a fake.
type runner interface {
	run(ctx context.Context, dir string, argv ...string) ([]byte, error)
}

// execRunner runs commands with os/exec under LC_ALL=C.
type execRunner struct{}

func (execRunner) run(ctx context.Context, dir string, argv ...string) ([]byte, error) {
	path, err := lookPathSbin(argv[0])
	if err != nil {
		return nil, fmt.Errorf("%q: %w", argv, err)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%q: %w: %s", argv, err, out)
	}
	return out, nil
}

// childEnv is the environment of every child process: the caller's, with
// messages in the C locale so that errors quote parseable text.
func childEnv() []string {
	return append(os.Environ(), "LC_ALL=C")
}
