package render

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
)

// TestCompareHTMLMarksInconclusive: a throughput that two repetitions
// cannot decide is marked inconclusive in the report's comparison table,
// styled apart from "no significant change", so a reader does not take
// it for no change (the pair compare's TestCompareInconclusive builds).
func TestCompareHTMLMarksInconclusive(t *testing.T) {
	rr := fixture.DB(t)[0]
	a, b := fixture.InconclusivePair(rr.Cells)
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
