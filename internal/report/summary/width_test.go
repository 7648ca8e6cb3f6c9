package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// TestTableWidth checks the widest realistic table: every parameter
// Varying, a 24-character label, large figures and every marker.
func TestTableWidth(t *testing.T) {
	run, _ := fixture.LocalRun()
	var cells []result.Cell
	for _, fam := range []string{"ipv4", "ipv6"} {
		for _, mtu := range []int{1500, 65000} {
			for _, off := range []bool{true, false} {
				for _, streams := range []int{1, 16} {
					for _, m := range []struct{ name, impl string }{
						{"native", "kernel"}, {"ipsec-xfrm", "kernel"}, {"ipsec-xfrm", "strongswan-libipsec"},
					} {
						for k := 1; k <= 3; k++ {
							r := fixture.Rep{Gbps: 95 + 10*float64(k), P50: 9000 + float64(k), P99: 99000 + float64(k),
								Snd: 10.5 + float64(k), Rcv: 11, BusyPct: 60, Background: 40, Busy: true}
							p := fixture.Params(fam, mtu, mtu-73, off, streams)
							cells = append(cells, fixture.CellOf(run.ID, m.name, m.impl, p, k, r, fixture.FixtureStart))
						}
					}
				}
			}
		}
	}
	var b bytes.Buffer
	if err := Table(&b, run, cells, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "ipsec-xfrm/strongswan-libipsec") {
		t.Fatalf("table lacks the long label:\n%s", b.String())
	}
	for i, l := range strings.Split(b.String(), "\n") {
		if w := Runes(l); w > MaxWidth {
			t.Errorf("line %d is %d columns wide, limit %d:\n%s", i+1, w, MaxWidth, l)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("table:\n%s", b.String())
	}
}
