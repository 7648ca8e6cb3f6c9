package rr

import (
	"math"
	"slices"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
)

// Tool and Version identify the report; Version changes when the meaning
// of a figure or the wire protocol does.
const (
	Tool    = "tunbench-rr"
	Version = "1"
)

// CDFFractions are the quantile points of Report.CDF: every percentile from
// 0 to 100 plus 0.999, 0.9999 and 0.99999, the points the sockperf parser
// of package load keeps, so the CDFs of both tools line up.
var CDFFractions = func() []float64 {
	f := make([]float64, 0, 104)
	for i := 0; i <= 100; i++ {
		f = append(f, float64(i)/100)
	}
	f = append(f, 0.999, 0.9999, 0.99999)
	slices.Sort(f)
	return f
}()

// Report is the client's result, printed as JSON by "tunbench rr client".
// Round-trip times are in µs, rounded to the nanosecond; quantiles use
// stats.Quantile (linear interpolation). A failed run prints only Tool,
// Version and Error.
type Report struct {
	Tool         string  `json:"tool"`
	Version      string  `json:"version"`
	Error        string  `json:"error,omitempty"`
	Server       string  `json:"server,omitempty"`
	RequestSize  int     `json:"request_bytes,omitempty"`
	ResponseSize int     `json:"response_bytes,omitempty"`
	Warmup       float64 `json:"warmup_s"`
	// Congestion is the TCP congestion control the connection used.
	Congestion string `json:"congestion_control,omitempty"`
	// WarmupTransactions were done during the warm-up and are not counted.
	WarmupTransactions int64 `json:"warmup_transactions"`
	// Duration is the measured time, from the first recorded request to
	// the last response.
	Duration     float64 `json:"duration_s"`
	Transactions int64   `json:"transactions"`
	// Rate is Transactions per second of Duration.
	Rate float64 `json:"transactions_per_s"`
	// Capped is true when the sample buffer filled up and the run stopped
	// before Duration had passed.
	Capped bool    `json:"capped"`
	Min    float64 `json:"min_rtt_us"`
	Mean   float64 `json:"mean_rtt_us"`
	StdDev float64 `json:"stddev_rtt_us"` // sample standard deviation
	P50    float64 `json:"p50_rtt_us"`
	P90    float64 `json:"p90_rtt_us"`
	P99    float64 `json:"p99_rtt_us"`
	Max    float64 `json:"max_rtt_us"`
	// CDF has one point per CDFFractions.
	CDF []result.Quantile `json:"cdf,omitempty"`
	// SamplesNS are the round-trip times in order, with Config.KeepSamples.
	SamplesNS []int64 `json:"samples_ns,omitempty"`
}

// newReport summarises a run; samples are the recorded RTTs in ns.
func newReport(cfg Config, m measurement, samples []int64) Report {
	r := Report{
		Tool: Tool, Version: Version,
		Server:             cfg.Server.String(),
		RequestSize:        cfg.RequestSize,
		ResponseSize:       cfg.ResponseSize,
		Warmup:             cfg.Warmup.Seconds(),
		WarmupTransactions: m.warmupTx,
		Duration:           (m.end - m.start).Seconds(),
		Transactions:       int64(len(samples)),
		Capped:             m.capped,
	}
	if r.Duration > 0 {
		r.Rate = float64(r.Transactions) / r.Duration
	}
	if cfg.KeepSamples {
		r.SamplesNS = slices.Clone(samples)
	}
	summarize(&r, samples)
	return r
}

// summarize sets the RTT figures of r from samples in ns.
func summarize(r *Report, samples []int64) {
	if len(samples) == 0 {
		return
	}
	us := make([]float64, len(samples))
	for i, ns := range samples {
		us[i] = float64(ns) / 1e3
	}
	s := stats.Summarize(us)
	r.Mean, r.StdDev = roundNS(s.Mean), roundNS(s.StdDev)
	r.CDF = stats.CDF(us, CDFFractions)
	for i := range r.CDF {
		r.CDF[i].RTT = roundNS(r.CDF[i].RTT)
	}
	r.Min, r.Max = r.CDF[0].RTT, r.CDF[len(r.CDF)-1].RTT
	for _, q := range r.CDF {
		switch q.Fraction {
		case 0.5:
			r.P50 = q.RTT
		case 0.9:
			r.P90 = q.RTT
		case 0.99:
			r.P99 = q.RTT
		}
	}
}

// roundNS rounds a figure in µs to the nanosecond.
func roundNS(us float64) float64 {
	return math.Round(us*1e3) / 1e3
}
