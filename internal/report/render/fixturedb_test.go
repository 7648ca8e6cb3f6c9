package render

import (
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
)

// fixtureDB is the fixture database's runs as the report takes them.
func fixtureDB(t testing.TB) []RunRecords {
	var out []RunRecords
	for _, r := range fixture.DB(t) {
		out = append(out, RunRecords{Run: r.Run, Cells: r.Cells})
	}
	return out
}
