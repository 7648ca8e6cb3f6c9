package method

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
)

// fakeDaemon starts argv as daemon role on an endpoint in this process's
// own namespace, logging to a file in a test directory.
func fakeDaemon(t *testing.T, role string, argv ...string) (*Process, *testbed.Endpoint) {
	t.Helper()
	dir := t.TempDir()
	ep := &testbed.Endpoint{Side: "b", NS: -1, Dir: dir}
	p, err := StartDaemon(ep, role, filepath.Join(dir, role+".log"), nil, argv...)
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

// checkExited asserts that err is the failure of daemon p, which exited
// with status code: errors.Is finds ErrDaemonExited and not a deadline,
// errors.As the exit status and the log's last lines.
func checkExited(t *testing.T, err error, p *Process, code int, logLine string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error for a daemon that exited")
	}
	if !errors.Is(err, ErrDaemonExited) {
		t.Errorf("errors.Is(%q, ErrDaemonExited) = false", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an exit reads as a timeout: %q", err)
	}
	var ex *ExitedError
	if !errors.As(err, &ex) || ex.Role != p.Role || ex.PID != p.PID() {
		t.Errorf("errors.As ExitedError: %+v, want role %s pid %d", ex, p.Role, p.PID())
	}
	var ee *testbed.ExitError
	if !errors.As(err, &ee) || ee.Code != code {
		t.Errorf("exit status in %q: got %+v, want code %d", err, ee, code)
	}
	var de *DaemonError
	if !errors.As(err, &de) || !strings.Contains(de.Tail, logLine) {
		t.Errorf("log tail in %q: got %+v, want it to hold %q", err, de, logLine)
	}
	if !strings.Contains(err.Error(), p.Role+" exited (pid ") || !strings.Contains(err.Error(), logLine) {
		t.Errorf("message %q: want it to say the daemon exited and quote its log", err)
	}
}

// A daemon that exits while a wait polls it fails the wait at once, with
// an error errors.Is recognises as ErrDaemonExited; a daemon that runs
// but never gets ready fails it at the timeout, which is a deadline and
// not an exit; a killed daemon is an exit ended by a signal.
func TestDaemonExitedVsTimeout(t *testing.T) {
	ctx := context.Background()
	wait := func(p *Process, timeout time.Duration) error {
		err := WaitFor(ctx, timeout, "fake ready", func() (bool, error) {
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
		p, _ := fakeDaemon(t, "fake", "sh", "-c", "echo bind failed; exit 3")
		start := time.Now()
		err := wait(p, 10*time.Second)
		checkExited(t, err, p, 3, "bind failed")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the exit was noticed after %s, want at once", d)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		p, _ := fakeDaemon(t, "fake", "sh", "-c", "echo starting; exec sleep 30")
		err := wait(p, 300*time.Millisecond)
		if err == nil {
			t.Fatal("no error for a daemon that never got ready")
		}
		if errors.Is(err, ErrDaemonExited) {
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
		p, _ := fakeDaemon(t, "fake", "sleep", "30")
		if err := p.cmd.Kill(); err != nil {
			t.Fatal(err)
		}
		err := wait(p, 10*time.Second)
		if !errors.Is(err, ErrDaemonExited) || !testbed.Signaled(err) {
			t.Errorf("killed daemon: %q, want ErrDaemonExited ended by a signal", err)
		}
	})
}

// The methods' own waits on their daemons keep the exit in the error
// chain: OpenVPN's start and client waits, OVS's control socket and path
// waits, charon's CHILD_SA and TUN device waits. (Each daemon here exits
// with status 3 before it is polled.)
func TestDaemonExitThroughMethodWaits(t *testing.T) {
	ctx := context.Background()
	waits := map[string]func(p *Process, ep *testbed.Endpoint) error{
		"openvpn init": func(p *Process, _ *testbed.Endpoint) error { return ovpnWaitInit(ctx, p) },
		"openvpn client": func(p *Process, ep *testbed.Endpoint) error {
			_, err := ovpnWaitClient(ctx, p, filepath.Join(ep.Dir, "status"), "AES-256-GCM")
			return err
		},
		"ovs socket": func(p *Process, ep *testbed.Endpoint) error {
			return (&ovsSide{ep: ep}).waitSocket(ctx, p, filepath.Join(ep.Dir, "db.ctl"))
		},
		"ovs path": func(p *Process, ep *testbed.Endpoint) error {
			run := &ovsRun{datapath: "netdev", sides: []*ovsSide{{ep: ep, db: p, vsd: p}}}
			path := &Path{A: netip.MustParseAddr("10.0.0.1"), B: netip.MustParseAddr("10.0.0.2")}
			return NewOVSVXLAN().waitPath(ctx, &Env{A: ep, B: ep}, run, path)
		},
		"charon child sa": func(p *Process, ep *testbed.Endpoint) error {
			_, err := (&charon{ep: ep, proc: p}).waitInstalled(ctx, "net")
			return err
		},
		"charon tun": func(p *Process, ep *testbed.Endpoint) error {
			_, err := (&charon{ep: ep, proc: p}).tunDevice(ctx)
			return err
		},
	}
	for name, wait := range waits {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			p, ep := fakeDaemon(t, "fake", "sh", "-c", "echo cannot start; exit 3")
			<-p.exited
			start := time.Now()
			err := wait(p, ep)
			checkExited(t, err, p, 3, "cannot start")
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the exit was noticed after %s, want at once", d)
			}
		})
	}
}
