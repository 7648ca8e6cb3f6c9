package runner

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

func TestWANArgs(t *testing.T) {
	for _, tc := range []struct {
		w    result.WANParams
		want string
	}{
		{result.WANParams{DelayMs: 40, JitterMs: 2, LossPercent: 0.1, RateBps: 1e9, Qdisc: "netem"},
			"tc qdisc replace dev v root netem limit 100000 delay 40ms 2ms loss 0.1% rate 1000000000bit"},
		{result.WANParams{DelayMs: 0.5, Qdisc: "netem"}, "tc qdisc replace dev v root netem limit 100000 delay 0.5ms"},
		{result.WANParams{RateBps: 200e6, Qdisc: "tbf"}, "tc qdisc replace dev v root tbf rate 200000000bit burst 125000 latency 50ms"},
		{result.WANParams{RateBps: 10e6, Qdisc: "tbf"}, "tc qdisc replace dev v root tbf rate 10000000bit burst 65536 latency 50ms"},
	} {
		if got := strings.Join(WANArgs("v", &tc.w), " "); got != tc.want {
			t.Errorf("WANArgs(%+v) =\n%s\nwant\n%s", tc.w, got, tc.want)
		}
	}
}
