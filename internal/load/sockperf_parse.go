package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

var (
	ansiRe        = regexp.MustCompile("\x1b\\[[0-9;]*m")
	spVersionRe   = regexp.MustCompile(`== version #(\S+)`)
	spAvgRe       = regexp.MustCompile(`avg-(rtt|latency)=([0-9.]+) \(std-dev=([0-9.]+)`)
	spTotalRe     = regexp.MustCompile(`Total ([0-9]+) observations`)
	spMaxRe       = regexp.MustCompile(`---> <MAX> observation =\s*([0-9.]+)`)
	spMinRe       = regexp.MustCompile(`---> <MIN> observation =\s*([0-9.]+)`)
	spPercentRe   = regexp.MustCompile(`---> percentile\s+([0-9.]+) =\s*([0-9.]+)`)
	spServerRe    = regexp.MustCompile(`Printing statistics for Server No`)
	spTableHeadRe = regexp.MustCompile(`^packet, txTime\(sec\), rxTime\(sec\), (rtt|latency)\(usec\)`)
)

// sockperfFailures are the messages with which sockperf 3.7 (which exits 0
// on most failures) says that it measured nothing.
var sockperfFailures = []string{
	"ERROR",                     // e.g. "ERROR: Can`t connect socket (errno=111 Connection refused)"
	"Invalid",                   // argument errors, e.g. "'-i' Invalid address: 2001:2::2"
	"No valid observations",     // nothing left after warm-up
	"No messages were received", // server down
	"Test end before test start",
}

// ParseSockperf parses a sockperf ping-pong run into a latency record with
// round-trip times in microseconds.
//
// summary is what sockperf wrote to stdout (3.7 writes its errors there
// too, and exits 0 on most of them); fullLog is the file written by
// --full-log, or nil. sockperf reports one-way latency (RTT/2) unless run
// with --full-rtt; both forms are read and converted to RTT. Samples, mean,
// standard deviation, min, p50, p90, p99, max and the CDF come from the full
// log when it holds data (every percentile 0..100 plus 99.9, 99.99, 99.999,
// using sockperf's own percentile rule), else from the summary's own
// percentile lines. A full log whose sample count differs from the summary's
// belongs to another run and is an error.
//
// sockperf's messages of failure (refused connection, invalid argument, no
// valid observation) come back as a *ToolError.
func ParseSockperf(summary []byte, fullLog []byte) (*result.Latency, error) {
	s, err := parseSockperfSummary(summary)
	if err != nil {
		return nil, err
	}
	l := &result.Latency{Tool: "sockperf", Version: s.version}
	rtts, err := parseSockperfFullLog(fullLog)
	if err != nil {
		return nil, err
	}
	if rtts == nil {
		s.fill(l)
		return l, nil
	}
	if int64(len(rtts)) != s.samples {
		return nil, fmt.Errorf("parse sockperf full log: %d samples, but the summary counts %d: not the same run", len(rtts), s.samples)
	}
	fromSamples(l, rtts)
	return l, nil
}

// sockperfSummary holds the figures of sockperf's stdout, converted to RTT.
type sockperfSummary struct {
	version      string
	samples      int64
	mean, stddev float64
	min, max     float64
	percentiles  map[float64]float64 // fraction -> RTT µs
}

func parseSockperfSummary(out []byte) (*sockperfSummary, error) {
	text := ansiRe.ReplaceAllString(string(out), "")
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("parse sockperf output: output is empty")
	}
	s := &sockperfSummary{percentiles: map[float64]float64{}}
	factor := 0.0 // 1 for --full-rtt, 2 for one-way latency
	servers := 0
	var haveMin, haveMax, haveTotal bool
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		msg := strings.TrimSpace(strings.TrimPrefix(line, "sockperf:"))
		for _, f := range sockperfFailures {
			if strings.Contains(msg, f) {
				return nil, &ToolError{Tool: "sockperf", Message: msg}
			}
		}
		if m := spVersionRe.FindStringSubmatch(line); m != nil && s.version == "" {
			s.version = m[1]
		}
		if spServerRe.MatchString(line) {
			servers++
		}
		if m := spAvgRe.FindStringSubmatch(line); m != nil {
			factor = 2
			if m[1] == "rtt" {
				factor = 1
			}
			s.mean, s.stddev = num(m[2]), num(m[3])
		}
		if m := spTotalRe.FindStringSubmatch(line); m != nil {
			s.samples, haveTotal = int64(num(m[1])), true
		}
		if m := spMaxRe.FindStringSubmatch(line); m != nil {
			s.max, haveMax = num(m[1]), true
		}
		if m := spMinRe.FindStringSubmatch(line); m != nil {
			s.min, haveMin = num(m[1]), true
		}
		if m := spPercentRe.FindStringSubmatch(line); m != nil {
			frac := math.Round(num(m[1])/100*1e9) / 1e9
			s.percentiles[frac] = num(m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse sockperf output: %w", err)
	}
	if servers > 1 {
		return nil, fmt.Errorf("parse sockperf output: statistics for %d servers, only one is supported", servers)
	}
	if factor == 0 || !haveTotal || !haveMin || !haveMax {
		return nil, fmt.Errorf("parse sockperf output: no latency statistics (last line: %q)", lastLine(text))
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if _, ok := s.percentiles[q]; !ok {
			return nil, fmt.Errorf("parse sockperf output: no percentile %g line", q*100)
		}
	}
	s.mean *= factor
	s.stddev *= factor
	s.min *= factor
	s.max *= factor
	for q := range s.percentiles {
		s.percentiles[q] *= factor
	}
	return s, nil
}

// fill sets l from the summary alone; the CDF has the printed percentiles.
func (s *sockperfSummary) fill(l *result.Latency) {
	l.Samples, l.Mean, l.StdDev = s.samples, s.mean, s.stddev
	l.Min, l.Max = s.min, s.max
	l.P50, l.P90, l.P99 = s.percentiles[0.5], s.percentiles[0.9], s.percentiles[0.99]
	l.CDF = []result.Quantile{{Fraction: 0, RTT: s.min}}
	fracs := make([]float64, 0, len(s.percentiles))
	for q := range s.percentiles {
		fracs = append(fracs, q)
	}
	slices.Sort(fracs)
	for _, q := range fracs {
		l.CDF = append(l.CDF, result.Quantile{Fraction: q, RTT: s.percentiles[q]})
	}
	l.CDF = append(l.CDF, result.Quantile{Fraction: 1, RTT: s.max})
}

// parseSockperfFullLog returns the RTTs (µs) of a --full-log file, or nil
// when the file holds no data. Each RTT is rxTime - txTime, whichever of
// RTT or latency the last column holds.
func parseSockperfFullLog(data []byte) ([]float64, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	lineNo := 0
	inTable := false
	var rtts []float64
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if !inTable {
			inTable = spTableHeadRe.MatchString(line)
			continue
		}
		if line == "" || strings.HasPrefix(line, "---") {
			break
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("parse sockperf full log: line %d: want 4 fields, got %q", lineNo, line)
		}
		tx, err1 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
		rx, err2 := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("parse sockperf full log: line %d: %w", lineNo, err)
		}
		if rx < tx {
			return nil, fmt.Errorf("parse sockperf full log: line %d: reply before request: %q", lineNo, line)
		}
		// Timestamps have nanosecond resolution: round away float noise.
		rtts = append(rtts, math.Round((rx-tx)*1e9)/1e3)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse sockperf full log: %w", err)
	}
	if !inTable {
		return nil, fmt.Errorf("parse sockperf full log: no packet table (%d lines)", lineNo)
	}
	if len(rtts) == 0 {
		return nil, errors.New("parse sockperf full log: packet table is empty")
	}
	return rtts, nil
}

// num parses a number the regular expressions already matched.
func num(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func lastLine(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		return strings.TrimSpace(text[i+1:])
	}
	return text
}
