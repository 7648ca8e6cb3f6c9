package testbed_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
)

// BenchmarkJournal10000 writes 10,000 journal entries into a site
// directory under testbed.DefaultRoot (where runs keep theirs) and drops
// them again, as a set-up that journalled each of 10,000 tunnels would
// and its teardown after: what tunbench's own journal would cost at the
// tunnels dimension's N = 10,000 (docs/performance.md). Each entry is an
// UndoRoute, the size of a per-tunnel entry.
func BenchmarkJournal10000(b *testing.B) {
	const n = 10000
	if err := os.MkdirAll(testbed.DefaultRoot, 0o755); err != nil {
		b.Skip(err)
	}
	var write, drop time.Duration
	for b.Loop() {
		dir, err := os.MkdirTemp(testbed.DefaultRoot, "tbbench-journal-")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for i := range n {
			u := testbed.Undo{Kind: testbed.UndoRoute, Addrs: []string{fmt.Sprintf("198.19.%d.%d/32", 128+i/256, i%256)}, Table: 254}
			if err := testbed.WriteUndo(dir, fmt.Sprintf("route-%d", i), u); err != nil {
				b.Fatal(err)
			}
		}
		write += time.Since(start)
		start = time.Now()
		for i := range n {
			if err := testbed.DropUndo(dir, fmt.Sprintf("route-%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		drop += time.Since(start)
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(write.Microseconds())/float64(b.N)/n, "µs/write")
	b.ReportMetric(float64(drop.Microseconds())/float64(b.N)/n, "µs/drop")
}
