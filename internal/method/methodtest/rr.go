package methodtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// RRThrough runs two seconds of tunbench's request/response tool from a
// to b through the tunnel of path, the test binary standing in for
// tunbench (its TestMain serves "rr"), and fails t unless the stream
// flowed: at least rrFlowing transactions. That is a floor, not a speed
// target: a tunnel that drops or stalls makes none or a handful, while a
// userspace tunnel on a loaded 2-core machine made 46 (ssh-tunnel, p50
// 16 ms) where an idle one makes thousands.
func RRThrough(t *testing.T, l *localns.Local, path *method.Path) *result.Latency {
	t.Helper()
	ctx := context.Background()
	srv := l.B.Command(ctx, load.RRServer{Bind: path.B, Exe: os.Args[0]}.Args()...)
	if err := l.B.Start(srv); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Kill()
		_ = srv.Wait()
		l.B.Forget(srv)
	}()
	if err := l.B.WaitListening(ctx, srv.Pid(), load.RRDefaultPort, serverStart); err != nil {
		t.Fatalf("rr server: %v", err)
	}
	cl := load.RRClient{Server: path.B, Duration: 2 * time.Second, Exe: os.Args[0]}
	out, err := l.A.Run(ctx, cl.Args()...)
	if err != nil {
		t.Fatalf("rr from %s to %s: %v\n%s", path.A, path.B, err, out)
	}
	lat, err := load.ParseRR(out)
	if err != nil {
		t.Fatal(err)
	}
	if lat.Samples < rrFlowing {
		t.Errorf("rr: %d transactions in 2 s, want at least %d (the stream stalled)", lat.Samples, rrFlowing)
	}
	return lat
}

// rrFlowing is how many transactions RRThrough's two seconds must make.
const rrFlowing = 20
