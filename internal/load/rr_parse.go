package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// rrTool is the name tunbench's request/response tool reports.
const rrTool = "tunbench-rr"

// rrReport is the JSON the tool's client prints (rr.Report); a failed
// client prints only tool, version and error.
type rrReport struct {
	Tool         string            `json:"tool"`
	Version      string            `json:"version"`
	Error        string            `json:"error"`
	Transactions int64             `json:"transactions"`
	Duration     float64           `json:"duration_s"`
	Capped       bool              `json:"capped"`
	Min          float64           `json:"min_rtt_us"`
	Mean         float64           `json:"mean_rtt_us"`
	StdDev       float64           `json:"stddev_rtt_us"`
	P50          float64           `json:"p50_rtt_us"`
	P90          float64           `json:"p90_rtt_us"`
	P99          float64           `json:"p99_rtt_us"`
	Max          float64           `json:"max_rtt_us"`
	CDF          []result.Quantile `json:"cdf"`
	Congestion   string            `json:"congestion_control"`
}

// ParseRR parses the stdout of "tunbench rr client" into a latency record
// (round-trip times in µs, the CDF at every percentile plus 99.9, 99.99
// and 99.999, as the tool computed them).
//
// A client that failed prints {"tool", "version", "error"}: that error
// comes back as a *ToolError quoting it. So does a bare "rr ..." error
// line, in case stderr was passed instead. Empty, truncated or
// inconsistent output is a plain error.
func ParseRR(out []byte) (*result.Latency, error) {
	text := bytes.TrimSpace(out)
	if len(text) == 0 {
		return nil, fmt.Errorf("parse %s output: output is empty", rrTool)
	}
	if text[0] != '{' {
		first, _, _ := strings.Cut(string(text), "\n")
		if strings.HasPrefix(first, "rr ") {
			return nil, &ToolError{Tool: rrTool, Message: strings.TrimSpace(first)}
		}
		return nil, fmt.Errorf("parse %s output: not a JSON report: %q", rrTool, clip(first, 200))
	}
	var r rrReport
	dec := json.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&r); errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("parse %s output: truncated after %d bytes: %w", rrTool, len(text), err)
	} else if err != nil {
		return nil, fmt.Errorf("parse %s output: %w", rrTool, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parse %s output: more than one report", rrTool)
	}
	if r.Tool != rrTool {
		return nil, fmt.Errorf("parse %s output: report of tool %q", rrTool, r.Tool)
	}
	if r.Error != "" {
		return nil, &ToolError{Tool: rrTool, Message: r.Error}
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("parse %s output: %w", rrTool, err)
	}
	return &result.Latency{
		Tool: rrTool, Version: r.Version, Samples: r.Transactions,
		Min: r.Min, Mean: r.Mean, P50: r.P50, P90: r.P90, P99: r.P99, Max: r.Max, StdDev: r.StdDev,
		CDF: r.CDF, Congestion: r.Congestion,
	}, nil
}

// check rejects a report whose figures contradict one another.
func (r *rrReport) check() error {
	if r.Transactions <= 0 || r.Duration <= 0 {
		return fmt.Errorf("%d transactions in %g s", r.Transactions, r.Duration)
	}
	if len(r.CDF) < 2 || r.CDF[0].Fraction != 0 || r.CDF[len(r.CDF)-1].Fraction != 1 {
		return errors.New("CDF does not run from fraction 0 to 1")
	}
	for i := 1; i < len(r.CDF); i++ {
		if r.CDF[i].Fraction <= r.CDF[i-1].Fraction || r.CDF[i].RTT < r.CDF[i-1].RTT {
			return fmt.Errorf("CDF not ascending at point %d: %+v after %+v", i, r.CDF[i], r.CDF[i-1])
		}
	}
	if !(r.Min > 0 && r.Min <= r.P50 && r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.Max &&
		r.Min == r.CDF[0].RTT && r.Max == r.CDF[len(r.CDF)-1].RTT && r.Mean >= r.Min && r.Mean <= r.Max) {
		return fmt.Errorf("inconsistent RTTs: min %g mean %g p50 %g p90 %g p99 %g max %g", r.Min, r.Mean, r.P50, r.P90, r.P99, r.Max)
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
