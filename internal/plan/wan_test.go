package plan_test

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
)

// A WAN cell's key is the one stored runs hold (--resume matches stored
// cells by key), and the plan line names the WAN the same way.
func TestWANKeyIsStable(t *testing.T) {
	p := result.Params{Family: "ipv4", UnderlayMTU: 1500, Offloads: true, Streams: 1,
		WAN: &result.WANParams{DelayMs: 40, JitterMs: 2, LossPercent: 0.1, RateBps: 1e9, Qdisc: "netem"}}
	if got, want := plan.Key("vxlan", p), "vxlan/ipv4/mtu1500/offloads-on/p1/wan-d40ms-j2ms-l0.1%-r1000M"; got != want {
		t.Errorf("Key = %q, want %q (the key stored runs hold)", got, want)
	}
	line := plan.Step{Index: 1, Method: "vxlan", Params: p, Repetition: 1}.Line(1)
	if !strings.Contains(line, " wan=d40ms-j2ms-l0.1%-r1000M ") {
		t.Errorf("Line = %q, want the WAN named as in the key", line)
	}
}
