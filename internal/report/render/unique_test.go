package render

import (
	"fmt"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// TestFiguresUniquePerParameter: for every parameter a run may vary, a run
// whose cells come in two versions that differ in that parameter alone
// gives figures whose ids (and so their SVG and PNG files) and titles are
// all distinct. Before, MSS, direction, WAN, offload-set name and site
// pair were missing from ids and titles, and such figures overwrote each
// other (examples/mtu-sweep.yaml, multi-cloud.yaml). Their captions are
// distinct too: each names what sets its figure apart from its siblings.
func TestFiguresUniquePerParameter(t *testing.T) {
	wan := func(ms float64) *result.WANParams { return &result.WANParams{DelayMs: ms, Qdisc: "netem"} }
	for _, v := range []struct {
		name string
		set  func(p *result.Params, second bool)
	}{
		{"mss", func(p *result.Params, second bool) { p.MSS = map[bool]int{false: 536, true: 1200}[second] }},
		{"direction", func(p *result.Params, second bool) {
			p.Direction = map[bool]string{false: "forward", true: "reverse"}[second]
		}},
		{"wan", func(p *result.Params, second bool) { p.WAN = wan(map[bool]float64{false: 10, true: 40}[second]) }},
		{"offload-set", func(p *result.Params, second bool) {
			if second {
				p.OffloadSet, p.OffloadFeatures = "udp-tnl-seg-on", map[string]bool{"tx-udp_tnl-segmentation": true}
			}
		}},
		{"sites", func(p *result.Params, second bool) {
			p.SiteA, p.SiteB = "fra", "nyc"
			if second {
				p.SiteA, p.SiteB = "nyc", "fra"
			}
		}},
		{"congestion-control", func(p *result.Params, second bool) {
			p.CongestionControl = map[bool]string{false: "cubic", true: "bbr"}[second]
		}},
		{"pin", func(p *result.Params, second bool) { p.Pin = second }},
		{"tunnels", func(p *result.Params, second bool) { p.Tunnels = map[bool]int{false: 10, true: 1000}[second] }},
	} {
		t.Run(v.name, func(t *testing.T) {
			for _, base := range []struct {
				name string
				run  func() (result.Run, []result.Cell)
			}{{"local", fixture.LocalRun}, {"matrix", fixture.MatrixRun}, {"figures", figuresRun}} {
				run, cells := base.run()
				var both []result.Cell
				for _, second := range []bool{false, true} {
					for _, c := range cells {
						c.Params.Options = nil
						v.set(&c.Params, second)
						c.Key = fmt.Sprintf("%s/%s-%t", c.Key, v.name, second)
						c.ID = int64(len(both) + 1)
						both = append(both, c)
					}
				}
				charts := Charts(run, both)
				if len(charts) == 0 {
					t.Fatalf("%s: no figures", base.name)
				}
				ids, titles, captions := map[string]bool{}, map[string]string{}, map[string]string{}
				for _, c := range charts {
					if ids[c.ID] {
						t.Errorf("%s: two figures with id %s", base.name, c.ID)
					}
					ids[c.ID] = true
					if other, ok := titles[c.Title]; ok {
						t.Errorf("%s: figures %s and %s share the title %q", base.name, other, c.ID, c.Title)
					}
					titles[c.Title] = c.ID
					if other, ok := captions[c.Caption]; ok {
						t.Errorf("%s: figures %s and %s share the caption %q", base.name, other, c.ID, c.Caption)
					}
					captions[c.Caption] = c.ID
				}
			}
		})
	}
}
