package render

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// TestSiteMatrix: cells between three sites give one matrix per method,
// row sending to column, with native as each pair's own baseline.
func TestSiteMatrix(t *testing.T) {
	run := result.Run{ID: "abc123", Testbed: "ssh"}
	var cells []result.Cell
	add := func(m, a, b string, gbps float64) {
		p := result.Params{Family: "ipv4", UnderlayMTU: 1500, OverlayMTU: 1500, Offloads: true, Streams: 1, Duration: 1, SiteA: a, SiteB: b}
		cells = append(cells, result.Cell{Method: m, Key: m + "/" + a + ">" + b, Params: p, Repetition: 1, Status: result.StatusOK,
			Throughput: &result.Throughput{BitsPerSecond: gbps * 1e9}})
	}
	add("native", "fra", "nyc", 10)
	add("native", "nyc", "fra", 8)
	add("native", "fra", "sgp", 4)
	add("vxlan", "fra", "nyc", 5)
	add("vxlan", "nyc", "fra", 6)
	rows := summary.Aggregate(run, cells)
	ms := summary.SiteMatrices(rows)
	if len(ms) != 2 {
		t.Fatalf("%d matrices, want one per method: %+v", len(ms), ms)
	}
	n := ms[0]
	if n.Label != "native" || strings.Join(n.Sites, ",") != "fra,nyc,sgp" {
		t.Fatalf("native matrix: %+v", n)
	}
	if v := n.Gbps[0][1]; v == nil || *v != 10 {
		t.Errorf("fra → nyc: %v, want 10", v)
	}
	if v := n.Gbps[1][0]; v == nil || *v != 8 {
		t.Errorf("nyc → fra: %v, want 8", v)
	}
	if n.Gbps[2][0] != nil {
		t.Errorf("sgp → fra was not measured, got %v", *n.Gbps[2][0])
	}
	for _, r := range rows {
		if r.Method == "vxlan" && r.Params.SiteA == "nyc" {
			if r.PercentNative == nil || *r.PercentNative != 75 {
				t.Errorf("vxlan nyc → fra %% of native: %v, want 75 (native between the same hosts)", r.PercentNative)
			}
		}
	}
	var b strings.Builder
	if err := summary.Table(&b, run, cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "site × site, Gbit/s") || !strings.Contains(b.String(), "fra → nyc") {
		t.Errorf("table lacks the site matrix or the pair headings:\n%s", b.String())
	}
	built, err := Build([]RunRecords{{Run: run, Cells: cells}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	if err := built.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "Site × site") || !strings.Contains(h.String(), "<th class=\"l\">nyc</th>") {
		t.Errorf("HTML report lacks the site matrix")
	}
}
