package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// MaxWidth is the widest line Table writes for a run of realistic size:
// method labels up to 30 characters, every parameter varying, and figures
// up to 999.99 Gbit/s and 99999.9 µs. Notes are wrapped to it.
const MaxWidth = 120

// TableOptions adjust Table. The zero value prints everything.
type TableOptions struct {
	// OmitHeader leaves out the lines describing the run and host.
	OmitHeader bool
	// Methods, if not empty, keeps only rows of these methods. % native
	// is still computed against the run's native rows.
	Methods []string
}

const missing = "—"

// Table writes an aligned text table of the run: one row per cell
// (method and parameters) summarising its repetitions, followed by failed
// repetitions, warnings and the definitions of the columns.
func Table(w io.Writer, run result.Run, cells []result.Cell, opt TableOptions) error {
	var b strings.Builder
	if !opt.OmitHeader {
		writeRunHeader(&b, run)
	}
	all := Aggregate(run, cells)
	rows := all
	if len(opt.Methods) > 0 {
		rows = slices.DeleteFunc(slices.Clone(all), func(r Summary) bool {
			return !slices.Contains(opt.Methods, r.Method)
		})
	}
	if len(rows) == 0 {
		b.WriteString("no cells recorded\n")
		return write(w, b.String())
	}
	v := varyingParams(rows)
	cols, grid := tableGrid(rows, v)
	if err := renderGrid(&b, cols, grid); err != nil {
		return err
	}
	if l := congestionLine(rows, v); l != "" {
		writeWrapped(&b, []string{l}, "")
	}
	if err := writeHostCPUTable(&b, rows, v); err != nil {
		return err
	}
	if err := writeTestTables(&b, rows, v); err != nil {
		return err
	}
	if err := writeUDPCPUTable(&b, rows, v); err != nil {
		return err
	}
	writeSiteMatrices(&b, rows)
	writeReferences(&b, run, all)
	writeProblems(&b, rows, v)
	if ws := warnings(run, rows); len(ws) > 0 {
		b.WriteString("\nwarnings:\n")
		writeWrapped(&b, ws, "  ")
	}
	b.WriteString("\n")
	writeWrapped(&b, definitions(v), "")
	writeWrapped(&b, testDefinitions(rows), "")
	writeWrapped(&b, hostCPUDefinitions(rows), "")
	return write(w, b.String())
}

func write(w io.Writer, s string) error {
	if _, err := io.WriteString(w, s); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

func writeRunHeader(b *strings.Builder, run result.Run) {
	status := run.Status
	if run.Status == result.RunRunning && run.Finished.IsZero() {
		status = "running (unfinished: still running, or killed)"
	}
	line := fmt.Sprintf("run %s, %s, testbed %s, started %s", run.ID, status, orDash(run.Testbed),
		run.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	if !run.Finished.IsZero() {
		line += fmt.Sprintf(", took %s", run.Finished.Sub(run.Started).Round(time.Second))
	}
	h := run.Host
	host := "host " + orDash(h.Hostname)
	for _, s := range []string{h.ClassLabel(), h.OSRelease} { // absent from older records
		if s != "" {
			host += ", " + s
		}
	}
	host += fmt.Sprintf(", kernel %s, %s, %s (%d CPUs), %d MiB", orDash(h.Kernel),
		orDash(h.Arch), orDash(h.CPUModel), h.CPUCount, h.MemoryMiB)
	lines := []string{line, host}
	if run.Error != "" {
		lines = append(lines, "run error: "+run.Error)
	}
	if h.IsEmulated() {
		lines = append(lines, "EMULATED: figures measure function, not performance.")
	}
	writeWrapped(b, lines, "")
	b.WriteString("\n")
}

func orDash(s string) string {
	if s == "" {
		return missing
	}
	return s
}

// tableGrid lays out the columns: method, the overlay MTU when it is a
// dimension of the matrix, then the figures. When parameters vary, rows are
// grouped under a heading per parameter set (each with its own native
// baseline).
func tableGrid(rows []Summary, v varying) ([]column, []row) {
	cols := []column{{header: "method", left: true}}
	if v.overlay {
		cols = append(cols, column{header: "ovl MTU"})
	}
	cols = append(cols,
		column{header: "Gbit/s", join: " ± "},
		column{header: "CI95", left: true},
		column{header: "% native"},
		column{header: "p50 µs"},
		column{header: "p99 µs"},
		column{header: "snd CPU"},
		column{header: "rcv CPU"},
		column{header: "Gbit/s/core"},
		column{header: "n"},
	)
	var (
		grid []row
		prev string
	)
	for i, r := range rows {
		if h := paramsHeading(r.Params, v); h != "" && (i == 0 || h != prev) {
			grid = append(grid, row{section: h})
			prev = h
		}
		var mark string
		if r.BackgroundBusy {
			mark = " " + markBusy
		}
		if rowOneCore(r) {
			mark = cmp.Or(mark, " ") + markOneCore
		}
		line := []cell{{text: r.Label, mark: mark}}
		if v.overlay {
			line = append(line, cell{text: strconv.Itoa(r.Params.OverlayMTU)})
		}
		approx := r.CPUSplit == SplitApproximate || r.CPUSplit == SplitMixed
		line = append(line,
			num(r.Throughput, 2, false),
			halfWidth(r.Throughput, 2),
			percent(r.PercentNative),
			num(r.P50RTT, 1, false),
			num(r.P99RTT, 1, false),
			num(r.SenderCPU, 2, approx),
			num(r.ReceiverCPU, 2, approx),
			num(r.GbpsPerCore, 2, false),
			cell{text: fmt.Sprintf("%d/%d", r.OK, r.Repetitions)},
		)
		grid = append(grid, row{cells: line})
	}
	return cols, grid
}

// paramsHeading names the varying parameters of a row's parameter set, or
// returns "" when nothing varies.
func paramsHeading(p result.Params, v varying) string {
	var ps []string
	if v.family {
		ps = append(ps, p.Family)
	}
	if v.underlay {
		ps = append(ps, fmt.Sprintf("underlay MTU %d", p.UnderlayMTU))
	}
	if v.offloads {
		ps = append(ps, "offloads "+onOff(p.Offloads))
	}
	if v.streams {
		ps = append(ps, streams(p.Streams))
	}
	if v.cc {
		ps = append(ps, ccName(p.CongestionControl))
	}
	ps = append(ps, extraParams(p)...)
	if len(ps) == 0 {
		return ""
	}
	return "-- " + strings.Join(ps, ", ")
}

// num formats a figure's mean with its markers.
func num(f Figure, decimals int, approx bool) cell {
	if f.N == 0 {
		return cell{text: missing}
	}
	var mark string
	if approx {
		mark += markApprox
	}
	if f.Unstable() {
		mark += markUnstable
	}
	return cell{text: strconv.FormatFloat(f.Mean, 'f', decimals, 64), mark: mark}
}

// halfWidth formats the CI95 half-width, empty when undefined.
func halfWidth(f Figure, decimals int) cell {
	if !f.HasCI {
		return cell{}
	}
	return cell{text: strconv.FormatFloat(f.HalfWidth, 'f', decimals, 64)}
}

func percent(p *float64) cell {
	if p == nil {
		return cell{text: missing}
	}
	return cell{text: strconv.FormatFloat(*p, 'f', 1, 64)}
}

// writeProblems lists the repetitions that produced no figures.
func writeProblems(b *strings.Builder, rows []Summary, v varying) {
	var lines []string
	for _, r := range rows {
		for _, p := range r.Problems {
			msg := p.Error
			if msg == "" {
				msg = "no error recorded"
			}
			lines = append(lines, fmt.Sprintf("%s rep %d %s: %s", rowName(r, v), p.Repetition, p.Status, msg))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nrepetitions without figures:\n")
	writeWrapped(b, lines, "  ")
}

// writeWrapped writes each paragraph wrapped to MaxWidth, prefixed by
// indent; continuation lines are indented further.
func writeWrapped(b *strings.Builder, paragraphs []string, indent string) {
	for _, p := range paragraphs {
		for _, l := range wrap(p, MaxWidth-runes(indent), "  ") {
			b.WriteString(indent)
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
}

// num3 formats a figure with three significant digits, never in exponent
// form.
func num3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
