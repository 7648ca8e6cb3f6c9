package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// iperf3Report is the part of iperf3's -J client report that is used.
// Byte and retransmit counts are decoded as float64 because iperf3's JSON
// writer (cJSON) prints every number as a double.
type iperf3Report struct {
	Start struct {
		Version   string `json:"version"`
		TestStart struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
			Omit       int    `json:"omit"`
			Duration   int    `json:"duration"`
			Reverse    int    `json:"reverse"`
		} `json:"test_start"`
	} `json:"start"`
	Intervals []struct {
		Sum        iperf3Sum  `json:"sum"`
		SumReverse *iperf3Sum `json:"sum_bidir_reverse"` // --bidir only
	} `json:"intervals"`
	End struct {
		SumSent     *iperf3Sum `json:"sum_sent"`
		SumReceived *iperf3Sum `json:"sum_received"`
		// --bidir only: the server-to-client half.
		SumSentReverse     *iperf3Sum `json:"sum_sent_bidir_reverse"`
		SumReceivedReverse *iperf3Sum `json:"sum_received_bidir_reverse"`
		Sum                *iperf3Sum `json:"sum"` // UDP only
		CPU                *struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
		SenderCongestion   string `json:"sender_tcp_congestion"`
		ReceiverCongestion string `json:"receiver_tcp_congestion"`
	} `json:"end"`
	Error string `json:"error"`
}

// iperf3Sum is an interval or end summary ("sum", "sum_sent", ...).
type iperf3Sum struct {
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         float64 `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   float64 `json:"retransmits"`
	Omitted       bool    `json:"omitted"`
	// UDP only.
	JitterMillis float64 `json:"jitter_ms"`
	LostPackets  float64 `json:"lost_packets"`
	Packets      float64 `json:"packets"`
	LostPercent  float64 `json:"lost_percent"`
}

// decodeIperf3 decodes a client's -J report and checks that it describes a
// finished test.
func decodeIperf3(data []byte) (*iperf3Report, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("parse iperf3 output: output is empty")
	}
	var r iperf3Report
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("parse iperf3 output: JSON is truncated after %d bytes (was iperf3 killed?): %w", len(data), err)
		}
		return nil, fmt.Errorf("parse iperf3 output: %w", err)
	}
	if r.Error != "" {
		return nil, &ToolError{Tool: "iperf3", Message: r.Error}
	}
	e := &r.End
	if e.SumReceived == nil && e.Sum != nil {
		e.SumReceived = e.Sum // UDP reports of older iperf3 versions
	}
	if e.SumSent == nil && e.Sum != nil {
		e.SumSent = e.Sum
	}
	if e.SumSent == nil || e.SumReceived == nil {
		return nil, errors.New("parse iperf3 output: no end summary (the test did not finish)")
	}
	return &r, nil
}

// ParseIperf3 parses the JSON report of an iperf3 client (-J) into a
// throughput record.
//
// BitsPerSecond, Bytes and Seconds are the receiver's (end.sum_received),
// SenderBitsPerSecond the sender's (end.sum_sent); warm-up intervals (-O)
// are kept in Intervals with Omitted set, and excluded from those totals by
// iperf3 itself. Interval times are as iperf3 reports them: after warm-up
// the clock restarts at zero. With several streams each interval is the sum
// over streams. Tool CPU figures are mapped to sender and receiver
// according to the direction (-R makes the server the sender).
//
// An "error" in the report is returned as a *ToolError even when partial
// results are present; truncated or empty output is an error too.
func ParseIperf3(data []byte) (*result.Throughput, error) {
	r, err := decodeIperf3(data)
	if err != nil {
		return nil, err
	}
	sent, recv := r.End.SumSent, r.End.SumReceived
	t := &result.Throughput{
		Tool:                "iperf3",
		Version:             strings.TrimSpace(strings.TrimPrefix(r.Start.Version, "iperf")),
		BitsPerSecond:       recv.BitsPerSecond,
		SenderBitsPerSecond: sent.BitsPerSecond,
		Bytes:               toInt(recv.Bytes),
		Retransmits:         toInt(sent.Retransmits),
		Seconds:             recv.Seconds,
		Intervals:           make([]result.Interval, 0, len(r.Intervals)),
		SenderCongestion:    r.End.SenderCongestion,
		ReceiverCongestion:  r.End.ReceiverCongestion,
	}
	if rs, rr := r.End.SumSentReverse, r.End.SumReceivedReverse; rs != nil && rr != nil {
		// --bidir: both halves ran at once; the totals are their sums and
		// the reverse half is kept on its own.
		t.ReverseBitsPerSecond = rr.BitsPerSecond
		t.BitsPerSecond += rr.BitsPerSecond
		t.SenderBitsPerSecond += rs.BitsPerSecond
		t.Bytes += toInt(rr.Bytes)
		t.Retransmits += toInt(rs.Retransmits)
	}
	for _, iv := range r.Intervals {
		s := iv.Sum
		i := result.Interval{
			Start:         s.Start,
			End:           s.End,
			Bytes:         toInt(s.Bytes),
			BitsPerSecond: s.BitsPerSecond,
			Retransmits:   toInt(s.Retransmits),
			Omitted:       s.Omitted,
		}
		if rv := iv.SumReverse; rv != nil {
			i.Bytes += toInt(rv.Bytes)
			i.BitsPerSecond += rv.BitsPerSecond
			i.Retransmits += toInt(rv.Retransmits)
		}
		t.Intervals = append(t.Intervals, i)
	}
	if cpu := r.End.CPU; cpu != nil {
		// The client is "host"; it sends unless the test is reversed.
		t.SenderToolCPUPercent, t.ReceiverToolCPUPercent = cpu.HostTotal, cpu.RemoteTotal
		if r.Start.TestStart.Reverse != 0 {
			t.SenderToolCPUPercent, t.ReceiverToolCPUPercent = cpu.RemoteTotal, cpu.HostTotal
		}
	}
	return t, nil
}

// UDPStats are the receiver's loss and jitter figures of an iperf3 UDP test;
// result.Throughput has no place for them.
type UDPStats struct {
	JitterMillis float64 `json:"jitter_ms"`
	LostPackets  int64   `json:"lost_packets"`
	Packets      int64   `json:"packets"`
	LostPercent  float64 `json:"lost_percent"`
}

// ParseIperf3UDP returns the receiver's jitter and loss from the JSON report
// of an iperf3 UDP client (-u -J). It fails like ParseIperf3, and also when
// the test was not UDP.
func ParseIperf3UDP(data []byte) (*UDPStats, error) {
	r, err := decodeIperf3(data)
	if err != nil {
		return nil, err
	}
	if p := r.Start.TestStart.Protocol; p != "UDP" {
		return nil, fmt.Errorf("parse iperf3 UDP statistics: test protocol is %q, not UDP", p)
	}
	s := r.End.SumReceived
	return &UDPStats{
		JitterMillis: s.JitterMillis,
		LostPackets:  toInt(s.LostPackets),
		Packets:      toInt(s.Packets),
		LostPercent:  s.LostPercent,
	}, nil
}

// toInt converts a JSON count to int64, saturating instead of overflowing.
func toInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(math.Round(f))
}
