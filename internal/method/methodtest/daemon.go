package methodtest

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// FakeDaemon starts argv as daemon role on an endpoint in this process's
// own namespace, logging to a file in a test directory; it is stopped at
// the end of the test.
func FakeDaemon(t *testing.T, role string, argv ...string) (*method.Process, *testbed.Endpoint) {
	t.Helper()
	dir := t.TempDir()
	ep := &testbed.Endpoint{Side: "b", NS: -1, Dir: dir}
	p, err := method.StartDaemon(ep, role, filepath.Join(dir, role+".log"), nil, argv...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(time.Second); err != nil {
			t.Error(err)
		}
	})
	return p, ep
}

// CheckExited asserts that err is the failure of daemon p, which exited
// with status code: errors.Is finds method.ErrDaemonExited and not a
// deadline, errors.As the exit status and the log's last lines.
func CheckExited(t *testing.T, err error, p *method.Process, code int, logLine string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error for a daemon that exited")
	}
	if !errors.Is(err, method.ErrDaemonExited) {
		t.Errorf("errors.Is(%q, ErrDaemonExited) = false", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an exit reads as a timeout: %q", err)
	}
	var ex *method.ExitedError
	if !errors.As(err, &ex) || ex.Role != p.Role || ex.PID != p.PID() {
		t.Errorf("errors.As ExitedError: %+v, want role %s pid %d", ex, p.Role, p.PID())
	}
	var ee *testbed.ExitError
	if !errors.As(err, &ee) || ee.Code != code {
		t.Errorf("exit status in %q: got %+v, want code %d", err, ee, code)
	}
	var de *method.DaemonError
	if !errors.As(err, &de) || !strings.Contains(de.Tail, logLine) {
		t.Errorf("log tail in %q: got %+v, want it to hold %q", err, de, logLine)
	}
	if !strings.Contains(err.Error(), p.Role+" exited (pid ") || !strings.Contains(err.Error(), logLine) {
		t.Errorf("message %q: want it to say the daemon exited and quote its log", err)
	}
}

// DaemonWait is one of a method's waits on its daemon p on endpoint ep.
type DaemonWait func(p *method.Process, ep *testbed.Endpoint) error

// CheckWaitsSeeExit runs each wait on a fake daemon that exited with
// status 3 before it is polled, and checks that the wait fails at once
// with the exit in its error chain (CheckExited).
func CheckWaitsSeeExit(t *testing.T, waits map[string]DaemonWait) {
	for name, wait := range waits {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			p, ep := FakeDaemon(t, "fake", "sh", "-c", "echo cannot start; exit 3")
			<-p.Done()
			start := time.Now()
			err := wait(p, ep)
			CheckExited(t, err, p, 3, "cannot start")
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the exit was noticed after %s, want at once", d)
			}
		})
	}
}
