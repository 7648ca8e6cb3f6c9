package render

import (
	"html/template"
	"slices"

	"github.com/tunbench/tunbench/internal/report/summary"
)

// tunnelRow is one line of the HTML report's tunnels table: a row's
// result.Scale and result.Reconf figures, in the units the table shows.
type tunnelRow struct {
	Label, Unit                          string
	N                                    int
	Setup, AddP50, AddP99, Teardown, KiB summary.Figure
	Shared                               bool
	Blocked, Lost                        summary.Figure
}

// hasTunnels says whether a run has the tunnels dimension: a row with
// more than one tunnel.
func hasTunnels(r BuiltRun) bool {
	return slices.ContainsFunc(r.Rows, func(s summary.Summary) bool { return s.Params.Tunnels > 1 })
}

// tunnelRows are the lines of the HTML tunnels table: the rows with a
// scale or reconf record.
func tunnelRows(r BuiltRun) []tunnelRow {
	var out []tunnelRow
	v := summary.VaryingParams(r.Rows)
	kib := func(f summary.Figure) summary.Figure {
		f.Mean, f.HalfWidth, f.Unit = f.Mean/1024, f.HalfWidth/1024, "KiB"
		return f
	}
	for _, s := range r.Rows {
		k := s.Scale
		if k == nil {
			continue
		}
		out = append(out, tunnelRow{Label: summary.RowName(s, v), Unit: k.Unit, N: tunnelN(s.Params),
			Setup: k.Setup, AddP50: msFigure(k.AddP50), AddP99: msFigure(k.AddP99), Teardown: k.Teardown, KiB: kib(k.PerTunnel),
			Shared: k.SharedKernel, Blocked: msFigure(k.ReconfBlocked), Lost: k.ReconfLost})
	}
	return out
}

var _ = template.Must(pageTemplate.New("tunnels").Funcs(template.FuncMap{
	"tunnelRows":       tunnelRows,
	"sharedKernelNote": func() string { return summary.SharedKernelNote },
}).Parse(`{{$rows := tunnelRows .}}{{if $rows}}<h3 id="{{.Run.ID}}-tunnels">Tunnels</h3>
<p class="muted">What setting up N tunnels cost (the load crosses the middle one): the method's whole set-up and teardown of the N, one tunnel's add (p50 and p99 of the adds' timestamps), memory per tunnel ((slab after set-up − slab before + the daemons' resident memory) / N, noisy on a shared host), and the reconf test's effective blocked time (requests lost × the request interval) and requests lost while one more tunnel was added under load. Mean over repetitions. <b>shared</b> kernel: {{sharedKernelNote}}.</p>
<div class="tw"><table class="sortable">
<thead><tr><th class="l">method</th><th>N</th><th class="l">one tunnel is</th><th>set-up s</th><th>add p50 ms</th><th>add p99 ms</th><th>teardown s</th><th>KiB/tunnel</th><th class="l">kernel</th><th>blocked ms</th><th>lost</th></tr></thead>
<tbody>
{{range $rows}}<tr><td class="l" data-v="{{.Label}}">{{.Label}}</td><td data-v="{{.N}}">{{.N}}</td><td class="l" data-v="{{.Unit}}">{{.Unit}}</td>{{cellNum .Setup 3 false}}{{cellNum .AddP50 3 false}}{{cellNum .AddP99 3 false}}{{cellNum .Teardown 3 false}}{{cellNum .KiB 1 false}}<td class="l" data-v="{{.Shared}}">{{if .Shared}}shared{{else}}per host{{end}}</td>{{cellNum .Blocked 1 false}}{{cellNum .Lost 0 false}}</tr>
{{end}}</tbody></table></div>
{{end}}`))
