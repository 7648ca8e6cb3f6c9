package render

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// tunnelsOnly are the charts of a run in the tunnels section.
func tunnelsOnly(charts []Chart) []Chart {
	var out []Chart
	for _, c := range charts {
		if c.Section == SectionTunnels {
			out = append(out, c)
		}
	}
	return out
}

// TestTunnelsCharts: a run at 1, 10 and 100 tunnels draws throughput,
// set-up time and memory per tunnel against the count (log x, one line
// per method with its intervals) and the reconf test's blocked time per
// method, against a golden file; each renders; the memory figure names
// the shared kernel.
func TestTunnelsCharts(t *testing.T) {
	run, cells := fixture.ScaleRun()
	mine := tunnelsOnly(Charts(run, cells))
	js, err := json.MarshalIndent(mine, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	fixture.Golden(t, "scale.charts.golden", append(js, '\n'))
	var ids []string
	for _, c := range mine {
		ids = append(ids, strings.TrimPrefix(c.ID, run.ID+"-"))
		if _, err := Render(c); err != nil {
			t.Errorf("render %s: %v", c.ID, err)
		}
	}
	const set = "ipv4-mtu1500-offloads-on-p1"
	want := []string{"tunnels-throughput-" + set, "tunnels-setup-" + set, "tunnels-memory-" + set, "reconf-" + set}
	if !slices.Equal(ids, want) {
		t.Fatalf("tunnels figures %q, want %q", ids, want)
	}
	xs := func(c Chart, name string) []float64 {
		for _, s := range c.Series {
			if s.Name == name {
				if len(s.YErr) != len(s.X) {
					t.Errorf("%s: %s has %d error bars for %d points", c.ID, name, len(s.YErr), len(s.X))
				}
				return s.X
			}
		}
		return nil
	}
	tp, setup, mem, reconf := mine[0], mine[1], mine[2], mine[3]
	if !tp.LogX || !setup.LogX || !mem.LogX {
		t.Error("a tunnels line figure without a log x axis")
	}
	if got := xs(tp, "vxlan"); !slices.Equal(got, []float64{1, 10, 100}) {
		t.Errorf("throughput of vxlan at %v, want 1, 10 and 100 tunnels", got)
	}
	if got := xs(tp, "native"); !slices.Equal(got, []float64{1}) {
		t.Errorf("native at %v, want its one point at 1", got)
	}
	if got := xs(setup, "wireguard-go"); !slices.Equal(got, []float64{10, 100}) {
		t.Errorf("set-up of wireguard-go at %v, want 10 and 100 (the counts with a scale record)", got)
	}
	if !strings.Contains(mem.Caption, "Shared kernel: both sides ran on one kernel") {
		t.Errorf("memory caption does not name the shared kernel: %s", mem.Caption)
	}
	if got := strings.Join(reconf.Categories, ","); got != "vxlan,wireguard-go" || len(reconf.Series) != 1 || reconf.Series[0].Name != "100 tunnels" {
		t.Errorf("reconf bars: categories %s, series %+v; want vxlan and wireguard-go at 100 tunnels", got, reconf.Series)
	}
	// Blocked time in ms: vxlan lost 4, 5 and 6 requests at one per ms.
	if y := reconf.Series[0].Y[0]; y != 5 {
		t.Errorf("vxlan blocked %g ms, want 5", y)
	}
}

// TestTunnelsChartsNeedTwoCounts: a run at one tunnel count draws no
// line against the count; its reconf bars stay.
func TestTunnelsChartsNeedTwoCounts(t *testing.T) {
	run, cells := fixture.ScaleRun()
	cells = slices.DeleteFunc(cells, func(c result.Cell) bool { return c.Params.Tunnels != 100 })
	mine := tunnelsOnly(Charts(run, cells))
	if len(mine) != 1 || !strings.Contains(mine[0].ID, "-reconf-") {
		var ids []string
		for _, c := range mine {
			ids = append(ids, c.ID)
		}
		t.Errorf("one tunnel count: figures %q, want the reconf bars only", ids)
	}
	run, cells = fixture.LocalRun()
	if n := len(tunnelsOnly(Charts(run, cells))); n != 0 {
		t.Errorf("a run without the tunnels dimension has %d tunnels figures", n)
	}
}

// TestTunnelsTakeAways: per method, how set-up grows (the log-log slope
// with its interval) and throughput at the largest count against one
// tunnel, indistinguishable or a change with its p-value; a run whose
// repetitions ran on a busy machine gets neither.
func TestTunnelsTakeAways(t *testing.T) {
	run, cells := fixture.ScaleRun()
	ta := GenerateTakeAways(run, cells, Charts(run, cells))
	var text []string
	for _, c := range ta.Claims {
		text = append(text, c.Text)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{
		"vxlan's set-up grows linearly to 0.53 ± 0.03 s at 100 VXLAN devices (log-log slope 1.00 ± 0.02",
		"wireguard-go's set-up grows sublinearly to 0.94 ± 0.04 s at 100 peers (log-log slope 0.41 ± 0.02",
		"vxlan's throughput at 100 VXLAN devices is indistinguishable from 1 VXLAN device",
		"wireguard-go's throughput at 100 peers is 12% lower than at 1 peer (2.12 ± 0.02 against 2.41 ± 0.02 Gbit/s; Welch's t-test over 3 repetitions each: p < 0.001)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("take-aways lack %q:\n%s", want, all)
		}
	}
	for i := range cells {
		cells[i].Meta.Busy, cells[i].Meta.BackgroundBusy = true, 40
	}
	for _, c := range GenerateTakeAways(run, cells, Charts(run, cells)).Claims {
		if strings.Contains(c.Text, "set-up grows") || strings.Contains(c.Text, "throughput at 100") {
			t.Errorf("claim on busy rows: %s", c.Text)
		}
	}
}

// TestTunnelsInHTML: the report of a tunnels run has a tunnels column in
// its summary table, the tunnels table with the shared kernel named, the
// tunnels section with its four figures, and every take-away links to a
// figure that is there.
func TestTunnelsInHTML(t *testing.T) {
	run, cells := fixture.ScaleRun()
	b, err := Build([]RunRecords{{Run: run, Cells: cells}}, "report-files")
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := b.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"<th>streams</th><th>tunnels</th>", `<td data-v="100">100</td>`,
		`<h3 id="` + run.ID + `-tunnels">Tunnels</h3>`, "<b>shared</b> kernel: both sides ran on one kernel",
		`<td class="l" data-v="peer">peer</td>`,
		"<h3>Tunnels: throughput, set-up, memory and reconf against their number</h3>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, c := range tunnelsOnly(b.Runs[0].Charts) {
		if !strings.Contains(html, `<figure id="`+c.ID+`">`) {
			t.Errorf("figure %s missing from the HTML", c.ID)
		}
	}
	for _, ta := range b.Runs[0].TakeAways.Claims {
		if !strings.Contains(html, `id="`+ta.Figure+`"`) {
			t.Errorf("take-away %q links to %s, which the HTML lacks", ta.Text, ta.Figure)
		}
	}
	run, cells = fixture.LocalRun()
	b, err = Build([]RunRecords{{Run: run, Cells: cells}}, "report-files")
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := b.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<th>tunnels</th>") || strings.Contains(buf.String(), "-tunnels\">Tunnels</h3>") {
		t.Error("a run without the tunnels dimension has a tunnels column or table")
	}
}
