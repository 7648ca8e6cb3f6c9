package render

import (
	"fmt"
	"html/template"

	"github.com/tunbench/tunbench/internal/report/summary"
)

// hostCPURow is one line of the HTML report's host CPU table.
type hostCPURow struct {
	Label, Frame string
	SenderCPU    summary.Figure
	ReceiverCPU  summary.Figure
	Approx       bool
	summary.HostBusy
}

// hostCPURows are the lines of the HTML host CPU table: every row's
// sides, then every UDP frame size's.
func hostCPURows(r BuiltRun) []hostCPURow {
	var out []hostCPURow
	v := summary.VaryingParams(r.Rows)
	for _, s := range r.Rows {
		approx := s.CPUSplit == summary.SplitApproximate || s.CPUSplit == summary.SplitMixed
		for _, h := range s.HostBusy {
			out = append(out, sideRow(hostCPURow{Label: summary.RowName(s, v), Frame: s.HostBusyTest, SenderCPU: s.SenderCPU,
				ReceiverCPU: s.ReceiverCPU, Approx: approx, HostBusy: h}))
		}
	}
	for _, s := range r.Rows {
		if s.Tests == nil {
			continue
		}
		for _, u := range s.Tests.UDP {
			for _, h := range u.HostBusy {
				out = append(out, sideRow(hostCPURow{Label: summary.RowName(s, v), Frame: fmt.Sprintf("udp %d B", u.FrameBytes),
					SenderCPU: u.SenderCPU, ReceiverCPU: u.ReceiverCPU, HostBusy: h}))
			}
		}
	}
	return out
}

// sideRow keeps only the side's own process cores on a host's line.
func sideRow(r hostCPURow) hostCPURow {
	switch r.Side {
	case summary.SideSender:
		r.ReceiverCPU = summary.Figure{}
	case summary.SideRecv:
		r.SenderCPU = summary.Figure{}
	}
	return r
}

var _ = template.Must(pageTemplate.New("hostcpu").Funcs(template.FuncMap{
	"hostCPURows": hostCPURows,
	"busyText":    summary.BusyText,
}).Parse(`{{$rows := hostCPURows .}}{{if $rows}}<h3 id="{{.Run.ID}}-host-cpu">Host CPU</h3>
<p class="muted">The tracked processes' cores beside the whole host's busy % of all cores over the transfer (mpstat's view): minimum and maximum over every repetition's one-second samples, average over repetitions; per side where sender and receiver are hosts of their own (netperf's -c -C), else for the one machine. <b>^</b> one core sat at ` + "95% or more while the host's other cores averaged at most 75%" + `: the data path was bound to one core.</p>
<div class="tw"><table class="sortable">
<thead><tr><th class="l">method</th><th class="l">test</th><th class="l">side</th><th class="l">host</th><th>snd CPU</th><th>rcv CPU</th><th>cores</th><th>busy min %</th><th>busy avg %</th><th>busy max %</th><th class="l">one core ≥95%</th></tr></thead>
<tbody>
{{range $rows}}<tr><td class="l" data-v="{{.Label}}">{{.Label}}</td><td class="l" data-v="{{.Frame}}">{{.Frame}}</td><td class="l" data-v="{{.Side}}">{{.Side}}</td><td class="l" data-v="{{.Host}}">{{.Host}}</td>{{cellNum .SenderCPU 2 .Approx}}{{cellNum .ReceiverCPU 2 .Approx}}<td data-v="{{.Cores}}">{{.Cores}}</td>{{with .Min}}<td data-v="{{.}}">{{busyText .}}</td>{{else}}<td data-v="">—</td>{{end}}{{cellNum .Avg 1 false}}<td data-v="{{.Max}}">{{busyText .Max}}</td>{{with .OneCore}}<td class="l bad" data-v="{{.Busy}}" title="one core at {{busyText .Busy}}% while the rest averaged {{busyText .OthersBusy}}%">{{.String}}</td>{{else}}<td class="l" data-v="">—</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{end}}`))
