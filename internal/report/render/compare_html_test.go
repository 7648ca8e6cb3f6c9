package render

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// TestCompareHTMLMarksInconclusive: a throughput that two repetitions
// cannot decide is marked inconclusive in the report's comparison table,
// styled apart from "no significant change", so a reader does not take
// it for no change (compare's TestCompareInconclusive builds the same
// pair).
func TestCompareHTMLMarksInconclusive(t *testing.T) {
	rr := fixture.DB(t)[0]
	var a, b []result.Cell
	for _, c := range rr.Cells {
		if c.Method != "native" || c.Params.UnderlayMTU != 1500 || !c.Params.Offloads || c.Repetition > 2 {
			continue
		}
		a = append(a, c)
		factor := 0.8
		if c.Repetition == 1 {
			factor = 0.3
		}
		b = append(b, fixture.ScaleThroughput([]result.Cell{c}, "native", factor)[0])
	}
	runB := rr.Run
	runB.ID += "-b"
	built, err := Build([]RunRecords{{Run: rr.Run, Cells: a}, {Run: runB, Cells: b}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := built.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`<td class="l" data-v="throughput">throughput \([^)]*\)</td>.*?<td class="l ([a-z]*)" data-v="([^"]*)">`)
	m := row.FindSubmatch(html.Bytes())
	if m == nil {
		t.Fatalf("the comparison table has no throughput row:\n%s", html.String())
	}
	if string(m[1]) != "inconclusive" || string(m[2]) != "inconclusive" {
		t.Errorf("throughput row: class %q, verdict %q; want both inconclusive", m[1], m[2])
	}
	if !bytes.Contains(html.Bytes(), []byte("td.inconclusive{")) {
		t.Error("the page's style has no rule for td.inconclusive")
	}
}
