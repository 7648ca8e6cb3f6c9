package method_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// A daemon that exits while a wait polls it fails the wait at once, with
// an error errors.Is recognises as ErrDaemonExited; a daemon that runs
// but never gets ready fails it at the timeout, which is a deadline and
// not an exit; a killed daemon is an exit ended by a signal.
func TestDaemonExitedVsTimeout(t *testing.T) {
	ctx := context.Background()
	wait := func(p *method.Process, timeout time.Duration) error {
		err := method.WaitFor(ctx, timeout, "fake ready", func() (bool, error) {
			if err := p.Alive(); err != nil {
				return false, err
			}
			return false, nil
		})
		if err != nil {
			return p.Failure("start", err)
		}
		return nil
	}

	t.Run("exited", func(t *testing.T) {
		p, _ := methodtest.FakeDaemon(t, "fake", "sh", "-c", "echo bind failed; exit 3")
		start := time.Now()
		err := wait(p, 10*time.Second)
		methodtest.CheckExited(t, err, p, 3, "bind failed")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the exit was noticed after %s, want at once", d)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		p, _ := methodtest.FakeDaemon(t, "fake", "sh", "-c", "echo starting; exec sleep 30")
		err := wait(p, 300*time.Millisecond)
		if err == nil {
			t.Fatal("no error for a daemon that never got ready")
		}
		if errors.Is(err, method.ErrDaemonExited) {
			t.Errorf("a timeout reads as an exit: %q", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 300ms") {
			t.Errorf("timeout error %q: want context.DeadlineExceeded, saying after how long", err)
		}
		if err := p.Alive(); err != nil {
			t.Errorf("Alive of a running daemon: %v", err)
		}
	})

	t.Run("killed", func(t *testing.T) {
		p, _ := methodtest.FakeDaemon(t, "fake", "sleep", "30")
		if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := wait(p, 10*time.Second)
		if !errors.Is(err, method.ErrDaemonExited) || !testbed.Signaled(err) {
			t.Errorf("killed daemon: %q, want ErrDaemonExited ended by a signal", err)
		}
	})
}
