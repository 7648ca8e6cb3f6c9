package runner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// WANArgs is the tc command that applies w on the egress of dev: netem
// for delay, jitter or loss (with its own rate), else tbf for a rate
// alone. The queue holds 100000 packets under netem, 50 ms under tbf.
func WANArgs(dev string, w *result.WANParams) []string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	if w.Qdisc == "netem" {
		args := []string{"tc", "qdisc", "replace", "dev", dev, "root", "netem", "limit", "100000"}
		if w.DelayMs > 0 {
			args = append(args, "delay", num(w.DelayMs)+"ms")
			if w.JitterMs > 0 {
				args = append(args, num(w.JitterMs)+"ms")
			}
		}
		if w.LossPercent > 0 {
			args = append(args, "loss", num(w.LossPercent)+"%")
		}
		if w.RateBps > 0 {
			args = append(args, "rate", num(w.RateBps)+"bit")
		}
		return args
	}
	// Burst: 5 ms at the rate, at least 64 KB so a GSO packet fits.
	burst := max(int(w.RateBps/8*0.005), 64<<10)
	return []string{"tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", num(w.RateBps) + "bit",
		"burst", strconv.Itoa(burst), "latency", "50ms"}
}

// applyWAN puts the WAN condition on both underlay devices. The qdiscs go
// with the veth pair when the testbed is removed.
func applyWAN(ctx context.Context, tb *testbed.Pair, w *result.WANParams) (string, error) {
	var applied string
	for _, ep := range tb.Endpoints() {
		argv := WANArgs(ep.Dev, w)
		if out, err := ep.Run(ctx, argv...); err != nil {
			return applied, fmt.Errorf("apply wan on %s: %q: %w: %s", ep.Side, joinArgs(argv), err, trim(string(out)))
		}
		if applied != "" {
			applied += "; "
		}
		applied += ep.Side + ": " + joinArgs(argv[3:])
	}
	return applied, nil
}
