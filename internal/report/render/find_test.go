package render

import (
	"testing"

	"github.com/tunbench/tunbench/internal/report/summary"
)

// find returns the row of method at underlay MTU mtu.
func find(t *testing.T, rows []summary.Summary, method string, mtu int) summary.Summary {
	t.Helper()
	for _, r := range rows {
		if r.Method == method && r.Params.UnderlayMTU == mtu {
			return r
		}
	}
	t.Fatalf("no row for %s at MTU %d", method, mtu)
	return summary.Summary{}
}
