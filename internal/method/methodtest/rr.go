package methodtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// RRThrough runs two seconds of tunbench's request/response tool from a
// to b through the tunnel of path, the test binary standing in for
// tunbench (its TestMain serves "rr"), and fails t unless it made many
// transactions.
func RRThrough(t *testing.T, l *testbed.Local, path *method.Path) *result.Latency {
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
	if err := l.B.WaitListening(ctx, srv.Pid(), load.RRDefaultPort, 5*time.Second); err != nil {
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
	if lat.Samples < 100 {
		t.Errorf("rr: %d transactions in 2 s, want many", lat.Samples)
	}
	return lat
}
