package sample

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// BusyThreshold is the background machine utilisation, in percent, above
// which a cell's figures are distrusted (result.Meta.Busy): on a 2-core
// machine, a quarter of it busy means half a core of noise competing with
// the measurement.
const BusyThreshold = 25.0

// IsBusy reports whether a background utilisation (percent) is above
// BusyThreshold.
func IsBusy(busyPercent float64) bool { return busyPercent > BusyThreshold }

// Background measures whole-machine busy percent (Percent.Busy) over d by
// reading /proc/stat before and after, with nothing of the cell running.
// It fails if ctx ends first or if no CPU time elapsed (d far below one
// tick). fs must not be in use by a running Sampler.
func Background(ctx context.Context, fs FS, d time.Duration) (busyPercent float64, err error) {
	var prev, cur Stat
	read := func(into *Stat) error {
		data, err := fs.ReadFile("stat")
		if err != nil {
			return fmt.Errorf("measure background cpu: read /proc/stat: %w", err)
		}
		if err := parseProcStatInto(data, into); err != nil {
			return fmt.Errorf("measure background cpu: %w", err)
		}
		return nil
	}
	if err := read(&prev); err != nil {
		return 0, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, fmt.Errorf("measure background cpu: %w", ctx.Err())
	case <-t.C:
	}
	if err := read(&cur); err != nil {
		return 0, err
	}
	p := between(prev.All, cur.All)
	if p.Ticks == 0 {
		return 0, errors.New("measure background cpu: no cpu time elapsed")
	}
	return p.Busy, nil
}
