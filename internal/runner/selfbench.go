package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// FidelityReport compares native throughput measured through tunbench with
// a hand-run iperf3 on the same namespace pair, alternating the two.
type FidelityReport struct {
	Rounds      int       `json:"rounds"`
	DurationS   float64   `json:"duration_s"`
	TunbenchBps []float64 `json:"tunbench_bps"`
	HandBps     []float64 `json:"hand_run_bps"`
	MedianRatio float64   `json:"median_ratio"` // stats.Median(tunbench) / stats.Median(hand-run)
	TunbenchMed float64   `json:"tunbench_median_bps"`
	HandMed     float64   `json:"hand_run_median_bps"`
	Explanation string    `json:"explanation"`
}

// Fidelity measures native throughput rounds times each way on one
// testbed: once through the runner's own measurement (sampler, live
// counters, server readiness probe), once as a plain "iperf3 -c" a person
// would type, in alternating order so drift affects both alike.
func Fidelity(ctx context.Context, root string, rounds int, dur time.Duration) (*FidelityReport, error) {
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: root})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	tb := l.Pair()
	path, err := method.Native{}.Setup(ctx, &method.Env{A: tb.A, B: tb.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500})
	if err != nil {
		return nil, err
	}
	rep := &FidelityReport{Rounds: rounds, DurationS: dur.Seconds(),
		Explanation: "native IPv4 over the veth pair, one TCP stream, no warm-up; tunbench = the runner's measurement with CPU sampling and live counters; hand-run = iperf3 -c ADDR -t N -J run directly in the same namespaces"}
	p := result.Params{Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500, Streams: 1, Duration: dur.Seconds()}
	for i := 0; i < rounds; i++ {
		thr, _, _, err := measureThroughput(ctx, tb, path, p, nil)
		if err != nil {
			return nil, fmt.Errorf("tunbench round %d: %w", i+1, err)
		}
		rep.TunbenchBps = append(rep.TunbenchBps, thr.BitsPerSecond)
		hand, err := handIperf3(ctx, tb, path, dur)
		if err != nil {
			return nil, fmt.Errorf("hand-run round %d: %w", i+1, err)
		}
		rep.HandBps = append(rep.HandBps, hand)
	}
	rep.TunbenchMed, rep.HandMed = stats.Median(rep.TunbenchBps), stats.Median(rep.HandBps)
	if rep.HandMed > 0 {
		rep.MedianRatio = rep.TunbenchMed / rep.HandMed
	}
	return rep, nil
}

func handIperf3(ctx context.Context, tb *testbed.Pair, path *method.Path, dur time.Duration) (float64, error) {
	srv := tb.B.Command(ctx, "iperf3", "-s", "-1", "-B", path.B.String(), "-p", "5202")
	if err := tb.B.Start(srv); err != nil {
		return 0, err
	}
	defer stop(tb.B, srv)
	if err := tb.B.WaitListening(ctx, srv.Pid(), 5202, 5*time.Second); err != nil {
		return 0, err
	}
	out, err := tb.A.Run(ctx, "iperf3", "-c", path.B.String(), "-p", "5202", "-t", fmt.Sprint(int(dur.Seconds())), "-J")
	if err != nil {
		return 0, err
	}
	thr, err := load.ParseIperf3(out)
	if err != nil {
		return 0, err
	}
	return thr.BitsPerSecond, nil
}
