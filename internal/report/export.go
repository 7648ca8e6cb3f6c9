package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// Document is the JSON export of one run: the records as stored, plus the
// aggregated rows and the warnings the table would print. Every figure
// names its unit in its key (and Figure objects also carry a "unit").
type Document struct {
	// Schema is result.SchemaVersion.
	Schema  string        `json:"schema"`
	Run     result.Run    `json:"run"`
	Cells   []result.Cell `json:"cells"`
	Summary []Summary     `json:"summary"`
	// Emulated is true when any figure comes from an emulated testbed; then
	// EmulatedNote is the first entry of Warnings.
	Emulated bool `json:"emulated"`
	// Warnings are the plain-language doubts about the figures (emulated,
	// unstable, busy background, approximate CPU split).
	Warnings []string `json:"warnings"`
}

// NewDocument builds the export document of a run.
func NewDocument(run result.Run, cells []result.Cell) Document {
	rows := Aggregate(run, cells)
	d := Document{
		Schema:   result.SchemaVersion,
		Run:      run,
		Cells:    cells,
		Summary:  rows,
		Emulated: run.Host.Emulated,
		Warnings: warnings(run, rows),
	}
	for _, r := range rows {
		d.Emulated = d.Emulated || r.Emulated
	}
	if d.Cells == nil {
		d.Cells = []result.Cell{}
	}
	if d.Warnings == nil {
		d.Warnings = []string{}
	}
	return d
}

// JSON writes the export document of a run, indented.
func JSON(w io.Writer, run result.Run, cells []result.Cell) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewDocument(run, cells)); err != nil {
		return fmt.Errorf("write json export of run %s: %w", run.ID, err)
	}
	return nil
}

// CSVHeader is the first row of the CSV export; units are in the names.
var CSVHeader = []string{
	"run_id", "key", "method", "implementation", "repetition", "status",
	"family", "underlay_mtu_bytes", "overlay_mtu_bytes", "offloads", "streams",
	"throughput_bps", "retransmits", "p50_rtt_us", "p99_rtt_us",
	"sender_cores", "receiver_cores", "softirq_cores", "cpu_count", "busy_avg_percent",
	"background_busy_percent", "background_busy", "emulated", "error",
	// Issue 12: the tests beyond tcp_stream and tcp_rr, and derived figures.
	"tests", "direction", "mss_bytes", "parallel_bps", "parallel_processes",
	"idle_p50_rtt_us", "idle_p99_rtt_us", "loaded_p50_rtt_us", "loaded_p99_rtt_us", "loaded_p99_ratio",
	"ceiling_fraction", "percent_of_ceiling", "percent_of_line_rate", "load_tool_saturated",
	"cost_basis", "sender_ns_per_packet", "receiver_ns_per_packet", "sender_ns_per_byte", "receiver_ns_per_byte",
	"udp_sizes", "path_mtu_bytes", "mtu_mismatch", "mss_probe_bytes", "mss_probe_bits_per_second", "mss_probe_stalled",
}

// CSV writes one row per cell, in stored order. A figure that was not
// measured is an empty field, never 0.
func CSV(w io.Writer, run result.Run, cells []result.Cell) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
	}
	for _, c := range cells {
		if err := cw.Write(csvRow(run, c)); err != nil {
			return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
	}
	return nil
}

func csvRow(run result.Run, c result.Cell) []string {
	p := c.Params
	row := []string{
		c.RunID, c.Key, c.Method, c.Implementation, strconv.Itoa(c.Repetition), c.Status,
		p.Family, strconv.Itoa(p.UnderlayMTU), strconv.Itoa(p.OverlayMTU),
		strconv.FormatBool(p.Offloads), strconv.Itoa(p.Streams),
	}
	if t := c.Throughput; t != nil {
		row = append(row, flt(t.BitsPerSecond), strconv.FormatInt(t.Retransmits, 10))
	} else {
		row = append(row, "", "")
	}
	if l := c.Latency; l != nil {
		row = append(row, flt(l.P50), flt(l.P99))
	} else {
		row = append(row, "", "")
	}
	if u := c.CPU; u != nil {
		row = append(row, flt(u.SenderCores), flt(u.ReceiverCores), flt(u.SoftirqCores),
			strconv.Itoa(u.Cores), flt(u.BusyAvg))
	} else {
		row = append(row, "", "", "", "", "")
	}
	row = append(row,
		flt(c.Meta.BackgroundBusy),
		strconv.FormatBool(c.Meta.Busy),
		strconv.FormatBool(c.Meta.Emulated || run.Host.Emulated),
		c.Error,
	)
	return append(row, csvTestColumns(c)...)
}

// csvTestColumns are the issue-12 columns: empty where not measured.
func csvTestColumns(c result.Cell) []string {
	p := c.Params
	mss := ""
	if p.MSS > 0 {
		mss = strconv.Itoa(p.MSS)
	}
	row := []string{strings.Join(p.Tests, " "), p.Direction, mss}
	if par := c.Parallel; par != nil {
		row = append(row, flt(par.BitsPerSecond), strconv.Itoa(len(par.Processes)))
	} else {
		row = append(row, "", "")
	}
	if l := c.LatencyUnderLoad; l != nil && l.Idle != nil && l.Loaded != nil {
		row = append(row, flt(l.Idle.P50), flt(l.Idle.P99), flt(l.Loaded.P50), flt(l.Loaded.P99), flt(l.P99Ratio))
	} else {
		row = append(row, "", "", "", "", "")
	}
	row = append(row, derivedColumns(c)...)
	row = append(row, udpColumn(c)...)
	if m := c.MTUProbe; m != nil {
		return append(row, strconv.Itoa(m.PathMTU), strconv.FormatBool(m.Mismatch), strconv.Itoa(m.TCPMSS),
			flt(m.TCPBitsPerSecond), strconv.FormatBool(m.Stalled))
	}
	return append(row, "", "", "", "", "")
}

// udpColumn packs the udp_sizes test into one field: per frame size,
// "FRAME:pps=..,bps=..,loss=..%,p50=..us,p99=..us,jitter=..us[,ndr=..,pdr=..]"
// joined by spaces (the JSON export has every field).
func udpColumn(c result.Cell) []string {
	var parts []string
	for _, u := range c.UDPSizes {
		p := strconv.Itoa(u.FrameBytes) + ":"
		if r := u.Result; r != nil {
			p += fmt.Sprintf("pps=%s,bps=%s,loss=%s%%,p50=%sus,p99=%sus,jitter=%sus", flt(r.PacketsPerSecond),
				flt(r.BitsPerSecond), flt(r.LossPercent), flt(r.DelayP50), flt(r.DelayP99), flt(r.Jitter))
		}
		if len(u.Trials) > 0 {
			p += fmt.Sprintf(",ndr=%s,pdr=%s", flt(u.NDRBitsPerSecond), flt(u.PDRBitsPerSecond))
		}
		if u.Error != "" {
			p += ",error"
		}
		parts = append(parts, p)
	}
	return []string{strings.Join(parts, " ")}
}

// derivedColumns are the derived figures' CSV fields.
func derivedColumns(c result.Cell) []string {
	var row []string
	d := c.Derived
	if d == nil {
		return append(row, "", "", "", "", "", "", "", "", "")
	}
	opt := func(v float64) string {
		if v == 0 {
			return ""
		}
		return flt(v)
	}
	row = append(row, flt(d.CeilingFraction), opt(d.PercentOfCeiling), opt(d.PercentOfLineRate), strings.Join(d.LoadToolSaturated, " "))
	if k := d.Cost; k != nil {
		return append(row, k.Basis, opt(k.SenderNsPerPacket), opt(k.ReceiverNsPerPacket), opt(k.SenderNsPerByte), opt(k.ReceiverNsPerByte))
	}
	return append(row, "", "", "", "", "")
}

// flt writes a float exactly, without exponent.
func flt(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
