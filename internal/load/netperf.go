package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// NetperfDefaultPort is netserver's control port.
const NetperfDefaultPort = 12865

// netperfSelectors are the omni output selectors requested with -k, in order.
var netperfSelectors = []string{
	"MIN_LATENCY", "MEAN_LATENCY", "P50_LATENCY", "P90_LATENCY", "P99_LATENCY",
	"MAX_LATENCY", "STDDEV_LATENCY", "TRANSACTION_RATE", "ELAPSED_TIME",
}

// netperfCSVNames maps the column titles netperf prints with -o (CSV) to
// the selectors; -k (keyval) prints the selectors themselves.
var netperfCSVNames = map[string]string{
	"Minimum Latency Microseconds":         "MIN_LATENCY",
	"Mean Latency Microseconds":            "MEAN_LATENCY",
	"50th Percentile Latency Microseconds": "P50_LATENCY",
	"90th Percentile Latency Microseconds": "P90_LATENCY",
	"99th Percentile Latency Microseconds": "P99_LATENCY",
	"Maximum Latency Microseconds":         "MAX_LATENCY",
	"Stddev Latency Microseconds":          "STDDEV_LATENCY",
	"Transaction Rate Tran/s":              "TRANSACTION_RATE",
	"Elapsed Time (sec)":                   "ELAPSED_TIME",
}

// NetperfRR describes a netperf TCP_RR run against a netserver. netperf is
// not packaged in Debian main, so this builder and ParseNetperfRR are
// written from the netperf manual and tested on hand-written samples only.
type NetperfRR struct {
	Server       netip.Addr
	Port         int           // -p, netserver control port; 0 is NetperfDefaultPort
	Duration     time.Duration // -l, whole seconds, at least 1
	RequestSize  int           // -r REQ,RESP; both 0 keeps netperf's 1,1
	ResponseSize int
}

// Validate reports whether n can be turned into a correct argv.
func (n NetperfRR) Validate() error {
	if !n.Server.IsValid() || n.Server.IsUnspecified() {
		return fmt.Errorf("netperf TCP_RR: server address %q is not a host address", n.Server)
	}
	if err := validPort(n.Port); err != nil {
		return fmt.Errorf("netperf TCP_RR: %w", err)
	}
	if n.Duration < time.Second {
		return fmt.Errorf("netperf TCP_RR: duration %s is shorter than 1s", n.Duration)
	}
	if err := wholeSeconds("duration", n.Duration); err != nil {
		return fmt.Errorf("netperf TCP_RR: %w", err)
	}
	if n.RequestSize < 0 || n.ResponseSize < 0 {
		return fmt.Errorf("netperf TCP_RR: negative request/response size %d,%d", n.RequestSize, n.ResponseSize)
	}
	return nil
}

// Args returns the argv, e.g.
//
//	netperf -H 198.18.0.2 -p 12865 -l 2 -t TCP_RR -4 -- -k MIN_LATENCY,...,ELAPSED_TIME
//
// asking for key=value output (-k) of the selectors ParseNetperfRR reads.
func (n NetperfRR) Args() []string {
	server := n.Server.Unmap()
	args := []string{"netperf", "-H", server.String(),
		"-p", strconv.Itoa(portOr(n.Port, NetperfDefaultPort)),
		"-l", seconds(n.Duration), "-t", "TCP_RR", familyFlag(server), "--"}
	if n.RequestSize > 0 || n.ResponseSize > 0 {
		args = append(args, "-r", strconv.Itoa(max(n.RequestSize, 1))+","+strconv.Itoa(max(n.ResponseSize, 1)))
	}
	return append(args, "-k", strings.Join(netperfSelectors, ","))
}

// ParseNetperfRR parses the output of a netperf TCP_RR run with omni output
// selectors, either key=value (-k) or CSV (-o: a line of column titles and a
// line of values). netperf's latencies are round-trip times per transaction
// in µs, so they are stored as they are. Samples is TRANSACTION_RATE times
// ELAPSED_TIME when both are present (0 otherwise); the CDF has only the
// points netperf reports (min, p50, p90, p99, max).
func ParseNetperfRR(out []byte) (*result.Latency, error) {
	vals, err := netperfValues(out)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"MIN_LATENCY", "MEAN_LATENCY", "P50_LATENCY", "P90_LATENCY", "P99_LATENCY", "MAX_LATENCY"} {
		if _, ok := vals[k]; !ok {
			return nil, fmt.Errorf("parse netperf output: no %s value", k)
		}
	}
	l := &result.Latency{
		Tool:   "netperf",
		Min:    vals["MIN_LATENCY"],
		Mean:   vals["MEAN_LATENCY"],
		P50:    vals["P50_LATENCY"],
		P90:    vals["P90_LATENCY"],
		P99:    vals["P99_LATENCY"],
		Max:    vals["MAX_LATENCY"],
		StdDev: vals["STDDEV_LATENCY"],
	}
	if rate, ok := vals["TRANSACTION_RATE"]; ok {
		l.Samples = int64(math.Round(rate * vals["ELAPSED_TIME"]))
	}
	l.CDF = []result.Quantile{
		{Fraction: 0, RTT: l.Min}, {Fraction: 0.5, RTT: l.P50}, {Fraction: 0.9, RTT: l.P90},
		{Fraction: 0.99, RTT: l.P99}, {Fraction: 1, RTT: l.Max},
	}
	return l, nil
}

// netperfValues returns the numeric selector values of -k or -o output.
func netperfValues(out []byte) (map[string]float64, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, errors.New("parse netperf output: output is empty")
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse netperf output: %w", err)
	}
	vals := map[string]float64{}
	for i, line := range lines {
		low := strings.ToLower(line)
		if strings.Contains(low, "establish") || strings.HasPrefix(low, "netperf: ") || strings.Contains(low, "error") {
			return nil, &ToolError{Tool: "netperf", Message: line}
		}
		// -k: SELECTOR=value
		if k, v, ok := strings.Cut(line, "="); ok && isSelector(k) {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				vals[k] = f
			}
			continue
		}
		// -o: a title line followed by a value line.
		titles := strings.Split(line, ",")
		if _, known := netperfCSVNames[strings.TrimSpace(titles[0])]; !known || i+1 >= len(lines) {
			continue
		}
		fields := strings.Split(lines[i+1], ",")
		if len(fields) != len(titles) {
			return nil, fmt.Errorf("parse netperf output: %d column titles but %d values", len(titles), len(fields))
		}
		for j, t := range titles {
			sel, ok := netperfCSVNames[strings.TrimSpace(t)]
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(fields[j]), 64)
			if err != nil {
				return nil, fmt.Errorf("parse netperf output: column %q: %w", t, err)
			}
			vals[sel] = f
		}
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("parse netperf output: no latency values (last line: %q)", lines[len(lines)-1])
	}
	return vals, nil
}

func isSelector(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}
