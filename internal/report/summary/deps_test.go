package summary_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSummaryReadsRecordsOnly: the summary is computed from stored records
// offline, so it depends on no code that sets up methods or testbeds or
// reaches hosts (it once imported the testbed registry for one class
// name, and with it every testbed, method and SSH package). What a
// testbed is comes from the leaf package bed/kind.
func TestSummaryReadsRecordsOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{
		"internal/scenario":       true,
		"internal/bed/kind":       true,
		"internal/result":         true,
		"internal/stats":          true,
		"internal/report/summary": true,
	}
	const module = "github.com/tunbench/tunbench/"
	for _, p := range strings.Fields(string(out)) {
		dep, ok := strings.CutPrefix(p, module)
		if ok && !allowed[dep] {
			t.Errorf("internal/report/summary depends on %s: the summary reads records only (allowed: %v)", dep, allowed)
		}
	}
}
