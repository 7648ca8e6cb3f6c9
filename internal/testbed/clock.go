package testbed

import (
	"context"
	"time"
)

var opClockNow = NewOp("clock.now", func(context.Context, *Endpoint, struct{}) (int64, error) {
	return time.Now().UnixNano(), nil
})

// ClockOffset measures how far ep's host clock is ahead of this machine's,
// NTP-style over the control connection: of several exchanges it keeps
// the one with the shortest round trip, and the offset is known within
// half that round trip (the uncertainty). On this machine both are zero.
func ClockOffset(ctx context.Context, ep *Endpoint, exchanges int) (offset, uncertainty time.Duration, err error) {
	if ep.Local() {
		return 0, 0, nil
	}
	best := time.Duration(-1)
	for i := 0; i < max(exchanges, 1); i++ {
		t0 := time.Now()
		remote, err := opClockNow.Call(ctx, ep, struct{}{})
		t2 := time.Now()
		if err != nil {
			return 0, 0, err
		}
		rtt := t2.Sub(t0)
		if best < 0 || rtt < best {
			best = rtt
			mid := t0.Add(rtt / 2)
			offset = time.Unix(0, remote).Sub(mid)
			uncertainty = rtt / 2
		}
	}
	return offset, uncertainty, nil
}
