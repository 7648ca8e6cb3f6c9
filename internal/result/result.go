// Package result defines the records that sit between measuring and
// reporting: one Run per invocation of "tunbench run", one Cell per
// measured (method, parameters, repetition). Records are versioned and
// self-describing, so reports regenerate offline from the store alone.
//
// Every numeric field names its unit in its JSON key (_bps, _us, _percent,
// _s, _bytes). The zero value of each type is an empty record; nothing here
// touches the operating system.
package result

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SchemaVersion is written into every exported record. Bump it when a field
// changes meaning; adding a field does not require a bump.
const SchemaVersion = "tunbench.result/v1"

// Cell statuses.
const (
	StatusOK      = "ok"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
)

// Run statuses.
const (
	RunRunning     = "running"
	RunDone        = "done"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
)

// Run is one invocation of the benchmark.
type Run struct {
	Schema   string    `json:"schema"`
	ID       string    `json:"id"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Status   string    `json:"status"`
	Error    string    `json:"error,omitempty"`
	// Testbed names where the endpoints lived: "local" or "vm".
	Testbed string `json:"testbed"`
	// Scenario is the validated scenario as YAML, so the run can be repeated.
	Scenario string `json:"scenario"`
	Host     Host   `json:"host"`
	// Labels are what the user said about the run that tunbench cannot
	// see (tunbench run --label key=value): a kernel commit, a CNI
	// version, a ticket. Keys follow LabelKeyRule.
	Labels map[string]string `json:"labels,omitempty"`
}

// LabelKeyRule says what a label key may be.
const LabelKeyRule = "a label key is 1 to 63 characters: lowercase letters, digits, '.', '_' and '-', starting with a letter or digit"

// MaxLabelValue is the longest label value, in bytes.
const MaxLabelValue = 256

// ValidateLabel checks one label; the error names the rule and the fix.
func ValidateLabel(key, value string) error {
	ok := len(key) >= 1 && len(key) <= 63
	for i, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '.' || r == '_' || r == '-') && i > 0:
		default:
			ok = false
		}
	}
	if !ok {
		fix := strings.ToLower(key)
		return fmt.Errorf("label key %q: %s (e.g. kernel_commit=abc123, cni.version=1.4)%s", key, LabelKeyRule, suggest(fix, key))
	}
	if len(value) > MaxLabelValue || !utf8.ValidString(value) || strings.ContainsAny(value, "\n\r\x00") {
		return fmt.Errorf("label %s: the value must be valid UTF-8, one line, at most %d bytes", key, MaxLabelValue)
	}
	return nil
}

// suggest offers a lowercased key when lowercasing alone would fix it.
func suggest(fix, key string) string {
	if fix != key && ValidateLabel(fix, "") == nil {
		return fmt.Sprintf("; use %q", fix)
	}
	return ""
}

// Host describes the machine (or guest) that ran the measurements.
type Host struct {
	// Site and Side name the host of an ssh testbed cell ("" locally).
	Site      string            `json:"site,omitempty"`
	Side      string            `json:"side,omitempty"`
	Hostname  string            `json:"hostname"`
	Kernel    string            `json:"kernel"`
	Arch      string            `json:"arch"`
	CPUModel  string            `json:"cpu_model"`
	CPUCount  int               `json:"cpu_count"`
	MemoryMiB int               `json:"memory_mib"`
	Tunbench  string            `json:"tunbench_version"`
	GoVersion string            `json:"go_version"`
	Tools     map[string]string `json:"tools,omitempty"` // tool name -> version string
	// OSRelease is the distribution's PRETTY_NAME from /etc/os-release;
	// "" when unknown.
	OSRelease string `json:"os_release,omitempty"`
	// Class is what kind of machine this is: ClassBareMetal, ClassVM,
	// ClassEmulated or ClassUnknown; "" in records older than the field.
	Class string `json:"host_class,omitempty"`
	// Hypervisor names the hypervisor of a vm or emulated host ("KVM",
	// "Firecracker", "Xen", "Hyper-V", "VMware", "QEMU TCG", ...).
	Hypervisor string `json:"hypervisor,omitempty"`
	// ClassEvidence says what Class and Hypervisor were decided from.
	ClassEvidence string `json:"host_class_evidence,omitempty"`
	// Emulated is true when the endpoints ran in a software-emulated VM:
	// such figures measure function, not performance. It is true when
	// Class is ClassEmulated or the testbed says so (the kernel lab under
	// software emulation), and is kept for older records and readers.
	Emulated bool              `json:"emulated"`
	Sysctls  map[string]string `json:"sysctls,omitempty"`
	// NIC is the underlay device a host of an ssh testbed measured over.
	NIC *NIC `json:"nic,omitempty"`
}

// Host classes (Host.Class).
const (
	ClassBareMetal = "bare-metal"
	ClassVM        = "vm"       // a virtual machine with hardware virtualisation
	ClassEmulated  = "emulated" // software emulation (QEMU TCG)
	ClassUnknown   = "unknown"  // nothing to decide from
)

// IsEmulated reports whether figures measured on h come from software
// emulation: Emulated is set, or Class says so.
func (h Host) IsEmulated() bool { return h.Emulated || h.Class == ClassEmulated }

// ClassLabel is Class with the hypervisor, e.g. "vm (KVM)" or "emulated
// (QEMU TCG)"; "" when Class is unknown to the record. A record older
// than Class that is marked Emulated reads "emulated".
func (h Host) ClassLabel() string {
	switch {
	case h.Class == "" && h.Emulated:
		return ClassEmulated
	case h.Class == "":
		return ""
	case h.Hypervisor != "" && (h.Class == ClassVM || h.Class == ClassEmulated):
		return h.Class + " (" + h.Hypervisor + ")"
	}
	return h.Class
}

// NIC describes a host's underlay device: what ethtool -i and the link
// report.
type NIC struct {
	Dev       string `json:"dev"`
	Driver    string `json:"driver"`
	Version   string `json:"driver_version,omitempty"`
	Firmware  string `json:"firmware_version,omitempty"`
	BusInfo   string `json:"bus_info,omitempty"`
	SpeedMbps int    `json:"speed_mbps,omitempty"`
	MTU       int    `json:"mtu_bytes"`
}

// Params are the parameters of one cell of the matrix.
type Params struct {
	Family      string `json:"family"` // "ipv4" or "ipv6" (underlay and overlay)
	UnderlayMTU int    `json:"underlay_mtu_bytes"`
	OverlayMTU  int    `json:"overlay_mtu_bytes"`
	Offloads    bool   `json:"offloads"` // TSO/GSO/GRO on the underlay
	// OffloadSet names the feature set applied on every device of the
	// path (offloads then stays on for the rest); OffloadFeatures are its
	// features (ethtool -K names) and values.
	OffloadSet      string          `json:"offload_set,omitempty"`
	OffloadFeatures map[string]bool `json:"offload_features,omitempty"`
	Streams         int             `json:"streams"`
	// Tunnels is the number of tunnels set up between the endpoints (the
	// scenario's tunnels dimension); 0 in records older than it, and 1,
	// both mean one.
	Tunnels     int               `json:"tunnels,omitempty"`
	Duration    float64           `json:"duration_s"`
	Omit        float64           `json:"omit_s"`
	Latency     float64           `json:"latency_duration_s"`
	LatencyTool string            `json:"latency_tool,omitempty"`
	Pin         bool              `json:"pin"`
	Options     map[string]string `json:"options,omitempty"` // method-specific, never secrets

	// Tests are the scenario's tests run in this cell, in order; empty in
	// records older than the tests field, which ran tcp_stream and tcp_rr.
	Tests []string `json:"tests,omitempty"`
	// Direction of the TCP tests: "forward" (a sends), "reverse" (b
	// sends) or "bidir"; empty means forward.
	Direction string `json:"direction,omitempty"`
	// MSS is the TCP maximum segment size asked of the load tool; 0 is
	// the kernel's choice.
	MSS int `json:"mss_bytes,omitempty"`
	// CongestionControl is the TCP congestion control algorithm asked
	// for (set in the testbed's namespaces and on every connection); empty
	// leaves the hosts' default. What the connections really used is
	// Meta.CongestionControl.
	CongestionControl string `json:"congestion_control,omitempty"`
	// StreamsPerProcess is the parallel test's layout (0 when it did not run).
	StreamsPerProcess int `json:"streams_per_process,omitempty"`
	// Spread is true when the parallel test's processes each crossed a
	// tunnel of their own (the scenario's spread) rather than all the
	// measured one.
	Spread bool `json:"spread,omitempty"`
	// LineRate is the underlay link speed given in the scenario; 0 is unknown.
	LineRate float64 `json:"line_rate_bps,omitempty"`
	// WAN is the emulated wide-area condition on the underlay; nil for none.
	WAN *WANParams `json:"wan,omitempty"`
	// UDP is the udp_sizes test's configuration (nil when it did not run).
	UDP *UDPParams `json:"udp,omitempty"`
	// RecoverDown is how long the recover test keeps the underlay down
	// (0 when it did not run).
	RecoverDown float64 `json:"recover_down_s,omitempty"`
	// SiteA and SiteB are the sites of an ssh testbed the cell ran
	// between (a sends); empty on the local testbed.
	SiteA string `json:"site_a,omitempty"`
	SiteB string `json:"site_b,omitempty"`
}

// WANParams are an emulated wide-area condition, applied on the egress of
// both underlay devices: one-way delay and jitter, loss in each direction,
// and a rate. Qdisc is the tc qdisc that applied it ("netem" or "tbf").
type WANParams struct {
	DelayMs     float64 `json:"delay_ms,omitempty"`
	JitterMs    float64 `json:"jitter_ms,omitempty"`
	LossPercent float64 `json:"loss_percent,omitempty"`
	RateBps     float64 `json:"rate_bps,omitempty"`
	Qdisc       string  `json:"qdisc"`
}

// Label names the WAN condition compactly: "d40ms-j2ms-l0.1%-r1000M" is
// 40 ms delay, 2 ms jitter, 0.1% loss and a rate of 1000 Mbit/s (the rate
// is always in Mbit/s). Fields that are zero are left out, and a nil w is
// "". Cell keys carry it and stored cells are matched by key on --resume,
// so the format must not change; the report groups and labels rows by it.
func (w *WANParams) Label() string {
	if w == nil {
		return ""
	}
	var parts []string
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	if w.DelayMs > 0 {
		parts = append(parts, "d"+num(w.DelayMs)+"ms")
	}
	if w.JitterMs > 0 {
		parts = append(parts, "j"+num(w.JitterMs)+"ms")
	}
	if w.LossPercent > 0 {
		parts = append(parts, "l"+num(w.LossPercent)+"%")
	}
	if w.RateBps > 0 {
		parts = append(parts, "r"+num(w.RateBps/1e6)+"M")
	}
	return strings.Join(parts, "-")
}

// UDPParams configure the udp_sizes test of a cell.
type UDPParams struct {
	FrameSizes []int `json:"frame_sizes_bytes"`
	// Rate is "unlimited", "search" or "fixed" (then OfferedBitsPerSecond).
	Rate                 string  `json:"rate"`
	OfferedBitsPerSecond float64 `json:"offered_bits_per_second_bps,omitempty"`
	Fragment             bool    `json:"fragment"`
	Trial                float64 `json:"trial_s"`
	SearchSteps          int     `json:"search_steps"`
}

// Cell is one measurement: one method, one parameter set, one repetition.
type Cell struct {
	Schema         string    `json:"schema"`
	ID             int64     `json:"id"`
	RunID          string    `json:"run_id"`
	Key            string    `json:"key"` // identical for all repetitions of one cell
	Method         string    `json:"method"`
	Implementation string    `json:"implementation"`
	Params         Params    `json:"params"`
	Repetition     int       `json:"repetition"`
	Status         string    `json:"status"`
	Error          string    `json:"error,omitempty"`
	Started        time.Time `json:"started"`
	Finished       time.Time `json:"finished"`

	Throughput *Throughput `json:"throughput,omitempty"`
	Latency    *Latency    `json:"latency,omitempty"`
	CPU        *CPU        `json:"cpu,omitempty"`
	// Parallel is the parallel test's record: streams spread over
	// several iperf3 processes.
	Parallel *Parallel `json:"parallel,omitempty"`
	// LatencyUnderLoad is the latency_under_load test's record.
	LatencyUnderLoad *LatencyUnderLoad `json:"latency_under_load,omitempty"`
	// MTUProbe is the mtu_probe test's record.
	MTUProbe *MTUProbe `json:"mtu_probe,omitempty"`
	// Connect is the connect test's record; Recover the recover test's.
	Connect *Connect `json:"connect,omitempty"`
	Recover *Recover `json:"recover,omitempty"`
	// Scale is what setting up the cell's tunnels cost (Params.Tunnels
	// above one); Reconf the reconf test's record.
	Scale  *Scale  `json:"scale,omitempty"`
	Reconf *Reconf `json:"reconf,omitempty"`
	// UDPSizes is the udp_sizes test's record: one entry per frame size.
	UDPSizes []UDPSize `json:"udp_sizes,omitempty"`
	// Derived are figures computed from the measurements of this cell
	// alone (ceiling, line rate, load-tool saturation, cost per packet).
	Derived *Derived `json:"derived,omitempty"`
	Meta    Meta     `json:"meta"`
}

// Parallel is the aggregate of several iperf3 client/server pairs started
// together on distinct ports.
type Parallel struct {
	Streams           int `json:"streams"`
	StreamsPerProcess int `json:"streams_per_process"`
	// BitsPerSecond and SenderBitsPerSecond are the sums over processes of
	// each process's receiver and sender rate.
	BitsPerSecond       float64 `json:"bits_per_second_bps"`
	SenderBitsPerSecond float64 `json:"sender_bits_per_second_bps"`
	Bytes               int64   `json:"bytes"`
	Retransmits         int64   `json:"retransmits"`
	// Intervals is the per-second sum over processes.
	Intervals []Interval `json:"intervals"`
	// Processes holds each process's own result, without its intervals.
	Processes []ProcessThroughput `json:"processes"`
	CPU       *CPU                `json:"cpu,omitempty"`
	// Tunnels, when the processes were spread over tunnels
	// (Params.Spread), is what each process's tunnel carried, in process
	// order, as side b's kernel counted it.
	Tunnels []SpreadTunnel `json:"tunnels,omitempty"`
}

// SpreadTunnel is one tunnel a spread parallel test's process crossed:
// its index among the cell's tunnels, side b's overlay address the
// process's server bound, the side-b device that holds that address,
// and what that device counted over the test. Methods whose tunnels
// share one device (routes through a flow-based device) name it for
// each.
type SpreadTunnel struct {
	Tunnel  int    `json:"tunnel"`
	Address string `json:"address"`
	Device  string `json:"device"`
	RxBytes uint64 `json:"rx_bytes"`
	TxBytes uint64 `json:"tx_bytes"`
	// Error says why the device's counters could not be read.
	Error string `json:"error,omitempty"`
}

// ProcessThroughput is one iperf3 client's result in a parallel test.
type ProcessThroughput struct {
	Port                   int     `json:"port"`
	Streams                int     `json:"streams"`
	BitsPerSecond          float64 `json:"bits_per_second_bps"`
	SenderBitsPerSecond    float64 `json:"sender_bits_per_second_bps"`
	Bytes                  int64   `json:"bytes"`
	Retransmits            int64   `json:"retransmits"`
	SenderToolCPUPercent   float64 `json:"sender_tool_cpu_percent"`
	ReceiverToolCPUPercent float64 `json:"receiver_tool_cpu_percent"`
	// Congestion is the TCP congestion control of the process's sending
	// sockets, as iperf3 read it.
	Congestion string `json:"congestion_control,omitempty"`
	Error      string `json:"error,omitempty"`
}

// LatencyUnderLoad is request/response latency measured on the idle
// tunnel and again while a bulk transfer saturates it.
type LatencyUnderLoad struct {
	// Load names what saturated the tunnel: "tcp_stream" (one iperf3
	// process with Params.Streams streams, Params.Direction), or
	// "parallel" when the streams exceed what one process takes.
	Load string `json:"load"`
	// LoadBitsPerSecond is what the load carried while latency was measured.
	LoadBitsPerSecond float64  `json:"load_bits_per_second_bps"`
	Idle              *Latency `json:"idle"`
	Loaded            *Latency `json:"loaded"`
	// P50Ratio and P99Ratio are loaded over idle.
	P50Ratio float64 `json:"p50_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
}

// MTUProbe is the largest packet that really crosses the tunnel with DF
// set, compared with the overlay MTU tunbench configured, and a TCP
// transfer with an MSS just above it to detect a black hole.
type MTUProbe struct {
	// ConfiguredMTU is the overlay device's MTU; PathMTU the largest IP
	// packet (inner headers included) that crossed with don't-fragment.
	ConfiguredMTU int `json:"configured_mtu_bytes"`
	PathMTU       int `json:"path_mtu_bytes"`
	// Mismatch is true when PathMTU is below ConfiguredMTU: packets in
	// between are lost silently or by ICMP.
	Mismatch bool `json:"mismatch"`
	// Probes is how many sizes were tried; Tool the probe ("ping -M do").
	Probes int    `json:"probes"`
	Tool   string `json:"tool"`
	// TCPMSS is the MSS asked of iperf3 (-M): one byte above what PathMTU
	// allows. TCPBitsPerSecond is what it carried in TCPSeconds; Stalled is
	// true when it carried (almost) nothing: a black hole, where clamping
	// or an ICMP "fragmentation needed" should have let it through.
	TCPMSS           int     `json:"tcp_mss_bytes"`
	TCPBitsPerSecond float64 `json:"tcp_bits_per_second_bps"`
	TCPSeconds       float64 `json:"tcp_seconds_s"`
	Stalled          bool    `json:"stalled"`
	TCPError         string  `json:"tcp_error,omitempty"`
}

// Connect is the time from the start of the method's set-up to the first
// request answered through the tunnel, in two parts: Setup, the method's
// own set-up (devices, daemons, and whatever the method waits for before
// it returns), and Handshake, from set-up returned to the first answer of
// a UDP request sent every Interval (tunbench's rr probe). Handshake
// includes starting the probe (Harness, measured on the same clock:
// Handshake less the probe's own time to its first answer).
type Connect struct {
	Setup     float64 `json:"setup_s"`
	Handshake float64 `json:"handshake_s"`
	Total     float64 `json:"total_s"`
	// Probe is the probe's own time from its first request to the first
	// answer; Probes the requests it sent.
	Probe    float64 `json:"probe_s"`
	Probes   int64   `json:"probes"`
	Harness  float64 `json:"harness_s"`
	Interval float64 `json:"interval_s"`
	Tool     string  `json:"tool"`
}

// Recover is the recover test: a stream of UDP requests (one every
// Interval) through the tunnel while side a's underlay device is taken
// down for Down seconds and up again. Recovery is the time from the
// device up to the first answered request; Lost the requests never
// answered; Outage the longest time without an answer. Rekey, for methods
// that can force a rekey (WireGuard family, IPsec), is a second stream
// across a forced rekey.
type Recover struct {
	Dev       string  `json:"dev"`
	Down      float64 `json:"down_s"`
	Interval  float64 `json:"interval_s"`
	Sent      int64   `json:"sent"`
	Lost      int64   `json:"lost"`
	Recovered bool    `json:"recovered"`
	Recovery  float64 `json:"recovery_s"`
	Outage    float64 `json:"outage_s"`
	// Restored names what taking the device down removed and the test
	// put back (addresses, routes).
	Restored []string `json:"restored,omitempty"`
	Tool     string   `json:"tool"`
	Rekey    *Rekey   `json:"rekey,omitempty"`
}

// Scale is what it cost to set up and tear down the Tunnels of a cell
// (Params.Tunnels above one; docs/scale.md): the method's own Setup and
// Teardown on the runner's clock, each tunnel's add (method.Path.Adds,
// per side) as percentiles, and the memory the tunnels took: the hosts'
// kernel slab and the method's daemons' resident memory, read before
// Setup and after it.
type Scale struct {
	Tunnels int `json:"tunnels"`
	// Unit is what one tunnel is for this method ("VXLAN device", "peer").
	Unit string `json:"unit"`
	// Setup and Teardown are the method's whole Setup and Teardown.
	Setup    float64 `json:"setup_s"`
	Teardown float64 `json:"teardown_s"`
	// Adds is how many tunnel adds the method timed; AddP50 and AddP99
	// their percentiles (zero when the method timed none).
	Adds   int     `json:"adds"`
	AddP50 float64 `json:"add_p50_s"`
	AddP99 float64 `json:"add_p99_s"`
	// SlabBefore and SlabAfter are the kernel's slab memory (/proc/meminfo
	// Slab) summed over the distinct hosts of the two sides; DaemonRSS
	// the method's daemons' resident memory summed after Setup (zero
	// before: they did not run).
	SlabBefore int64 `json:"slab_before_bytes"`
	SlabAfter  int64 `json:"slab_after_bytes"`
	DaemonRSS  int64 `json:"daemon_rss_bytes"`
	// PerTunnel is (SlabAfter - SlabBefore + DaemonRSS) / Tunnels: the
	// memory one tunnel costs, noisy on a shared host (the slab moves with
	// everything else the kernel does).
	PerTunnel float64 `json:"memory_per_tunnel_bytes"`
	// SharedKernel is true when both sides share one kernel (the local
	// testbed's namespaces): the slab then holds both sides' tunnels.
	SharedKernel bool `json:"shared_kernel,omitempty"`
	// ToolRSSBefore is tunbench's own resident memory (VmRSS) just before
	// the set-up and ToolPeakRSS its peak (VmHWM) during the set-up, its
	// high-water mark reset first (/proc/self/clear_refs): the process
	// that drives the set-up, plus the agent of each side on a host of
	// its own (ssh, vm, kubernetes), summed. Not the method's daemons
	// (DaemonRSS). Zero in records older than them.
	ToolRSSBefore int64 `json:"tool_rss_before_bytes,omitempty"`
	ToolPeakRSS   int64 `json:"tool_peak_rss_bytes,omitempty"`
}

// Reconf is the reconf test (after FD.io CSIT's): while a request stream
// (one UDP request every Interval) and a TCP throughput stream cross the
// measured tunnel, the method adds one more tunnel (method.Grower; How
// names what it did, Took how long). Lost are the requests never
// answered, Outage the longest time without an answer, and Blocked the
// effective blocked time: Lost times Interval, the time the tunnel
// carried nothing at the offered rate. BitsPerSecond is the throughput
// stream's rate over the whole test and MinIntervalBitsPerSecond its
// lowest one-second interval.
type Reconf struct {
	How                      string  `json:"how"`
	Took                     float64 `json:"grow_command_s"`
	Interval                 float64 `json:"interval_s"`
	Sent                     int64   `json:"sent"`
	Lost                     int64   `json:"lost"`
	Outage                   float64 `json:"outage_s"`
	Blocked                  float64 `json:"blocked_s"`
	BitsPerSecond            float64 `json:"bits_per_second_bps"`
	MinIntervalBitsPerSecond float64 `json:"min_interval_bits_per_second_bps"`
	Tool                     string  `json:"tool"`
	Error                    string  `json:"error,omitempty"`
}

// Rekey is a request stream across a rekey the method forced: How names
// it (e.g. "swanctl --rekey --child tunbench"), Took the time the method's
// command took; Outage the longest time without an answer and Lost the
// requests never answered.
type Rekey struct {
	How    string  `json:"how"`
	Took   float64 `json:"rekey_command_s"`
	Sent   int64   `json:"sent"`
	Lost   int64   `json:"lost"`
	Outage float64 `json:"outage_s"`
	Error  string  `json:"error,omitempty"`
}

// UDPSize is the udp_sizes test at one frame size.
type UDPSize struct {
	FrameBytes   int `json:"frame_bytes"`
	PayloadBytes int `json:"payload_bytes"`
	// Fragmented is true when the IP packet exceeds the overlay MTU.
	Fragmented bool `json:"fragmented"`
	// Result is the measurement at the unlimited or fixed rate, or, with
	// search, the trial at the no-drop rate.
	Result *UDPTrial `json:"result,omitempty"`
	// NDR and PDR are the highest offered payload rates with no loss and
	// with loss of at most 0.5% (search only); Trials every search trial.
	NDRBitsPerSecond float64    `json:"ndr_bits_per_second_bps,omitempty"`
	PDRBitsPerSecond float64    `json:"pdr_bits_per_second_bps,omitempty"`
	Trials           []UDPTrial `json:"trials,omitempty"`
	Error            string     `json:"error,omitempty"`
}

// UDPTrial is one run of tunbench's UDP generator (package udpgen).
type UDPTrial struct {
	// OfferedBitsPerSecond is the payload rate asked for; 0 is unlimited.
	OfferedBitsPerSecond float64 `json:"offered_bits_per_second_bps"`
	Seconds              float64 `json:"seconds_s"`
	Sent                 uint64  `json:"sent_packets"`
	Received             uint64  `json:"received_packets"`
	Lost                 uint64  `json:"lost_packets"`
	LossPercent          float64 `json:"loss_percent"`
	OutOfOrder           uint64  `json:"out_of_order_packets"`
	// Received rates: packets per second and payload bits per second.
	PacketsPerSecond float64 `json:"packets_per_second"`
	BitsPerSecond    float64 `json:"bits_per_second_bps"`
	SentBitsPerSec   float64 `json:"sender_bits_per_second_bps"`
	// One-way delay (exact on the local testbed: one clock), µs. Between
	// hosts it is corrected by the clock offset tunbench measured
	// (ClockOffset, known within ClockUncertainty); when that could not be
	// measured the delays are zero and DelayNote says "unavailable".
	DelayMin float64 `json:"delay_min_us"`
	DelayP50 float64 `json:"delay_p50_us"`
	DelayP99 float64 `json:"delay_p99_us"`
	DelayMax float64 `json:"delay_max_us"`
	// DelayMean is the mean one-way delay, µs; 0 in records from before
	// it was kept.
	DelayMean float64 `json:"delay_mean_us,omitempty"`
	// ClockOffset is the receiver's clock minus the sender's and
	// ClockUncertainty its error bound, µs (sender and receiver on
	// separate hosts only).
	ClockOffset      float64 `json:"clock_offset_us,omitempty"`
	ClockUncertainty float64 `json:"clock_uncertainty_us,omitempty"`
	DelayNote        string  `json:"delay_note,omitempty"`
	// Jitter is RFC 3550's interarrival jitter, µs.
	Jitter float64 `json:"jitter_us"`
	// SenderCores and ReceiverCores are the CPU time per wall second of
	// the processes tracked for each side: the generator's sender or
	// receiver and, in records that have CPU, the tunnel daemons of that
	// side (before, the generator alone).
	SenderCores   float64 `json:"sender_cores"`
	ReceiverCores float64 `json:"receiver_cores"`
	// CPU is the sampler's record over the trial, as the TCP tests keep
	// theirs: whole-host busy % with its minimum, average and maximum,
	// per core, per process (generator and tunnel daemons) and, between
	// hosts, per host; nil in older records.
	CPU *CPU `json:"cpu,omitempty"`
	// SendBuffer and ReceiveBuffer are the socket buffers the kernel
	// granted the generator's sender and receiver, bytes, as it reports
	// them (doubled: 2 × udpgen.BufferBytes when granted in full); 0 in
	// records from before they were read back. BufferNote says which
	// fell short of what was asked, which changes what was measured.
	SendBuffer    int    `json:"send_buffer_bytes,omitempty"`
	ReceiveBuffer int    `json:"receive_buffer_bytes,omitempty"`
	BufferNote    string `json:"buffer_note,omitempty"`
}

// DelayUnavailable starts UDPTrial.DelayNote when the one-way delay could
// not be put on one clock and was dropped.
const DelayUnavailable = "unavailable"

// DelayKnown reports whether the trial's one-way delays are figures (on
// one clock, or corrected by a measured offset) rather than dropped.
func (t UDPTrial) DelayKnown() bool { return !strings.HasPrefix(t.DelayNote, DelayUnavailable) }

// Cost bases: what a cost per packet is counted in.
const (
	CostCycles  = "cycles"
	CostCPUTime = "cpu_time"
)

// Derived are figures computed for a cell from its own measurements and
// the method's header arithmetic; docs/results.md defines each.
type Derived struct {
	// Ceiling is the fraction of the underlay's wire bytes that can be
	// TCP payload at this MTU (framing, outer headers, the method's
	// overhead, inner IP and TCP headers); CeilingBitsPerSecond is that
	// fraction of the line rate, when the line rate is known.
	CeilingFraction      float64 `json:"ceiling_fraction"`
	CeilingBitsPerSecond float64 `json:"ceiling_bits_per_second_bps,omitempty"`
	PercentOfCeiling     float64 `json:"percent_of_ceiling,omitempty"`
	// LineRate is the underlay speed (the device's, else the scenario's);
	// 0 when unknown (veth), and then no percentage is given.
	LineRate          float64 `json:"line_rate_bps,omitempty"`
	LineRateSource    string  `json:"line_rate_source,omitempty"` // "device" or "scenario"
	PercentOfLineRate float64 `json:"percent_of_line_rate,omitempty"`
	// LoadToolSaturated lists the load-tool processes that used 95% or
	// more of a core: the tool, not the tunnel, may be the limit.
	LoadToolSaturated []string `json:"load_tool_saturated,omitempty"`
	// Cost per packet and per byte of the bulk transfer, from the CPU
	// samples and the underlay devices' counters over the same interval.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is CPU spent per packet and per byte.
type Cost struct {
	// Basis is CostCycles (the Cycles* figures are there) or CostCPUTime
	// (only the Ns* ones); BasisNote says why.
	Basis     string `json:"basis"`
	BasisNote string `json:"basis_note,omitempty"`
	// Device counters over the CPU sampling interval: packets and bytes
	// the sender's underlay device sent and the receiver's received.
	// With GSO/GRO on, a "packet" may be a 64 KB super-packet.
	SenderPackets   uint64  `json:"sender_packets"`
	SenderBytes     uint64  `json:"sender_bytes"`
	ReceiverPackets uint64  `json:"receiver_packets"`
	ReceiverBytes   uint64  `json:"receiver_bytes"`
	Seconds         float64 `json:"seconds_s"`
	// Nanoseconds of CPU (sender and receiver side, as attributed in
	// CPU.Split) per packet and per byte.
	SenderNsPerPacket   float64 `json:"sender_ns_per_packet"`
	ReceiverNsPerPacket float64 `json:"receiver_ns_per_packet"`
	SenderNsPerByte     float64 `json:"sender_ns_per_byte"`
	ReceiverNsPerByte   float64 `json:"receiver_ns_per_byte"`
	// TotalNsPerPacket counts the whole machine's busy CPU.
	TotalNsPerPacket float64 `json:"total_ns_per_packet"`
	// Cycles counted on all CPUs over the same interval (basis cycles
	// only). The machine's cycles per packet go in TotalCyclesPerPacket;
	// the sender's and receiver's are the machine's cycles apportioned by
	// their share of the busy CPU time (SenderCores over busy cores).
	Cycles                  uint64  `json:"cycles,omitempty"`
	SenderCyclesPerPacket   float64 `json:"sender_cycles_per_packet,omitempty"`
	ReceiverCyclesPerPacket float64 `json:"receiver_cycles_per_packet,omitempty"`
	SenderCyclesPerByte     float64 `json:"sender_cycles_per_byte,omitempty"`
	ReceiverCyclesPerByte   float64 `json:"receiver_cycles_per_byte,omitempty"`
	TotalCyclesPerPacket    float64 `json:"total_cycles_per_packet,omitempty"`
}

// Throughput is a bulk-transfer measurement (iperf3).
type Throughput struct {
	Tool    string `json:"tool"`
	Version string `json:"tool_version,omitempty"`
	// BitsPerSecond is the receiver's rate over the measured (non-omitted)
	// time; with direction bidir, the sum of both halves.
	BitsPerSecond float64 `json:"bits_per_second_bps"`
	// ReverseBitsPerSecond is, with direction bidir only, the rate of the
	// half that b sent (included in BitsPerSecond).
	ReverseBitsPerSecond float64    `json:"reverse_bits_per_second_bps,omitempty"`
	SenderBitsPerSecond  float64    `json:"sender_bits_per_second_bps"`
	Bytes                int64      `json:"bytes"`
	Retransmits          int64      `json:"retransmits"`
	Seconds              float64    `json:"seconds_s"`
	Intervals            []Interval `json:"intervals"`
	// CPU figures as reported by the load tool itself for its own process.
	SenderToolCPUPercent   float64 `json:"sender_tool_cpu_percent"`
	ReceiverToolCPUPercent float64 `json:"receiver_tool_cpu_percent"`
	// SenderCongestion and ReceiverCongestion are the TCP congestion
	// control of the sending and receiving sockets, as iperf3 read them
	// (TCP_CONGESTION); empty for UDP and older records.
	SenderCongestion   string `json:"sender_congestion_control,omitempty"`
	ReceiverCongestion string `json:"receiver_congestion_control,omitempty"`
}

// Interval is one reporting interval (normally one second).
type Interval struct {
	Start         float64 `json:"start_s"`
	End           float64 `json:"end_s"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second_bps"`
	Retransmits   int64   `json:"retransmits"`
	// Omitted marks warm-up intervals excluded from the totals (iperf3 -O).
	Omitted bool `json:"omitted"`
}

// Latency is a request/response measurement (sockperf ping-pong, netperf TCP_RR).
type Latency struct {
	Tool    string  `json:"tool"`
	Version string  `json:"tool_version,omitempty"`
	Samples int64   `json:"samples"`
	Min     float64 `json:"min_rtt_us"`
	Mean    float64 `json:"mean_rtt_us"`
	P50     float64 `json:"p50_rtt_us"`
	P90     float64 `json:"p90_rtt_us"`
	P99     float64 `json:"p99_rtt_us"`
	Max     float64 `json:"max_rtt_us"`
	StdDev  float64 `json:"stddev_rtt_us"`
	// CDF holds the full distribution as quantile points, enough to draw it.
	CDF []Quantile `json:"cdf"`
	// Congestion is the TCP congestion control of the client's socket
	// (tunbench's rr tool reads it); empty for other tools.
	Congestion string `json:"congestion_control,omitempty"`
}

// Quantile is one point of a cumulative distribution.
type Quantile struct {
	Fraction float64 `json:"fraction"` // 0..1
	RTT      float64 `json:"rtt_us"`
}

// CPU is what the CPU sampler saw during the throughput measurement.
type CPU struct {
	Interval float64 `json:"interval_s"`
	Cores    int     `json:"cores"`
	// Busy is whole-machine utilisation (100 = all cores busy) per sample.
	BusyMin float64 `json:"busy_min_percent"`
	BusyAvg float64 `json:"busy_avg_percent"`
	BusyMax float64 `json:"busy_max_percent"`
	// PerCore is the average over the measurement, per core, mpstat-style.
	PerCore []CoreUsage `json:"per_core"`
	// Samples are the whole-machine samples, one per interval.
	Samples []CPUSample `json:"samples"`
	// Processes are the load tools and daemons accounted from /proc/PID/stat.
	Processes []ProcessCPU `json:"processes"`
	// Split says how sender and receiver CPU were attributed.
	// "process" (exact per-process time) or "approximate" (softirq work
	// cannot be attributed to one side when both ends share the CPUs).
	Split string `json:"split"`
	// SenderCores and ReceiverCores are CPU time per wall second (1.0 = one
	// full core) attributed to each side; see Split.
	SenderCores   float64 `json:"sender_cores"`
	ReceiverCores float64 `json:"receiver_cores"`
	// SoftirqCores is machine-wide softirq time per wall second, not attributable.
	SoftirqCores float64 `json:"softirq_cores"`
	// Hosts, with split "hosts", is each host's own record: the sender's
	// and the receiver's machines are separate, and each one's busy time
	// is exactly its side's cost.
	Hosts []HostCPU `json:"hosts,omitempty"`
}

// HostCPU is one host's CPU over a measurement.
type HostCPU struct {
	Host  string `json:"host"`
	Side  string `json:"side"` // "sender" or "receiver"
	Cores int    `json:"cores"`
	// BusyMin, BusyAvg and BusyMax are the host's whole-machine busy %
	// (100 = all its cores busy) over its samples, mpstat's view; BusyMin
	// is nil in records older than it.
	BusyMin      *float64    `json:"busy_min_percent,omitempty"`
	BusyAvg      float64     `json:"busy_avg_percent"`
	BusyMax      float64     `json:"busy_max_percent"`
	SoftirqCores float64     `json:"softirq_cores"`
	PerCore      []CoreUsage `json:"per_core"`
}

// CoreUsage is one core's average utilisation.
type CoreUsage struct {
	CPU     int     `json:"cpu"`
	User    float64 `json:"user_percent"`
	System  float64 `json:"system_percent"`
	Softirq float64 `json:"softirq_percent"`
	Irq     float64 `json:"irq_percent"`
	Idle    float64 `json:"idle_percent"`
}

// CPUSample is one whole-machine sample.
type CPUSample struct {
	T       float64 `json:"t_s"`
	User    float64 `json:"user_percent"`
	System  float64 `json:"system_percent"`
	Softirq float64 `json:"softirq_percent"`
	Busy    float64 `json:"busy_percent"`
}

// ProcessCPU is the CPU time of one process over the measurement.
type ProcessCPU struct {
	Role   string  `json:"role"` // e.g. "iperf3-client", "wireguard-go"
	Side   string  `json:"side"` // "sender" or "receiver" ("a" sends, "b" receives)
	PID    int     `json:"pid"`
	User   float64 `json:"user_s"`
	System float64 `json:"system_s"`
	// Cores is (user+system) per wall second: 1.0 = one full core.
	Cores float64 `json:"cores"`
}

// Meta is the context of one cell, so a figure can be trusted later.
type Meta struct {
	// BackgroundBusy is machine utilisation measured just before the cell,
	// with nothing of the cell running.
	BackgroundBusy float64 `json:"background_busy_percent"`
	Busy           bool    `json:"busy"` // background load high enough to distrust figures
	Emulated       bool    `json:"emulated"`
	Kernel         string  `json:"kernel"`
	// Devices are the devices on the path, with MTU and offload state.
	Devices []Device `json:"devices"`
	// Hosts describe each endpoint's machine when the endpoints are
	// hosts of their own (ssh testbed): kernel, CPU, tool versions.
	Hosts []Host `json:"hosts,omitempty"`
	// Variant records which implementation variant actually ran
	// (e.g. "kernel-libipsec", "netdev datapath").
	Variant string `json:"variant,omitempty"`
	// Datapath names in one word where the method's packets were
	// processed, for the methods that have more than one place to do it:
	// "kernel" (ovs-* on the system datapath, ipsec on xfrm, wireguard),
	// "netdev" (ovs-* on Open vSwitch's userspace datapath), "libipsec"
	// (ipsec on strongSwan's userspace kernel-libipsec), "userspace"
	// (openvpn without DCO), "netstack" (tailscale's userspace
	// networking: gVisor's TCP/IP stack inside tailscaled). Empty for methods with a single data path
	// and in records older than the field (report derives it from
	// Variant there).
	Datapath string `json:"datapath,omitempty"`
	// CongestionControl is the TCP congestion control the cell's
	// connections used, read from their sockets (iperf3's TCP_CONGESTION
	// report, the rr tool's); empty when no TCP test ran.
	CongestionControl string            `json:"congestion_control,omitempty"`
	Extra             map[string]string `json:"extra,omitempty"`
}

// Data paths of Meta.Datapath.
const (
	DatapathKernel    = "kernel"
	DatapathNetdev    = "netdev"
	DatapathLibipsec  = "libipsec"
	DatapathUserspace = "userspace"
	DatapathNetstack  = "netstack"
)

// Device is one network device on the measured path.
type Device struct {
	Side     string          `json:"side"` // "a" or "b"
	Name     string          `json:"name"`
	Kind     string          `json:"kind"` // veth, vxlan, tun, ...
	MTU      int             `json:"mtu_bytes"`
	Offloads map[string]bool `json:"offloads"` // ethtool -k feature name -> on
}
