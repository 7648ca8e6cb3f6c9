// Package render is the HTML report: figures drawn with gonum/plot (inline
// SVG, and SVG and PNG files), the take-away sentences, the host,
// environment, reference and comparison tables. Only the CLI imports it
// (TestOnlyCLIImportsRender).
package render

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tunbench/tunbench/internal/report/compare"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// RunRecords are one stored run and its cells.
type RunRecords struct {
	Run   result.Run
	Cells []result.Cell
}

// Built is a report ready to write: every figure drawn, every sentence
// generated. Build it once, then write the HTML and the figure files.
type Built struct {
	// FilesDir is the directory name, relative to the HTML file, that the
	// HTML links the SVG and PNG files to.
	FilesDir string
	Runs     []BuiltRun
	// Comparisons are every run after the first against the first.
	Comparisons []compare.Comparison
	Env         Environment
}

// BuiltRun is one run's part of the report.
type BuiltRun struct {
	Run       result.Run
	Rows      []summary.Summary
	Warnings  []string
	Charts    []Chart
	Figures   []Rendered
	TakeAways TakeAways
	Devices   []DeviceState
	// DevicesCompared is true for every run after the first: its devices
	// are checked against the first run's.
	DevicesCompared bool
	// References are the scenario's published figures beside ours.
	References summary.References
}

// ReportFilesDir returns the figure directory that goes with an HTML path:
// report.html -> report-files.
func ReportFilesDir(htmlPath string) string {
	base := strings.TrimSuffix(htmlPath, filepath.Ext(htmlPath))
	return base + "-files"
}

// Build computes and draws everything the report shows. filesDir is the
// name the HTML links figure files by (see ReportFilesDir).
func Build(runs []RunRecords, filesDir string) (*Built, error) {
	b := &Built{FilesDir: filesDir}
	for _, rr := range runs {
		rows := summary.Aggregate(rr.Run, rr.Cells)
		charts := Charts(rr.Run, rr.Cells)
		figs, err := renderAll(charts)
		if err != nil {
			return nil, err
		}
		b.Runs = append(b.Runs, BuiltRun{
			Run: rr.Run, Rows: rows, Warnings: summary.Warnings(rr.Run, rows), Charts: charts, Figures: figs,
			TakeAways: GenerateTakeAways(rr.Run, rr.Cells, charts),
			Devices:   deviceStates(rr.Cells, summary.VaryingParams(rows)),
		})
		b.Runs[len(b.Runs)-1].References = summary.BuildReferences(rr.Run, rows, renderedIDs(figs))
	}
	for i := 1; i < len(runs); i++ {
		b.Comparisons = append(b.Comparisons, compare.Compare(runs[0].Run, runs[0].Cells, runs[i].Run, runs[i].Cells, compare.CompareOptions{}))
		markDeviceDifferences(b.Runs[0].Devices, b.Runs[i].Devices)
		b.Runs[i].DevicesCompared = true
	}
	var rs []result.Run
	for _, r := range runs {
		rs = append(rs, r.Run)
	}
	b.Env = environment(rs)
	return b, nil
}

// renderAll draws the charts on all CPUs, keeping their order.
func renderAll(charts []Chart) ([]Rendered, error) {
	out := make([][]Rendered, len(charts))
	err := parallel(len(charts), func(i int) error {
		var err error
		out[i], err = Render(charts[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	var all []Rendered
	for _, rs := range out {
		all = append(all, rs...)
	}
	return all, nil
}

// parallel runs f(0) ... f(n-1) on all CPUs and returns the first error
// by index.
func parallel(n int, f func(int) error) error {
	errs := make([]error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range work {
				errs[i] = f(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes every figure as SVG and PNG into dir, creating it.
func (b *Built) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write figures: %w", err)
	}
	var figs []Rendered
	for _, r := range b.Runs {
		figs = append(figs, r.Figures...)
	}
	return parallel(len(figs), func(i int) error {
		f := figs[i]
		png, err := f.PNG()
		if err != nil {
			return fmt.Errorf("write figures: %w", err)
		}
		for ext, data := range map[string][]byte{".svg": f.SVG, ".png": png} {
			if err := os.WriteFile(filepath.Join(dir, f.FileStem()+ext), data, 0o644); err != nil {
				return fmt.Errorf("write figures: %w", err)
			}
		}
		return nil
	})
}

// DevicesDiffer reports whether any device differs from the first run's.
func (r BuiltRun) DevicesDiffer() bool {
	for _, d := range r.Devices {
		if d.Differs {
			return true
		}
	}
	return false
}

// Environment is what the runs ran on, attribute by attribute, one value
// per run.
type Environment struct {
	RunIDs []string
	Rows   []EnvRow
}

// EnvRow is one attribute; Differs is true when the runs disagree on it.
type EnvRow struct {
	Name    string
	Values  []string
	Differs bool
}

func environment(runs []result.Run) Environment {
	e := Environment{}
	// add appends an attribute; differences in "started" and "status" are
	// expected and not highlighted.
	add := func(name string, f func(result.Run) string) {
		r := EnvRow{Name: name}
		for _, run := range runs {
			v := f(run)
			if v == "" {
				v = summary.Missing
			}
			r.Values = append(r.Values, v)
		}
		for _, v := range r.Values {
			r.Differs = r.Differs || v != r.Values[0]
		}
		r.Differs = r.Differs && name != "started" && name != "status"
		e.Rows = append(e.Rows, r)
	}
	for _, r := range runs {
		e.RunIDs = append(e.RunIDs, r.ID)
	}
	add("started", func(r result.Run) string { return r.Started.UTC().Format("2006-01-02 15:04:05 UTC") })
	add("status", func(r result.Run) string { return r.Status })
	add("testbed", func(r result.Run) string { return r.Testbed })
	add("emulated", func(r result.Run) string { return strconv.FormatBool(r.Host.IsEmulated()) })
	add("host class", func(r result.Run) string { return r.Host.ClassLabel() })
	add("hostname", func(r result.Run) string { return r.Host.Hostname })
	add("OS", func(r result.Run) string { return r.Host.OSRelease })
	add("kernel", func(r result.Run) string { return r.Host.Kernel })
	add("arch", func(r result.Run) string { return r.Host.Arch })
	add("CPU", func(r result.Run) string { return r.Host.CPUModel })
	add("CPUs", func(r result.Run) string { return strconv.Itoa(r.Host.CPUCount) })
	add("memory (MiB)", func(r result.Run) string { return strconv.Itoa(r.Host.MemoryMiB) })
	add("tunbench", func(r result.Run) string { return r.Host.Tunbench })
	add("Go", func(r result.Run) string { return r.Host.GoVersion })
	labels := map[string]bool{}
	for _, r := range runs {
		for k := range r.Labels {
			labels[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		add("label "+k, func(r result.Run) string { return r.Labels[k] })
	}
	tools, sysctls := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		for k := range r.Host.Tools {
			tools[k] = true
		}
		for k := range r.Host.Sysctls {
			sysctls[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tools)) {
		add("tool "+k, func(r result.Run) string { return r.Host.Tools[k] })
	}
	for _, k := range slices.Sorted(maps.Keys(sysctls)) {
		add("sysctl "+k, func(r result.Run) string { return r.Host.Sysctls[k] })
	}
	return e
}

// DeviceState is one device on a measured path as recorded with a cell,
// with the offloads that matter for tunnels.
type DeviceState struct {
	Cell     string // the row it belongs to
	key      string // the row's key
	Side     string
	Name     string
	Kind     string
	MTU      int
	Offloads string
	// Differs is true when the first run of the report has the same device
	// (row, side and kind) with another MTU or offload state.
	Differs bool
}

// markDeviceDifferences marks the devices of a later run whose MTU or
// offload state differs from the same device in the first run.
func markDeviceDifferences(first, later []DeviceState) {
	type id struct{ key, side, kind string }
	base := map[id]DeviceState{}
	for _, d := range first {
		base[id{d.key, d.Side, d.Kind}] = d
	}
	for i, d := range later {
		if b, ok := base[id{d.key, d.Side, d.Kind}]; ok && (b.MTU != d.MTU || b.Offloads != d.Offloads) {
			later[i].Differs = true
		}
	}
}

// keyOffloads are the ethtool features shown in the environment section;
// every feature is in the JSON export.
var keyOffloads = []struct{ feature, short string }{
	{"tcp-segmentation-offload", "tso"},
	{"generic-segmentation-offload", "gso"},
	{"generic-receive-offload", "gro"},
	{"tx-checksumming", "tx-csum"},
	{"rx-checksumming", "rx-csum"},
	{"tx-udp_tnl-segmentation", "udp-tnl-seg"},
}

// deviceStates lists each row's devices once (as recorded with its first
// repetition).
func deviceStates(cells []result.Cell, v summary.Varying) []DeviceState {
	var out []DeviceState
	seen := map[string]bool{}
	for _, c := range cells {
		k := summary.CellKey(c)
		if seen[k] {
			continue
		}
		seen[k] = true
		name := summary.RowName(summary.Summary{Label: c.Method, Params: c.Params}, v)
		for _, d := range c.Meta.Devices {
			var on []string
			for _, o := range keyOffloads {
				if st, ok := d.Offloads[o.feature]; ok {
					on = append(on, o.short+" "+summary.OnOff(st))
				}
			}
			out = append(out, DeviceState{Cell: name, key: k, Side: d.Side, Name: d.Name, Kind: d.Kind, MTU: d.MTU,
				Offloads: strings.Join(on, ", ")})
		}
	}
	return out
}

// WriteHTML writes the self-contained HTML report: inline CSS and script,
// figures inline as data: URIs, no reference to anything outside the file
// except links to the figure files for download.
func (b *Built) WriteHTML(w io.Writer) error {
	if err := pageTemplate.Execute(w, b); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"siteMatrices": summary.SiteMatrices,
	"gbpsOrDash": func(v *float64) string {
		if v == nil {
			return summary.Missing
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	},
	"inlineSVG": inlineSVG,
	"figs": func(r BuiltRun, section string) []figView {
		var out []figView
		for i, f := range r.Figures {
			if f.Section != section || f.Variant != "" {
				continue
			}
			v := figView{Main: f}
			if i+1 < len(r.Figures) && r.Figures[i+1].ID == f.ID && r.Figures[i+1].Variant != "" {
				alt := r.Figures[i+1]
				v.Alt = &alt
			}
			out = append(out, v)
		}
		return out
	},
	"sections":   func() any { return Sections },
	"hasTunnels": hasTunnels,
	"tunnelN":    tunnelN,
	"hasCeiling": func(r BuiltRun) bool {
		return slices.ContainsFunc(r.Rows, func(s summary.Summary) bool { return s.Tests != nil && s.Tests.PercentOfCeiling.N > 0 })
	},
	"hasCost": func(r BuiltRun) bool {
		return slices.ContainsFunc(r.Rows, func(s summary.Summary) bool {
			return s.Tests != nil && (s.Tests.SenderNsPerPacket.N > 0 || s.Tests.ReceiverNsPerPacket.N > 0)
		})
	},
	"testFig": func(s summary.Summary, name string) summary.Figure {
		if s.Tests == nil {
			return summary.Figure{}
		}
		switch name {
		case "ceiling":
			return s.Tests.PercentOfCeiling
		case "snd-ns":
			return s.Tests.SenderNsPerPacket
		case "rcv-ns":
			return s.Tests.ReceiverNsPerPacket
		}
		return summary.Figure{}
	},
	"summaryAnchor": SummaryAnchor,
	"rowOneCore":    summary.RowOneCore,
	"reference":     referenceHTML,
	"cellNum":       cellNum,
	"pctNative": func(p *float64) template.HTML {
		if p == nil {
			return template.HTML(`<td data-v="">` + summary.Missing + `</td>`)
		}
		return template.HTML(fmt.Sprintf(`<td data-v="%g">%.1f</td>`, *p, *p))
	},
	"approx": func(r summary.Summary) bool {
		return r.CPUSplit == summary.SplitApproximate || r.CPUSplit == summary.SplitMixed
	},
	"onoff": summary.OnOff,
	"scaleName": func(r Rendered) string {
		if r.Variant == "linx" {
			return "linear x"
		}
		return "log x"
	},
	"inc":  func(i int) int { return i + 1 },
	"defs": func(r BuiltRun) []string { return summary.Definitions(summary.VaryingParams(r.Rows)) },
	"num3": summary.Num3,
	"p3": func(p float64) string {
		if p < 0 {
			return summary.Missing
		}
		return strconv.FormatFloat(p, 'f', 3, 64)
	},
	"mul100": func(v float64) float64 { return 100 * v },
	"d1":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"verdictClass": func(r compare.CompareRow) string {
		switch {
		case r.Regression:
			return "regression"
		case r.Verdict == compare.VerdictWorse:
			return "worse"
		case r.Verdict == compare.VerdictBetter:
			return "better"
		case r.Verdict == compare.VerdictInconclusive:
			return "inconclusive"
		}
		return ""
	},
}).Parse(pageHTML))

type figView struct {
	Main Rendered
	Alt  *Rendered
}

// inlineSVG returns an SVG document for inclusion in HTML: without its
// XML declaration and comments. gonum/plot's SVG has no ids (nothing can
// clash between figures) and escapes its text.
func inlineSVG(b []byte) template.HTML {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s)
}

// cellNum renders one numeric table cell with its sort value and markers.
func cellNum(f summary.Figure, decimals int, approx bool) template.HTML {
	if f.N == 0 {
		return template.HTML(`<td data-v="">` + summary.Missing + `</td>`)
	}
	text := strconv.FormatFloat(f.Mean, 'f', decimals, 64)
	if f.HasCI && f.Unit == summary.UnitGbps {
		text += " ± " + strconv.FormatFloat(f.HalfWidth, 'f', decimals, 64)
	}
	var marks string
	if approx {
		marks += `<span class="mark" title="approximate CPU split">~</span>`
	}
	if f.Unstable() {
		marks += `<span class="mark bad" title="unstable: CV above 10%">!</span>`
	}
	return template.HTML(fmt.Sprintf(`<td data-v="%g">%s%s</td>`, f.Mean, template.HTMLEscapeString(text), marks))
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tunbench report{{range .Runs}} {{.Run.ID}}{{end}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1440px;padding:0 1.5em 3em;color:#1a1a1a;line-height:1.45}
h1{margin-top:1em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.5em}
nav ul{columns:2;padding-left:1.2em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
.tw{overflow-x:auto;max-width:100%}
th,td{border-bottom:1px solid #e3e3e3;padding:.25em .6em;text-align:right;white-space:nowrap}
th{background:#f4f4f4;position:sticky;top:0}
td.l,th.l{text-align:left}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" ▲"}
table.sortable th[aria-sort=descending]::after{content:" ▼"}
.mark{color:#555;font-weight:bold;margin-left:.15em}.bad{color:#b00020}
.warn{background:#fff6e0;border-left:4px solid #e69f00;padding:.5em 1em;margin:.5em 0}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1.2em}
figure{margin:0;border:1px solid #e3e3e3;border-radius:4px;padding:.6em;background:#fff}
figure .fig svg{width:100%;height:auto;display:block}
figure .fig[hidden]{display:none}
figcaption{font-size:.85em;color:#333;margin-top:.3em}
figcaption a{color:#0072b2}
.toggle{font-size:.85em}
tr.diff td{background:#fff0f0;font-weight:bold}
td.regression,td.worse{color:#b00020;font-weight:bold}td.better{color:#007a4d;font-weight:bold}td.inconclusive{color:#8a5a00;font-style:italic}
ol.takeaways li{margin:.3em 0}
table.reference{font-size:.85em}table.reference td.l{white-space:normal;max-width:28em}table.reference th{white-space:normal}figure table.reference td{white-space:normal;overflow-wrap:anywhere}figure table.reference td.l{max-width:14em}tr.disagree td{background:#fff6e0}
.muted{color:#666;font-size:.9em}
</style>
</head>
<body>
<h1>tunbench report</h1>
<p class="muted">Generated from the results database alone; figures are drawn from the stored records.
Runs: {{range $i, $r := .Runs}}{{if $i}}, {{end}}<a href="#{{$r.Run.ID}}">{{$r.Run.ID}}</a>{{end}}.</p>
<nav><ul>
{{range .Runs}}<li><a href="#{{.Run.ID}}">run {{.Run.ID}}</a>: <a href="#{{.Run.ID}}-takeaways">take-aways</a>, <a href="#{{summaryAnchor .Run.ID}}">summary</a></li>
{{end}}{{if .Comparisons}}<li><a href="#compare">comparison</a></li>{{end}}
<li><a href="#environment">environment</a></li>
</ul></nav>
{{range $run := .Runs}}
<section id="{{.Run.ID}}">
<h2>Run {{.Run.ID}}</h2>
<p>{{.Run.Status}}, testbed {{.Run.Testbed}}, started {{.Run.Started.UTC.Format "2006-01-02 15:04:05 UTC"}}; kernel {{.Run.Host.Kernel}}, {{.Run.Host.CPUModel}} ({{.Run.Host.CPUCount}} CPUs).</p>
{{if .Run.Host.IsEmulated}}<p class="warn"><strong>Emulated:</strong> figures measure function, not performance.</p>{{end}}
{{range .Warnings}}<p class="warn">{{.}}</p>
{{end}}
<h3 id="{{.Run.ID}}-takeaways">Take-aways</h3>
{{if .TakeAways.Claims}}<ol class="takeaways">
{{range .TakeAways.Claims}}<li>{{.Text}} <a href="#{{.Figure}}">[figure]</a></li>
{{end}}</ol>{{else}}<p>No take-away: no two rows are quiet and comparable, each with two or more ok repetitions.</p>{{end}}
{{if .TakeAways.Withheld}}<details><summary>Rows no take-away rests on ({{len .TakeAways.Withheld}})</summary><ul>
{{range .TakeAways.Withheld}}<li>{{.}}</li>
{{end}}</ul></details>{{end}}
<h3 id="{{summaryAnchor .Run.ID}}">Summary</h3>
<p class="muted">Click a column heading to sort. Marks: <b>!</b> unstable (CV above 10%), <b>~</b> approximate CPU split, <b>*</b> busy background, <b>^</b> one core at 95% or more while the others had room.</p>
<div class="tw"><table class="sortable">
<thead><tr><th class="l">method</th><th class="l">family</th><th>underlay MTU</th><th>overlay MTU</th><th class="l">offloads</th><th>streams</th>{{if hasTunnels $run}}<th>tunnels</th>{{end}}<th>Gbit/s ± CI95</th><th>% native</th><th>p50 µs</th><th>p99 µs</th><th>snd CPU</th><th>rcv CPU</th><th>softirq</th><th>Gbit/s/core</th>{{if hasCeiling $run}}<th>% ceiling</th>{{end}}{{if hasCost $run}}<th>snd ns/pkt</th><th>rcv ns/pkt</th>{{end}}<th>n</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td class="l" data-v="{{.Label}}">{{.Label}}{{if .BackgroundBusy}}<span class="mark bad" title="busy background">*</span>{{end}}{{if rowOneCore .}}<span class="mark bad" title="one core at 95% or more while the others had room: see Host CPU">^</span>{{end}}</td><td class="l" data-v="{{.Params.Family}}">{{.Params.Family}}</td><td data-v="{{.Params.UnderlayMTU}}">{{.Params.UnderlayMTU}}</td><td data-v="{{.Params.OverlayMTU}}">{{.Params.OverlayMTU}}</td><td class="l" data-v="{{onoff .Params.Offloads}}">{{onoff .Params.Offloads}}</td><td data-v="{{.Params.Streams}}">{{.Params.Streams}}</td>{{if hasTunnels $run}}<td data-v="{{tunnelN .Params}}">{{tunnelN .Params}}</td>{{end}}{{cellNum .Throughput 2 false}}{{pctNative .PercentNative}}{{cellNum .P50RTT 1 false}}{{cellNum .P99RTT 1 false}}{{cellNum .SenderCPU 2 (approx .)}}{{cellNum .ReceiverCPU 2 (approx .)}}{{cellNum .SoftirqCores 2 false}}{{cellNum .GbpsPerCore 2 false}}{{if hasCeiling $run}}{{cellNum (testFig . "ceiling") 1 false}}{{end}}{{if hasCost $run}}{{cellNum (testFig . "snd-ns") 0 false}}{{cellNum (testFig . "rcv-ns") 0 false}}{{end}}<td data-v="{{.OK}}">{{.OK}}/{{.Repetitions}}</td></tr>
{{end}}</tbody></table></div>
<details><summary>Definitions</summary><ul>{{range defs $run}}<li>{{.}}</li>{{end}}
<li>softirq: machine-wide softirq time per wall second, in cores.</li>{{if hasCeiling $run}}
<li>% ceiling: throughput over the goodput the headers allow at this MTU on the known line rate (docs/methods.md); only when the line rate is known, never on veth.</li>{{end}}{{if hasCost $run}}
<li>ns/pkt: CPU nanoseconds of the sender's/receiver's processes per packet the underlay device counted over the same interval (GSO/GRO packets count once).</li>{{end}}</ul></details>
{{template "hostcpu" $run}}
{{template "tunnels" $run}}
{{reference $run ""}}{{range sections}}{{$figs := figs $run .ID}}{{if $figs}}
<h3>{{.Heading}}</h3>
<div class="figs">
{{range $figs}}<figure id="{{.Main.ID}}">
<div class="fig main" role="img" aria-label="{{.Main.Title}}">{{inlineSVG .Main.SVG}}</div>
{{with .Alt}}<div class="fig alt" role="img" aria-label="{{.Title}} ({{scaleName .}})" hidden>{{inlineSVG .SVG}}</div>{{end}}
<figcaption>{{.Main.Caption}} {{with .Alt}}<label class="toggle"><input type="checkbox" class="altscale"> {{scaleName .}}</label> {{end}}Files: <a href="{{$.FilesDir}}/{{.Main.FileStem}}.svg">SVG</a>, <a href="{{$.FilesDir}}/{{.Main.FileStem}}.png">PNG</a>{{with .Alt}}; {{scaleName .}}: <a href="{{$.FilesDir}}/{{.FileStem}}.svg">SVG</a>, <a href="{{$.FilesDir}}/{{.FileStem}}.png">PNG</a>{{end}}.</figcaption>
{{reference $run .Main.ID}}</figure>
{{end}}</div>
{{end}}{{end}}
{{with siteMatrices .Rows}}<h3 id="{{$run.Run.ID}}-sites">Site × site</h3>
<p class="muted">Throughput in Gbit/s (mean over repetitions) between every measured ordered pair of hosts: the row's site sends to the column's.</p>
{{range .}}<h4>{{.Label}} <span class="muted">({{.Params}})</span></h4>
<div class="tw"><table><thead><tr><th class="l">sender \ receiver</th>{{range .Sites}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{$m := .}}{{range $i, $a := .Sites}}<tr><th class="l">{{$a}}</th>{{range $j, $b := $m.Sites}}<td>{{if eq $i $j}}·{{else}}{{gbpsOrDash (index (index $m.Gbps $i) $j)}}{{end}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{end}}{{end}}
<h3>Devices</h3>
<details{{if $run.DevicesDiffer}} open{{end}}><summary>{{len .Devices}} devices on the measured paths</summary>
<p class="muted">MTU and offload state of every device on the measured path, as recorded with each row's first repetition (every feature is in the JSON export){{if $run.DevicesCompared}}; devices whose state differs from the first run's are highlighted{{end}}.</p>
<div class="tw"><table class="sortable"><thead><tr><th class="l">row</th><th class="l">side</th><th class="l">device</th><th class="l">kind</th><th>MTU</th><th class="l">offloads</th></tr></thead><tbody>
{{range .Devices}}<tr{{if .Differs}} class="diff" title="differs from the first run"{{end}}><td class="l" data-v="{{.Cell}}">{{.Cell}}</td><td class="l" data-v="{{.Side}}">{{.Side}}</td><td class="l" data-v="{{.Name}}">{{.Name}}</td><td class="l" data-v="{{.Kind}}">{{.Kind}}</td><td data-v="{{.MTU}}">{{.MTU}}</td><td class="l" data-v="{{.Offloads}}">{{.Offloads}}</td></tr>
{{end}}</tbody></table></div>
</details>
</section>
{{end}}
{{if .Comparisons}}<section id="compare"><h2>Comparison</h2>
{{range .Comparisons}}<h3>Run {{.RunB}} against run {{.RunA}}</h3>
<p>Welch t-test at {{d1 (mul100 .Confidence)}}% confidence; a cell regresses when it is significantly worse by more than {{.ThresholdPercent}}%. <strong>Verdict: {{.Verdict}}.</strong></p>
<div class="tw"><table class="sortable"><thead><tr><th class="l">cell</th><th class="l">figure</th><th>A</th><th>B</th><th>Δ %</th><th>p</th><th class="l">verdict</th><th class="l">note</th></tr></thead><tbody>
{{range .Rows}}<tr><td class="l" data-v="{{.Name}}">{{.Name}}</td><td class="l" data-v="{{.Metric}}">{{.Metric}} ({{.Unit}})</td><td data-v="{{.MeanA}}">{{num3 .MeanA}}</td><td data-v="{{.MeanB}}">{{num3 .MeanB}}</td><td data-v="{{.DeltaPercent}}">{{d1 .DeltaPercent}}</td><td data-v="{{.PValue}}">{{p3 .PValue}}</td><td class="l {{verdictClass .}}" data-v="{{.Verdict}}">{{.Verdict}}{{if .Regression}} (regression){{end}}</td><td class="l" data-v="{{.Note}}">{{.Note}}</td></tr>
{{end}}</tbody></table></div>
{{if .OnlyA}}<p>Only in run {{.RunA}}: {{range $i, $n := .OnlyA}}{{if $i}}; {{end}}{{$n}}{{end}}.</p>{{end}}
{{if .OnlyB}}<p>Only in run {{.RunB}}: {{range $i, $n := .OnlyB}}{{if $i}}; {{end}}{{$n}}{{end}}.</p>{{end}}
{{end}}</section>{{end}}
<section id="environment"><h2>Environment</h2>
{{if gt (len .Env.RunIDs) 1}}<p class="muted">Rows where the runs differ are highlighted.</p>{{end}}
<table><thead><tr><th class="l">attribute</th>{{range .Env.RunIDs}}<th class="l">run {{.}}</th>{{end}}</tr></thead><tbody>
{{range .Env.Rows}}<tr{{if .Differs}} class="diff"{{end}}><td class="l">{{.Name}}</td>{{range .Values}}<td class="l">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
</section>
<script>
(function(){
  function key(td){var v=td.getAttribute('data-v');if(v===null)v=td.textContent;var n=Number(v);return (v.trim()!==''&&isFinite(n))?{n:n}:{s:v};}
  function cmp(a,b){if(a.n!==undefined&&b.n!==undefined)return a.n-b.n;if(a.n!==undefined)return -1;if(b.n!==undefined)return 1;return a.s.localeCompare(b.s);}
  document.querySelectorAll('table.sortable').forEach(function(t){
    var ths=t.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      th.addEventListener('click',function(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){var c=cmp(key(a.cells[i]),key(b.cells[i]));return asc?c:-c;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  document.querySelectorAll('input.altscale').forEach(function(cb){
    cb.addEventListener('change',function(){
      var f=cb.closest('figure');
      f.querySelector('.fig.main').hidden=cb.checked;
      f.querySelector('.fig.alt').hidden=!cb.checked;
    });
  });
})();
</script>
</body>
</html>
`
