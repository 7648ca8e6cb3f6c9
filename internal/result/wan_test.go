package result_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// The WAN label is what cell keys carry, so stored runs resume only while
// it stays exactly as it was: delay, jitter, loss, then the rate in
// Mbit/s (a gigabit is r1000M), zero fields left out.
func TestWANLabel(t *testing.T) {
	for _, c := range []struct {
		w    *result.WANParams
		want string
	}{
		{&result.WANParams{DelayMs: 40, JitterMs: 2, LossPercent: 0.1, RateBps: 1e9, Qdisc: "netem"}, "d40ms-j2ms-l0.1%-r1000M"},
		{&result.WANParams{RateBps: 1e9, Qdisc: "tbf"}, "r1000M"},
		{&result.WANParams{RateBps: 500e3}, "r0.5M"},
		{&result.WANParams{DelayMs: 0.5, LossPercent: 1}, "d0.5ms-l1%"},
		{&result.WANParams{JitterMs: 3}, "j3ms"},
		{&result.WANParams{}, ""},
		{nil, ""},
	} {
		if got := c.w.Label(); got != c.want {
			t.Errorf("%+v: Label() = %q, want %q", c.w, got, c.want)
		}
	}
}
