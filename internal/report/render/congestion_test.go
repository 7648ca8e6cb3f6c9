package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// ccCells are native and vxlan measured with cubic and with bbr, as the
// runner records them: the algorithm asked for in the parameters and the
// one the sockets reported in the metadata.
func ccCells() (result.Run, []result.Cell) {
	run := result.Run{ID: "cc0001", Testbed: "local", Host: result.Host{Sysctls: map[string]string{"net.ipv4.tcp_congestion_control": "bbr"}}}
	var cells []result.Cell
	add := func(m, cc string, gbps float64) {
		p := result.Params{Family: "ipv4", UnderlayMTU: 1500, OverlayMTU: 1500, Offloads: true, Streams: 1, Duration: 1, CongestionControl: cc}
		cells = append(cells, result.Cell{Method: m, Key: m + "/cc-" + cc, Params: p, Repetition: 1, Status: result.StatusOK,
			Throughput: &result.Throughput{BitsPerSecond: gbps * 1e9, SenderCongestion: cc, ReceiverCongestion: cc,
				Intervals: []result.Interval{{Start: 0, End: 1, BitsPerSecond: gbps * 1e9}}},
			Meta: result.Meta{CongestionControl: cc}})
	}
	add("native", "cubic", 40)
	add("vxlan", "cubic", 30)
	add("native", "bbr", 20)
	add("vxlan", "bbr", 18)
	return run, cells
}

// TestCongestionControlInTheTable: each algorithm heads its own rows,
// each compares with native under the same algorithm, the bbr rows carry
// the pacing warning, and both CSV exports name the algorithm asked for
// and the one used.
func TestCongestionControlInTheTable(t *testing.T) {
	run, cells := ccCells()
	rows := summary.Aggregate(run, cells)
	for _, r := range rows {
		if r.Method == "vxlan" {
			want := map[string]float64{"cubic": 75, "bbr": 90}[r.Params.CongestionControl]
			if r.PercentNative == nil || *r.PercentNative != want {
				t.Errorf("vxlan with %s: %% native %v, want %v (native with the same algorithm)", r.Params.CongestionControl, r.PercentNative, want)
			}
		}
		if r.Congestion != r.Params.CongestionControl {
			t.Errorf("%s: used %q, asked %q", r.Key, r.Congestion, r.Params.CongestionControl)
		}
	}
	var b strings.Builder
	if err := summary.Table(&b, run, cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-- cc cubic", "-- cc bbr", "cc: the TCP congestion control asked for", "TCP congestion control bbr (native (cc bbr), vxlan (cc bbr))"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	var tidy, wide bytes.Buffer
	if err := export.CSV(&tidy, run, cells); err != nil {
		t.Fatal(err)
	}
	if err := export.WideCSV(&wide, run, cells); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"tidy": tidy.String(), "wide": wide.String()} {
		if !strings.Contains(out, "congestion_control,congestion_control_used") || !strings.Contains(out, "bbr,bbr") || !strings.Contains(out, "cubic,cubic") {
			t.Errorf("%s CSV lacks the algorithms:\n%s", name, out)
		}
	}
}

// TestCongestionControlConstant: one algorithm is said once, under the
// table, as the sockets reported it; cubic carries no pacing warning even
// on a host whose default is bbr.
func TestCongestionControlConstant(t *testing.T) {
	run, cells := ccCells()
	cells = cells[:2]
	var b strings.Builder
	if err := summary.Table(&b, run, cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "TCP congestion control: cubic, as every connection's socket reported it.") {
		t.Errorf("table does not say the algorithm:\n%s", out)
	}
	if strings.Contains(out, "-- cc") || strings.Contains(out, "paces its own sending") {
		t.Errorf("a constant cubic got a heading or the pacing warning:\n%s", out)
	}
}

// TestCongestionControlInFigures: figures of the two algorithms have ids
// and titles of their own.
func TestCongestionControlInFigures(t *testing.T) {
	run, cells := ccCells()
	ids, titles := map[string]bool{}, map[string]bool{}
	var cubic, bbr int
	for _, c := range Charts(run, cells) {
		if ids[c.ID] || titles[c.Title] {
			t.Errorf("figure %s (%q) is not unique", c.ID, c.Title)
		}
		ids[c.ID], titles[c.Title] = true, true
		if strings.Contains(c.Title, "cc cubic") {
			cubic++
		}
		if strings.Contains(c.Title, "cc bbr") {
			bbr++
		}
	}
	if cubic == 0 || cubic != bbr {
		t.Errorf("%d cubic and %d bbr figures, want as many of each", cubic, bbr)
	}
}
