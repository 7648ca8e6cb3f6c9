package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// corpus stands in for a fuzz target: it records the seeds and a fatal
// failure.
type corpus struct {
	seeds  []string
	failed string
}

func (c *corpus) Helper()                        {}
func (c *corpus) Fatalf(format string, a ...any) { c.failed = fmt.Sprintf(format, a...) }
func (c *corpus) Add(args ...any) {
	for _, a := range args {
		c.seeds = append(c.seeds, string(a.([]byte)))
	}
}

// FuzzSeeds adds each testdata file the pattern matches, as bytes, and
// fails a target whose pattern matches none.
func TestFuzzSeeds(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"rr_1.json": `{"a":1}`, "rr_2.json": `{"b":2}`, "iperf3.json": "{}"} {
		if err := os.WriteFile(filepath.Join(dir, "testdata", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)

	var c corpus
	FuzzSeeds(&c, "rr_*.json")
	if diff := cmp.Diff([]string{`{"a":1}`, `{"b":2}`}, c.seeds); diff != "" || c.failed != "" {
		t.Errorf("seeds of rr_*.json (-want +got):\n%s\nfailure %q", diff, c.failed)
	}

	c = corpus{}
	FuzzSeeds(&c, "sockperf_*.txt")
	if want := "no seeds match testdata/sockperf_*.txt"; c.failed != want || c.seeds != nil {
		t.Errorf("a pattern matching nothing: failure %q, seeds %q; want %q and none", c.failed, c.seeds, want)
	}
}
