// Package export is the export schema of a run (docs/results.md's
// contract): the JSON document (records, summary rows and warnings) and
// the tidy and wide CSV files. It imports summary for the rows and nothing
// that draws, so the runner writes exports without the renderer.
package export

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// Document is the JSON export of one run: the records as stored, plus the
// aggregated rows and the warnings the table would print. Every figure
// names its unit in its key (and Figure objects also carry a "unit").
type Document struct {
	// Schema is result.SchemaVersion.
	Schema  string            `json:"schema"`
	Run     result.Run        `json:"run"`
	Cells   []result.Cell     `json:"cells"`
	Summary []summary.Summary `json:"summary"`
	// Emulated is true when any figure comes from an emulated testbed; then
	// EmulatedNote is the first entry of Warnings.
	Emulated bool `json:"emulated"`
	// Warnings are the plain-language doubts about the figures (emulated,
	// unstable, busy background, approximate CPU split).
	Warnings []string `json:"warnings"`
}

// NewDocument builds the export document of a run.
func NewDocument(run result.Run, cells []result.Cell) Document {
	rows := summary.Aggregate(run, cells)
	d := Document{
		Schema:   result.SchemaVersion,
		Run:      run,
		Cells:    cells,
		Summary:  rows,
		Emulated: run.Host.IsEmulated(),
		Warnings: summary.Warnings(run, rows),
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
	// Issue 12: the tests beyond tcp_stream and tcp_rr, and derived figures.
	"tests", "direction", "mss_bytes", "parallel_bps", "parallel_processes",
	"idle_p50_rtt_us", "idle_p99_rtt_us", "loaded_p50_rtt_us", "loaded_p99_rtt_us", "loaded_p99_ratio",
	"ceiling_fraction", "percent_of_ceiling", "percent_of_line_rate", "load_tool_saturated",
	"cost_basis", "sender_ns_per_packet", "receiver_ns_per_packet", "sender_ns_per_byte", "receiver_ns_per_byte",
	"udp_sizes", "path_mtu_bytes", "mtu_mismatch", "mss_probe_bytes", "mss_probe_bits_per_second", "mss_probe_stalled",
	// Issue 20: the congestion control asked for and the one the
	// connections used.
	"congestion_control", "congestion_control_used",
	// Issue 34: where the method's packets were processed.
	"datapath",
	// Issue 33: the connect and recover tests.
	"connect_setup_s", "connect_handshake_s", "connect_total_s",
	"recover_down_s", "recover_s", "recover_lost_requests", "recover_outage_s",
	"rekey_outage_s", "rekey_lost_requests",
	// Issue 41: the tunnels dimension, what setting the tunnels up cost,
	// and the reconf test.
	"tunnels", "tunnel_unit", "setup_s", "add_p50_s", "add_p99_s", "teardown_s",
	"memory_per_tunnel_bytes", "shared_kernel", "reconf_blocked_s", "reconf_lost_requests",
	// Issue 42: the run's labels (--label key=value), as key=value pairs
	// joined by ";" in key order, on every row so a row stands alone.
	"labels",
	// Issue 41: whether the parallel test's processes each crossed a
	// tunnel of their own (--spread).
	"spread",
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
	row = append(row,
		flt(c.Meta.BackgroundBusy),
		strconv.FormatBool(c.Meta.Busy),
		strconv.FormatBool(summary.CellEmulated(run, c)),
		c.Error,
	)
	row = append(row, csvTestColumns(c)...)
	row = append(row, p.CongestionControl, c.Meta.CongestionControl, summary.CellDatapath(c))
	row = append(row, connectColumns(c)...)
	row = append(row, scaleColumns(c)...)
	return append(row, options(run.Labels), strconv.FormatBool(p.Spread))
}

// scaleColumns are the tunnels dimension's CSV fields: the count (1 in
// records older than it), then the scale record's figures and the reconf
// test's, empty where not measured (add percentiles also when the method
// timed no add; reconf also when it failed).
func scaleColumns(c result.Cell) []string {
	row := []string{strconv.Itoa(max(c.Params.Tunnels, 1))}
	if k := c.Scale; k != nil {
		p50, p99 := "", ""
		if k.Adds > 0 {
			p50, p99 = flt(k.AddP50), flt(k.AddP99)
		}
		row = append(row, k.Unit, flt(k.Setup), p50, p99, flt(k.Teardown), flt(k.PerTunnel), strconv.FormatBool(k.SharedKernel))
	} else {
		row = append(row, "", "", "", "", "", "", "")
	}
	if r := c.Reconf; r != nil && r.Error == "" {
		return append(row, flt(r.Blocked), strconv.FormatInt(r.Lost, 10))
	}
	return append(row, "", "")
}

// connectColumns are the connect and recover tests' CSV fields: empty
// where not measured (recover_s also when traffic never came back).
func connectColumns(c result.Cell) []string {
	row := []string{"", "", ""}
	if k := c.Connect; k != nil {
		row = []string{flt(k.Setup), flt(k.Handshake), flt(k.Total)}
	}
	r := c.Recover
	if r == nil {
		return append(row, "", "", "", "", "", "")
	}
	rec := ""
	if r.Recovered {
		rec = flt(r.Recovery)
	}
	row = append(row, flt(r.Down), rec, strconv.FormatInt(r.Lost, 10), flt(r.Outage))
	if k := r.Rekey; k != nil && k.Error == "" {
		return append(row, flt(k.Outage), strconv.FormatInt(k.Lost, 10))
	}
	return append(row, "", "")
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
			p50, p99 := flt(r.DelayP50), flt(r.DelayP99)
			if !r.DelayKnown() {
				p50, p99 = "", ""
			}
			p += fmt.Sprintf("pps=%s,bps=%s,loss=%s%%,p50=%sus,p99=%sus,jitter=%sus", flt(r.PacketsPerSecond),
				flt(r.BitsPerSecond), flt(r.LossPercent), p50, p99, flt(r.Jitter))
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

// CSVHeader is the first row of the tidy CSV export: the cell's identity
// and every parameter, then one measured value with its metric and unit.
var CSVHeader = []string{
	"run_id", "key", "method", "implementation", "repetition", "status",
	"family", "underlay_mtu_bytes", "overlay_mtu_bytes", "offloads", "streams",
	"duration_s", "omit_s", "latency_duration_s", "latency_tool", "pin", "options",
	"background_busy_percent", "background_busy", "emulated", "cpu_split",
	"tests", "direction", "mss_bytes", "streams_per_process", "offload_set", "wan", "line_rate_bps",
	"site_a", "site_b", "congestion_control", "congestion_control_used",
	"frame_bytes", "process_port",
	"metric", "value", "unit", "error",
	// Issue 34: where the method's packets were processed.
	"datapath",
	// Issue 41: the tunnels dimension.
	"tunnels",
	// Issue 42: the run's labels, as in the wide CSV.
	"labels",
	// Issue 41: the parallel test spread over the tunnels (--spread).
	"spread",
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
	unitPPS          = "packets/s"
	unitNanoseconds  = "ns"
	unitCycles       = "cycles"
	unitRatio        = "ratio"
	unitBool         = "bool"
)

// measuredValue is one row of the tidy CSV. frame and port, when set,
// say which frame size (udp_sizes) or which iperf3 process (parallel) the
// value belongs to.
type measuredValue struct {
	metric, unit string
	value        string
	frame, port  string
}

// measuredValues lists what one cell measured, in a fixed order. Series
// (per-interval throughput, CPU samples, CDF points) are in the JSON
// export only.
func measuredValues(c result.Cell) []measuredValue {
	var m measured
	m.throughput(c.Throughput)
	m.latency(c.Latency)
	m.cpu(c.CPU)
	m.parallel(c.Parallel)
	m.latencyUnderLoad(c.LatencyUnderLoad)
	m.mtuProbe(c.MTUProbe)
	m.connect(c.Connect)
	m.recovery(c.Recover)
	m.scale(c.Scale)
	m.reconf(c.Reconf)
	for _, u := range c.UDPSizes {
		m.udpSize(u)
	}
	m.derived(c.Derived)
	return m.out
}

// measured collects the measured values of a cell, in order.
type measured struct{ out []measuredValue }

// f adds a float value, i an integer, b a boolean.
func (m *measured) f(metric, unit string, v float64) {
	m.out = append(m.out, measuredValue{metric: metric, unit: unit, value: flt(v)})
}

func (m *measured) i(metric, unit string, v int64) {
	m.out = append(m.out, measuredValue{metric: metric, unit: unit, value: strconv.FormatInt(v, 10)})
}

func (m *measured) b(metric string, v bool) {
	m.out = append(m.out, measuredValue{metric: metric, unit: unitBool, value: strconv.FormatBool(v)})
}

func (m *measured) throughput(t *result.Throughput) {
	if t == nil {
		return
	}
	m.f("throughput", unitBitPerSecond, t.BitsPerSecond)
	m.f("sender_throughput", unitBitPerSecond, t.SenderBitsPerSecond)
	m.i("bytes_received", unitBytes, t.Bytes)
	m.i("retransmits", unitCount, t.Retransmits)
	m.f("throughput_seconds", unitSeconds, t.Seconds)
	m.f("sender_tool_cpu", unitPercent, t.SenderToolCPUPercent)
	m.f("receiver_tool_cpu", unitPercent, t.ReceiverToolCPUPercent)
}

func (m *measured) latency(l *result.Latency) {
	if l == nil {
		return
	}
	m.i("rtt_samples", unitCount, l.Samples)
	m.f("min_rtt", unitMicroseconds, l.Min)
	m.f("mean_rtt", unitMicroseconds, l.Mean)
	m.f("p50_rtt", unitMicroseconds, l.P50)
	m.f("p90_rtt", unitMicroseconds, l.P90)
	m.f("p99_rtt", unitMicroseconds, l.P99)
	m.f("max_rtt", unitMicroseconds, l.Max)
	m.f("stddev_rtt", unitMicroseconds, l.StdDev)
}

func (m *measured) cpu(u *result.CPU) {
	if u == nil {
		return
	}
	m.i("cpu_count", unitCount, int64(u.Cores))
	m.f("busy_min", unitPercent, u.BusyMin)
	m.f("busy_avg", unitPercent, u.BusyAvg)
	m.f("busy_max", unitPercent, u.BusyMax)
	m.f("sender_cpu", unitCores, u.SenderCores)
	m.f("receiver_cpu", unitCores, u.ReceiverCores)
	m.f("softirq_cpu", unitCores, u.SoftirqCores)
}

// parallel adds the parallel test's totals, then each iperf3 process's
// values (with its port): spread over tunnels, also the tunnel it crossed
// (its index among the cell's) and what that tunnel's side-b device
// received.
func (m *measured) parallel(par *result.Parallel) {
	if par == nil {
		return
	}
	spread := len(par.Tunnels) == len(par.Processes)
	m.f("parallel_throughput", unitBitPerSecond, par.BitsPerSecond)
	m.f("parallel_sender_throughput", unitBitPerSecond, par.SenderBitsPerSecond)
	m.i("parallel_bytes_received", unitBytes, par.Bytes)
	m.i("parallel_retransmits", unitCount, par.Retransmits)
	m.i("parallel_processes", unitCount, int64(len(par.Processes)))
	for i, p := range par.Processes {
		port := strconv.Itoa(p.Port)
		m.out = append(m.out,
			measuredValue{metric: "process_throughput", unit: unitBitPerSecond, value: flt(p.BitsPerSecond), port: port},
			measuredValue{metric: "process_retransmits", unit: unitCount, value: strconv.FormatInt(p.Retransmits, 10), port: port},
			measuredValue{metric: "process_sender_tool_cpu", unit: unitPercent, value: flt(p.SenderToolCPUPercent), port: port})
		if tu := par.Tunnels; spread {
			m.out = append(m.out, measuredValue{metric: "process_tunnel", unit: unitCount, value: strconv.Itoa(tu[i].Tunnel), port: port})
			if tu[i].Error == "" {
				m.out = append(m.out, measuredValue{metric: "process_tunnel_rx_bytes", unit: unitBytes, value: strconv.FormatUint(tu[i].RxBytes, 10), port: port})
			}
		}
	}
	if u := par.CPU; u != nil {
		m.f("parallel_sender_cpu", unitCores, u.SenderCores)
		m.f("parallel_receiver_cpu", unitCores, u.ReceiverCores)
		m.f("parallel_softirq_cpu", unitCores, u.SoftirqCores)
	}
}

func (m *measured) latencyUnderLoad(l *result.LatencyUnderLoad) {
	if l == nil {
		return
	}
	m.f("load_throughput", unitBitPerSecond, l.LoadBitsPerSecond)
	if l.Idle != nil {
		m.f("idle_p50_rtt", unitMicroseconds, l.Idle.P50)
		m.f("idle_p99_rtt", unitMicroseconds, l.Idle.P99)
	}
	if l.Loaded != nil {
		m.f("loaded_p50_rtt", unitMicroseconds, l.Loaded.P50)
		m.f("loaded_p99_rtt", unitMicroseconds, l.Loaded.P99)
	}
	m.f("loaded_idle_p50_ratio", unitRatio, l.P50Ratio)
	m.f("loaded_idle_p99_ratio", unitRatio, l.P99Ratio)
}

func (m *measured) mtuProbe(p *result.MTUProbe) {
	if p == nil {
		return
	}
	m.i("configured_mtu", unitBytes, int64(p.ConfiguredMTU))
	m.i("path_mtu", unitBytes, int64(p.PathMTU))
	m.b("path_mtu_mismatch", p.Mismatch)
	m.i("mss_probe", unitBytes, int64(p.TCPMSS))
	m.f("mss_probe_throughput", unitBitPerSecond, p.TCPBitsPerSecond)
	m.b("mss_probe_stalled", p.Stalled)
}

func (m *measured) connect(k *result.Connect) {
	if k == nil {
		return
	}
	m.f("connect_setup", unitSeconds, k.Setup)
	m.f("connect_handshake", unitSeconds, k.Handshake)
	m.f("connect_total", unitSeconds, k.Total)
	m.f("connect_harness", unitSeconds, k.Harness)
	m.i("connect_probes", unitCount, k.Probes)
}

// recovery adds the underlay flap's values, then the rekey's when it ran
// without error.
func (m *measured) recovery(r *result.Recover) {
	if r == nil {
		return
	}
	m.f("recover_down", unitSeconds, r.Down)
	m.b("recover_recovered", r.Recovered)
	if r.Recovered {
		m.f("recover_time", unitSeconds, r.Recovery)
	}
	m.i("recover_sent", unitCount, r.Sent)
	m.i("recover_lost", unitCount, r.Lost)
	m.f("recover_outage", unitSeconds, r.Outage)
	if k := r.Rekey; k != nil && k.Error == "" {
		m.i("rekey_sent", unitCount, k.Sent)
		m.i("rekey_lost", unitCount, k.Lost)
		m.f("rekey_outage", unitSeconds, k.Outage)
		m.f("rekey_command", unitSeconds, k.Took)
	}
}

// scale adds what setting up the cell's tunnels cost: set-up, teardown,
// the adds' percentiles (when the method timed adds), the memory before
// and after and per tunnel, and whether both sides shared one kernel.
func (m *measured) scale(k *result.Scale) {
	if k == nil {
		return
	}
	m.f("scale_setup", unitSeconds, k.Setup)
	m.f("scale_teardown", unitSeconds, k.Teardown)
	m.i("scale_adds", unitCount, int64(k.Adds))
	if k.Adds > 0 {
		m.f("scale_add_p50", unitSeconds, k.AddP50)
		m.f("scale_add_p99", unitSeconds, k.AddP99)
	}
	m.i("scale_slab_before", unitBytes, k.SlabBefore)
	m.i("scale_slab_after", unitBytes, k.SlabAfter)
	m.i("scale_daemon_rss", unitBytes, k.DaemonRSS)
	m.f("memory_per_tunnel", unitBytes, k.PerTunnel)
	if k.ToolPeakRSS > 0 {
		m.i("scale_tool_rss_before", unitBytes, k.ToolRSSBefore)
		m.i("scale_tool_peak_rss", unitBytes, k.ToolPeakRSS)
	}
	m.b("scale_shared_kernel", k.SharedKernel)
}

// reconf adds the reconf test's values when it ran without error.
func (m *measured) reconf(r *result.Reconf) {
	if r == nil || r.Error != "" {
		return
	}
	m.i("reconf_sent", unitCount, r.Sent)
	m.i("reconf_lost", unitCount, r.Lost)
	m.f("reconf_outage", unitSeconds, r.Outage)
	m.f("reconf_blocked", unitSeconds, r.Blocked)
	m.f("reconf_grow_command", unitSeconds, r.Took)
	m.f("reconf_throughput", unitBitPerSecond, r.BitsPerSecond)
	m.f("reconf_min_interval_throughput", unitBitPerSecond, r.MinIntervalBitsPerSecond)
}

// udpSize adds the values of one frame size of the udp_sizes test (with
// the frame size): its fixed-rate result, then its NDR/PDR search.
func (m *measured) udpSize(u result.UDPSize) {
	frame := strconv.Itoa(u.FrameBytes)
	add := func(metric, unit, v string) {
		m.out = append(m.out, measuredValue{metric: metric, unit: unit, value: v, frame: frame})
	}
	add("udp_payload", unitBytes, strconv.Itoa(u.PayloadBytes))
	if r := u.Result; r != nil {
		add("udp_packet_rate", unitPPS, flt(r.PacketsPerSecond))
		add("udp_throughput", unitBitPerSecond, flt(r.BitsPerSecond))
		add("udp_offered_throughput", unitBitPerSecond, flt(r.OfferedBitsPerSecond))
		add("udp_lost", unitCount, strconv.FormatUint(r.Lost, 10))
		add("udp_loss", unitPercent, flt(r.LossPercent))
		add("udp_out_of_order", unitCount, strconv.FormatUint(r.OutOfOrder, 10))
		if r.DelayKnown() {
			add("udp_delay_min", unitMicroseconds, flt(r.DelayMin))
			add("udp_delay_p50", unitMicroseconds, flt(r.DelayP50))
			add("udp_delay_p99", unitMicroseconds, flt(r.DelayP99))
		}
		if r.ClockUncertainty > 0 {
			add("udp_clock_offset", unitMicroseconds, flt(r.ClockOffset))
			add("udp_clock_uncertainty", unitMicroseconds, flt(r.ClockUncertainty))
		}
		add("udp_jitter", unitMicroseconds, flt(r.Jitter))
		add("udp_sender_cpu", unitCores, flt(r.SenderCores))
		add("udp_receiver_cpu", unitCores, flt(r.ReceiverCores))
	}
	if len(u.Trials) > 0 {
		add("udp_ndr", unitBitPerSecond, flt(u.NDRBitsPerSecond))
		add("udp_pdr", unitBitPerSecond, flt(u.PDRBitsPerSecond))
		add("udp_search_trials", unitCount, strconv.Itoa(len(u.Trials)))
	}
}

// derived adds the values derived from the measured ones: shares of the
// ceiling and the line rate, and the CPU cost per packet and byte.
func (m *measured) derived(d *result.Derived) {
	if d == nil {
		return
	}
	m.f("ceiling_fraction", unitRatio, d.CeilingFraction)
	if d.PercentOfCeiling != 0 {
		m.f("percent_of_ceiling", unitPercent, d.PercentOfCeiling)
	}
	if d.LineRate != 0 {
		m.f("line_rate", unitBitPerSecond, d.LineRate)
		m.f("percent_of_line_rate", unitPercent, d.PercentOfLineRate)
	}
	m.i("load_tools_saturated", unitCount, int64(len(d.LoadToolSaturated)))
	if k := d.Cost; k != nil {
		// Nanoseconds are CPU time whatever the basis; with the
		// cycles basis, cycles come as well.
		m.f("sender_ns_per_packet", unitNanoseconds, k.SenderNsPerPacket)
		m.f("receiver_ns_per_packet", unitNanoseconds, k.ReceiverNsPerPacket)
		m.f("sender_ns_per_byte", unitNanoseconds, k.SenderNsPerByte)
		m.f("receiver_ns_per_byte", unitNanoseconds, k.ReceiverNsPerByte)
		m.f("total_ns_per_packet", unitNanoseconds, k.TotalNsPerPacket)
		if k.Basis == result.CostCycles {
			m.f("sender_cycles_per_packet", unitCycles, k.SenderCyclesPerPacket)
			m.f("receiver_cycles_per_packet", unitCycles, k.ReceiverCyclesPerPacket)
			m.f("sender_cycles_per_byte", unitCycles, k.SenderCyclesPerByte)
			m.f("receiver_cycles_per_byte", unitCycles, k.ReceiverCyclesPerByte)
			m.f("total_cycles_per_packet", unitCycles, k.TotalCyclesPerPacket)
		}
	}
}

// tidyParams are the parameters of the tidy CSV beyond the base ones
// (issue 12's, and the sites of an ssh run).
func tidyParams(p result.Params) []string {
	mss, spp, rate := "", "", ""
	if p.MSS > 0 {
		mss = strconv.Itoa(p.MSS)
	}
	if p.StreamsPerProcess > 0 {
		spp = strconv.Itoa(p.StreamsPerProcess)
	}
	if p.LineRate > 0 {
		rate = flt(p.LineRate)
	}
	wan := ""
	if w := p.WAN; w != nil {
		wan = fmt.Sprintf("delay=%sms jitter=%sms loss=%s%% rate=%sbps qdisc=%s", flt(w.DelayMs), flt(w.JitterMs), flt(w.LossPercent), flt(w.RateBps), w.Qdisc)
	}
	return []string{strings.Join(p.Tests, " "), p.Direction, mss, spp, p.OffloadSet, wan, rate, p.SiteA, p.SiteB, p.CongestionControl}
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
			strconv.FormatBool(summary.CellEmulated(run, c)), cpuSplit(c),
		}
		base = append(base, tidyParams(p)...)
		base = append(base, c.Meta.CongestionControl)
		values := measuredValues(c)
		if len(values) == 0 {
			values = []measuredValue{{}}
		}
		for _, v := range values {
			row := append(slices.Clone(base), v.frame, v.port, v.metric, v.value, v.unit, c.Error, summary.CellDatapath(c),
				strconv.Itoa(max(p.Tunnels, 1)), options(run.Labels), strconv.FormatBool(p.Spread))
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

// options writes method options (or a run's labels) as sorted key=value
// pairs joined by ";".
func options(o map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		kv = append(kv, k+"="+o[k])
	}
	return strings.Join(kv, ";")
}
