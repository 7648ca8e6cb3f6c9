package runner

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// BenchmarkConnectHarness measures what the connect test adds to a cell
// beyond the tunnel's own set-up: starting the echo server on side b and
// the probe on side a ("tunbench rr probe", waiting for its address),
// then, as after the set-up, handing the probe the address on a path with
// nothing to wait for (the namespaces' own underlay, as native) until its
// first answer (a UDP request every 10 ms), and stopping the server.
// It reports the mean (harness-ms/op), the mean of the probe alone, which
// is what a native cell records as its handshake (handshake-ms/op), the
// worst (max-ms) and the worst as a fraction of the 1 s a cell may spend
// (budget-ratio; issue 33 asks for at most 1).
//
//	go test -run '^$' -bench ConnectHarness -benchtime 20x ./internal/runner/
func BenchmarkConnectHarness(b *testing.B) {
	testbedtest.RequireNetAdmin(b)
	bin := filepath.Join(b.TempDir(), "tunbench")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/tunbench").CombinedOutput(); err != nil {
		b.Fatalf("build tunbench: %v\n%s", err, out)
	}
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), MTU: 1500, Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	pair := l.Pair()
	pair.A.Exe, pair.B.Exe = bin, bin
	ctx := context.Background()
	path := &method.Path{A: pair.A.Addr4.Addr(), B: pair.B.Addr4.Addr()}
	var sum, worst, handshake time.Duration
	b.ResetTimer()
	for range b.N {
		// What runStep adds: the echo server and the probe started
		// before the set-up, told the address after it, the server
		// stopped.
		start := time.Now()
		echo, err := startEchoAhead(ctx, pair.B)
		if err != nil {
			b.Fatal(err)
		}
		probe, err := startConnectProbe(ctx, pair)
		if err != nil {
			b.Fatal(err)
		}
		if err := echo.listen(ctx, path.B); err != nil {
			b.Fatal(err)
		}
		c, err := probe.measure(path, 0, time.Now())
		echo.stop()
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		sum += d
		worst = max(worst, d)
		handshake += time.Duration(c.Handshake * float64(time.Second))
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(b.N), "harness-ms/op")
	b.ReportMetric(float64(handshake.Microseconds())/1000/float64(b.N), "handshake-ms/op")
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
	b.ReportMetric(worst.Seconds()/1.0, "budget-ratio")
}
