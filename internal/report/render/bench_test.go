package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// bigRun makes a run of 1,000 cells from the fixture's real cells: 5
// methods x 2 families x 2 MTUs x 2 offload states x 5 stream counts = 200
// rows of 5 repetitions, each a copy of a real cell with its parameters
// changed, so every figure kind of tcp_stream and tcp_rr records is
// drawn: per row, per parameter set (RTT, CPU, and the seeds' methods side
// by side and sender/receiver CPU bars), against streams, MTU and
// offloads.
func bigRun(b *testing.B) (result.Run, []result.Cell) {
	rr := fixtureDB(b)[0]
	templates := map[string][]result.Cell{}
	for _, c := range rr.Cells {
		if c.Status == result.StatusOK {
			templates[c.Method] = append(templates[c.Method], c)
		}
	}
	run := rr.Run
	run.ID = "big1000"
	methods := []struct{ name, from string }{
		{"native", "native"}, {"vxlan", "vxlan"}, {"srv6", "srv6"}, {"geneve", "vxlan"}, {"gre", "srv6"},
	}
	var cells []result.Cell
	for _, fam := range []string{"ipv4", "ipv6"} {
		for _, mtu := range []int{1500, 9000} {
			for _, off := range []bool{true, false} {
				for _, streams := range []int{1, 2, 4, 8, 16} {
					for _, m := range methods {
						for rep := 1; rep <= 5; rep++ {
							tpl := templates[m.from]
							c := tpl[(len(cells)+rep)%len(tpl)]
							c.RunID, c.Method, c.Repetition = run.ID, m.name, rep
							c.Params.Family, c.Params.UnderlayMTU, c.Params.Offloads, c.Params.Streams = fam, mtu, off, streams
							c.Key = fmt.Sprintf("%s/%s/mtu%d/offloads-%s/p%d", m.name, fam, mtu, summary.OnOff(off), streams)
							cells = append(cells, c)
						}
					}
				}
			}
		}
	}
	return run, cells
}

// BenchmarkReport1000Cells measures the HTML report of a run of 1,000
// stored cells: load it from SQLite, aggregate, draw every figure as SVG,
// generate the take-aways, and write the HTML. With files=true it also
// writes every figure as SVG and PNG, which is all "tunbench report" does.
// It reports the CPU time per report (cpu-s/op, user + system, which
// other jobs on the machine hardly move), the HTML size and the number of
// figures. See docs/performance.md.
func BenchmarkReport1000Cells(b *testing.B) {
	b.Run("html", func(b *testing.B) { benchReport(b, false) })
	b.Run("html+files", func(b *testing.B) { benchReport(b, true) })
}

func benchReport(b *testing.B, files bool) {
	run, cells := bigRun(b)
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "big.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.BeginRun(ctx, &run); err != nil {
		b.Fatal(err)
	}
	for i := range cells {
		if _, err := st.AddCell(ctx, &cells[i]); err != nil {
			b.Fatal(err)
		}
	}
	var size, figs, n int
	cpu0 := cpuSeconds(b)
	b.ResetTimer()
	for b.Loop() {
		n++
		r, cs, err := st.Run(ctx, run.ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(cs) != 1000 {
			b.Fatalf("%d cells stored, want 1000", len(cs))
		}
		built, err := Build([]RunRecords{{Run: r, Cells: cs}}, "report-files")
		if err != nil {
			b.Fatal(err)
		}
		var html bytes.Buffer
		if err := built.WriteHTML(&html); err != nil {
			b.Fatal(err)
		}
		// A new directory each time, as for a first report: removing the
		// previous one would be timed too.
		out := filepath.Join(dir, fmt.Sprintf("out%d", n))
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		if files {
			if err := built.WriteFiles(filepath.Join(out, "report-files")); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(out, "report.html"), html.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		size, figs = html.Len(), len(built.Runs[0].Figures)
	}
	// CPU seconds of this process per report: unlike wall time, it hardly
	// moves when other work shares the machine.
	b.ReportMetric((cpuSeconds(b)-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(size), "html-bytes")
	b.ReportMetric(float64(figs), "figures")
}

// cpuSeconds is the user and system CPU time of this process so far.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
