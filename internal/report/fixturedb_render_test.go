package report

import "testing"

// fixtureDB is the fixture database's runs as the report takes them.
func fixtureDB(t testing.TB) []RunRecords {
	var out []RunRecords
	for _, r := range loadFixtureDB(t) {
		out = append(out, RunRecords{Run: r.Run, Cells: r.Cells})
	}
	return out
}
