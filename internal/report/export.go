package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
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

// WideCSVHeader is the first row of the wide CSV export (one row per
// cell); units are in the names.
var WideCSVHeader = []string{
	"run_id", "key", "method", "implementation", "repetition", "status",
	"family", "underlay_mtu_bytes", "overlay_mtu_bytes", "offloads", "streams",
	"throughput_bps", "retransmits", "p50_rtt_us", "p99_rtt_us",
	"sender_cores", "receiver_cores", "softirq_cores", "cpu_count", "busy_avg_percent",
	"background_busy_percent", "background_busy", "emulated", "error",
}

// WideCSV writes one row per cell, in stored order, with a column per
// figure. A figure that was not measured is an empty field, never 0.
func WideCSV(w io.Writer, run result.Run, cells []result.Cell) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(WideCSVHeader); err != nil {
		return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
	}
	for _, c := range cells {
		if err := cw.Write(wideRow(run, c)); err != nil {
			return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
	}
	return nil
}

func wideRow(run result.Run, c result.Cell) []string {
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
	return append(row,
		flt(c.Meta.BackgroundBusy),
		strconv.FormatBool(c.Meta.Busy),
		strconv.FormatBool(c.Meta.Emulated || run.Host.Emulated),
		c.Error,
	)
}

// flt writes a float exactly, without exponent.
func flt(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// CSVHeader is the first row of the tidy CSV export: the cell's identity
// and every parameter, then one measured value with its metric and unit.
var CSVHeader = []string{
	"run_id", "key", "method", "implementation", "repetition", "status",
	"family", "underlay_mtu_bytes", "overlay_mtu_bytes", "offloads", "streams",
	"duration_s", "omit_s", "latency_duration_s", "latency_tool", "pin", "options",
	"background_busy_percent", "background_busy", "emulated", "cpu_split",
	"metric", "value", "unit", "error",
}

// Units of the tidy CSV.
const (
	unitBitPerSecond = "bit/s"
	unitBytes        = "bytes"
	unitCount        = "count"
	unitSeconds      = "s"
	unitMicroseconds = "us"
	unitPercent      = "percent"
	unitCores        = "cores"
)

// measuredValue is one row of the tidy CSV.
type measuredValue struct {
	metric, unit string
	value        string
}

// measuredValues lists what one cell measured, in a fixed order. Series
// (per-interval throughput, CPU samples, CDF points) are in the JSON
// export only.
func measuredValues(c result.Cell) []measuredValue {
	var out []measuredValue
	f := func(metric, unit string, v float64) {
		out = append(out, measuredValue{metric, unit, flt(v)})
	}
	i := func(metric, unit string, v int64) {
		out = append(out, measuredValue{metric, unit, strconv.FormatInt(v, 10)})
	}
	if t := c.Throughput; t != nil {
		f("throughput", unitBitPerSecond, t.BitsPerSecond)
		f("sender_throughput", unitBitPerSecond, t.SenderBitsPerSecond)
		i("bytes_received", unitBytes, t.Bytes)
		i("retransmits", unitCount, t.Retransmits)
		f("throughput_seconds", unitSeconds, t.Seconds)
		f("sender_tool_cpu", unitPercent, t.SenderToolCPUPercent)
		f("receiver_tool_cpu", unitPercent, t.ReceiverToolCPUPercent)
	}
	if l := c.Latency; l != nil {
		i("rtt_samples", unitCount, l.Samples)
		f("min_rtt", unitMicroseconds, l.Min)
		f("mean_rtt", unitMicroseconds, l.Mean)
		f("p50_rtt", unitMicroseconds, l.P50)
		f("p90_rtt", unitMicroseconds, l.P90)
		f("p99_rtt", unitMicroseconds, l.P99)
		f("max_rtt", unitMicroseconds, l.Max)
		f("stddev_rtt", unitMicroseconds, l.StdDev)
	}
	if u := c.CPU; u != nil {
		i("cpu_count", unitCount, int64(u.Cores))
		f("busy_min", unitPercent, u.BusyMin)
		f("busy_avg", unitPercent, u.BusyAvg)
		f("busy_max", unitPercent, u.BusyMax)
		f("sender_cpu", unitCores, u.SenderCores)
		f("receiver_cpu", unitCores, u.ReceiverCores)
		f("softirq_cpu", unitCores, u.SoftirqCores)
	}
	return out
}

// CSV writes the tidy CSV export: one row per measured value, with its
// metric, unit and every parameter of its cell, in stored order, so pandas
// or R read it with no reshaping. A repetition that measured nothing
// (failed or skipped) has one row with empty metric, value and unit and
// its error.
func CSV(w io.Writer, run result.Run, cells []result.Cell) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
	}
	for _, c := range cells {
		p := c.Params
		base := []string{
			c.RunID, c.Key, c.Method, c.Implementation, strconv.Itoa(c.Repetition), c.Status,
			p.Family, strconv.Itoa(p.UnderlayMTU), strconv.Itoa(p.OverlayMTU), strconv.FormatBool(p.Offloads),
			strconv.Itoa(p.Streams), flt(p.Duration), flt(p.Omit), flt(p.Latency), p.LatencyTool,
			strconv.FormatBool(p.Pin), options(p.Options),
			flt(c.Meta.BackgroundBusy), strconv.FormatBool(c.Meta.Busy),
			strconv.FormatBool(c.Meta.Emulated || run.Host.Emulated), cpuSplit(c),
		}
		values := measuredValues(c)
		if len(values) == 0 {
			values = []measuredValue{{}}
		}
		for _, v := range values {
			row := append(slices.Clone(base), v.metric, v.value, v.unit, c.Error)
			if err := cw.Write(row); err != nil {
				return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv export of run %s: %w", run.ID, err)
	}
	return nil
}

func cpuSplit(c result.Cell) string {
	if c.CPU == nil {
		return ""
	}
	return c.CPU.Split
}

// options writes method options as sorted key=value pairs joined by ";".
func options(o map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		kv = append(kv, k+"="+o[k])
	}
	return strings.Join(kv, ";")
}
