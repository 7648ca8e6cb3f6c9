package summary

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

// Missing stands for a figure that was not measured.
const Missing = "—"

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
	v := VaryingParams(rows)
	cols, grid := tableGrid(rows, v)
	if err := RenderGrid(&b, cols, grid); err != nil {
		return err
	}
	if l := congestionLine(rows, v); l != "" {
		WriteWrapped(&b, []string{l}, "")
	}
	if err := writeHostCPUTable(&b, rows, v); err != nil {
		return err
	}
	if err := writeTestTables(&b, rows, v); err != nil {
		return err
	}
	if err := writeScaleTables(&b, rows, v); err != nil {
		return err
	}
	if err := writeUDPCPUTable(&b, rows, v); err != nil {
		return err
	}
	writeSiteMatrices(&b, rows)
	writeReferences(&b, run, all)
	writeProblems(&b, rows, v)
	if ws := Warnings(run, rows); len(ws) > 0 {
		b.WriteString("\nwarnings:\n")
		WriteWrapped(&b, ws, "  ")
	}
	b.WriteString("\n")
	WriteWrapped(&b, Definitions(v), "")
	WriteWrapped(&b, testDefinitions(rows), "")
	WriteWrapped(&b, scaleDefinitions(rows), "")
	WriteWrapped(&b, hostCPUDefinitions(rows), "")
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
	line := fmt.Sprintf("run %s, %s, testbed %s, started %s", run.ID, status, OrDash(run.Testbed),
		run.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	if !run.Finished.IsZero() {
		line += fmt.Sprintf(", took %s", run.Finished.Sub(run.Started).Round(time.Second))
	}
	h := run.Host
	host := "host " + OrDash(h.Hostname)
	for _, s := range []string{h.ClassLabel(), h.OSRelease} { // absent from older records
		if s != "" {
			host += ", " + s
		}
	}
	host += fmt.Sprintf(", kernel %s, %s, %s (%d CPUs), %d MiB", OrDash(h.Kernel),
		OrDash(h.Arch), OrDash(h.CPUModel), h.CPUCount, h.MemoryMiB)
	lines := []string{line, host}
	if run.Error != "" {
		lines = append(lines, "run error: "+run.Error)
	}
	if h.IsEmulated() {
		lines = append(lines, "EMULATED: figures measure function, not performance.")
	}
	WriteWrapped(b, lines, "")
	b.WriteString("\n")
}

// OrDash is s, or Missing when s is empty.
func OrDash(s string) string {
	if s == "" {
		return Missing
	}
	return s
}

// tableGrid lays out the columns: method, the overlay MTU when it is a
// dimension of the matrix, then the figures. When parameters vary, rows are
// grouped under a heading per parameter set (each with its own native
// baseline).
func tableGrid(rows []Summary, v Varying) ([]GridColumn, []GridRow) {
	cols := []GridColumn{{Header: "method", Left: true}}
	if v.overlay {
		cols = append(cols, GridColumn{Header: "ovl MTU"})
	}
	cols = append(cols,
		GridColumn{Header: "Gbit/s", join: " ± "},
		GridColumn{Header: "CI95", Left: true},
		GridColumn{Header: "% native"},
		GridColumn{Header: "p50 µs"},
		GridColumn{Header: "p99 µs"},
		GridColumn{Header: "snd CPU"},
		GridColumn{Header: "rcv CPU"},
		GridColumn{Header: "Gbit/s/core"},
		GridColumn{Header: "n"},
	)
	var (
		grid []GridRow
		prev string
	)
	for i, r := range rows {
		if h := paramsHeading(r.Params, v); h != "" && (i == 0 || h != prev) {
			grid = append(grid, GridRow{section: h})
			prev = h
		}
		var mark string
		if r.BackgroundBusy {
			mark = " " + markBusy
		}
		if RowOneCore(r) {
			mark = cmp.Or(mark, " ") + markOneCore
		}
		line := []GridCell{{Text: r.Label, mark: mark}}
		if v.overlay {
			line = append(line, GridCell{Text: strconv.Itoa(r.Params.OverlayMTU)})
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
			GridCell{Text: fmt.Sprintf("%d/%d", r.OK, r.Repetitions)},
		)
		grid = append(grid, GridRow{Cells: line})
	}
	return cols, grid
}

// paramsHeading names the varying parameters of a row's parameter set, or
// returns "" when nothing varies.
func paramsHeading(p result.Params, v Varying) string {
	var ps []string
	if v.Family {
		ps = append(ps, p.Family)
	}
	if v.Underlay {
		ps = append(ps, fmt.Sprintf("underlay MTU %d", p.UnderlayMTU))
	}
	if v.Offloads {
		ps = append(ps, "offloads "+OnOff(p.Offloads))
	}
	if v.Streams {
		ps = append(ps, Streams(p.Streams))
	}
	if v.CC {
		ps = append(ps, CCName(p.CongestionControl))
	}
	if v.Tunnels {
		ps = append(ps, Tunnels(p.Tunnels))
	}
	ps = append(ps, extraParams(p)...)
	if len(ps) == 0 {
		return ""
	}
	return "-- " + strings.Join(ps, ", ")
}

// num formats a figure's mean with its markers.
func num(f Figure, decimals int, approx bool) GridCell {
	if f.N == 0 {
		return GridCell{Text: Missing}
	}
	var mark string
	if approx {
		mark += markApprox
	}
	if f.Unstable() {
		mark += markUnstable
	}
	return GridCell{Text: strconv.FormatFloat(f.Mean, 'f', decimals, 64), mark: mark}
}

// halfWidth formats the CI95 half-width, empty when undefined.
func halfWidth(f Figure, decimals int) GridCell {
	if !f.HasCI {
		return GridCell{}
	}
	return GridCell{Text: strconv.FormatFloat(f.HalfWidth, 'f', decimals, 64)}
}

func percent(p *float64) GridCell {
	if p == nil {
		return GridCell{Text: Missing}
	}
	return GridCell{Text: strconv.FormatFloat(*p, 'f', 1, 64)}
}

// writeProblems lists the repetitions that produced no figures.
func writeProblems(b *strings.Builder, rows []Summary, v Varying) {
	var lines []string
	for _, r := range rows {
		for _, p := range r.Problems {
			msg := p.Error
			if msg == "" {
				msg = "no error recorded"
			}
			lines = append(lines, fmt.Sprintf("%s rep %d %s: %s", RowName(r, v), p.Repetition, p.Status, msg))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nrepetitions without figures:\n")
	WriteWrapped(b, lines, "  ")
}

// WriteWrapped writes each paragraph wrapped to MaxWidth, prefixed by
// indent; continuation lines are indented further.
func WriteWrapped(b *strings.Builder, paragraphs []string, indent string) {
	for _, p := range paragraphs {
		for _, l := range wrap(p, MaxWidth-Runes(indent), "  ") {
			b.WriteString(indent)
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
}

// Num3 formats a figure with three significant digits, never in exponent
// form.
func Num3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
