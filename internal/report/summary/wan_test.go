package summary

import (
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
)

// The report names and groups a WAN condition by the same label as the
// cell key: a row's "wan ..." is the key's "/wan-...", rows at one WAN
// share a native baseline and rows at another do not.
func TestWANLabelMatchesKey(t *testing.T) {
	wan := func(delay float64) *result.WANParams {
		return &result.WANParams{DelayMs: delay, LossPercent: 0.1, RateBps: 1e9, Qdisc: "netem"}
	}
	params := func(w *result.WANParams) result.Params {
		return result.Params{Family: "ipv4", UnderlayMTU: 1500, Offloads: true, Streams: 1, WAN: w}
	}
	p := params(wan(40))
	key := plan.Key("vxlan", p)
	label := key[strings.Index(key, "/wan-")+len("/wan-"):]
	if got := extraParams(p); !slices.Contains(got, "wan "+label) {
		t.Errorf("report names the WAN %q, the cell key %q", got, key)
	}

	rows := []Summary{
		{Method: NativeMethod, Params: params(wan(40)), Throughput: Figure{Summary: stats.Summary{N: 3, Mean: 10}}},
		{Method: "vxlan", Params: params(wan(40)), Throughput: Figure{Summary: stats.Summary{N: 3, Mean: 5}}},
		{Method: "vxlan", Params: params(wan(80)), Throughput: Figure{Summary: stats.Summary{N: 3, Mean: 4}}},
	}
	setPercentNative(rows)
	if pn := rows[1].PercentNative; pn == nil || *pn != 50 {
		t.Errorf("vxlan at the native row's WAN: %% native %v, want 50", pn)
	}
	if pn := rows[2].PercentNative; pn != nil {
		t.Errorf("vxlan at another WAN compared with native at 40 ms: %v%%", *pn)
	}
}
