package udpgen

import (
	"errors"
	"math"
	"testing"
)

// A crafted trace: 6 datagrams, seq 2 lost, seq 4 arriving before seq 3
// (one out of order), transit times 100, 120, 100, 150, 110 µs.
func TestStatsOnCraftedTrace(t *testing.T) {
	const us = 1000
	var s Stats
	trace := []struct {
		seq           uint64
		sent, transit int64
	}{
		{0, 0, 100}, {1, 1000, 120}, {4, 4000, 100}, {3, 3000, 150}, {5, 5000, 110},
	}
	for _, p := range trace {
		s.Add(p.seq, p.sent*us, (p.sent+p.transit)*us, 64)
	}
	r := s.Report()
	if r.Received != 5 || r.Bytes != 320 || r.OutOfOrder != 1 {
		t.Errorf("received %d bytes %d out of order %d, want 5, 320, 1", r.Received, r.Bytes, r.OutOfOrder)
	}
	// RFC 3550: J += (|D| - J)/16 over transit differences 20, -20, 50, -40 µs.
	j := 0.0
	for _, d := range []float64{20, 20, 50, 40} {
		j += (d - j) / 16
	}
	if math.Abs(r.JitterUs-j) > 1e-9 {
		t.Errorf("jitter %v µs, want %v", r.JitterUs, j)
	}
	if r.DelayMinUs != 100 || r.DelayMaxUs != 150 || r.DelayP50Us != 110 || r.DelayP99Us != 150 {
		t.Errorf("delay min/p50/p99/max %v/%v/%v/%v, want 100/110/150/150", r.DelayMinUs, r.DelayP50Us, r.DelayP99Us, r.DelayMaxUs)
	}
	if r.DelayMeanUs != (100+120+100+150+110)/5.0 {
		t.Errorf("mean delay %v µs, want 116", r.DelayMeanUs)
	}
	if r.Seconds != (5000+110-100)/1e6 {
		t.Errorf("seconds %v", r.Seconds)
	}
}

func TestStatsSlowPackets(t *testing.T) {
	var s Stats
	s.Add(0, 0, 200e6, 100) // 200 ms: coarse bucket
	s.Add(1, 0, 20e9, 100)  // 20 s: beyond the histogram
	r := s.Report()
	if r.DelayP50Us > 200000 || r.DelayP50Us <= 200000-100 || r.DelayMaxUs != 20e6 { // 100 µs buckets there
		t.Errorf("p50 %v max %v", r.DelayP50Us, r.DelayMaxUs)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	b := make([]byte, HeaderSize)
	putHeader(b, magicData, 1<<40+7, -5)
	m, seq, ts, ok := parseHeader(b)
	if !ok || m != magicData || seq != 1<<40+7 || ts != -5 {
		t.Errorf("parse = %x %d %d %v", m, seq, ts, ok)
	}
	if _, _, _, ok := parseHeader([]byte("not a tunbench datagram")); ok {
		t.Error("foreign datagram accepted")
	}
}

// NDR/PDR search against a path that loses packets above 600 Mbit/s and
// loses 0.3% between 500 and 600.
func TestSearch(t *testing.T) {
	path := func(rate float64) (float64, float64, error) {
		switch {
		case rate > 600e6:
			return 5, rate, nil
		case rate > 500e6:
			return 0.3, rate, nil
		}
		return 0, rate, nil
	}
	ndr, err := Search(0, 1e9, 0, 8, path)
	if err != nil {
		t.Fatal(err)
	}
	if ndr.Rate > 500e6 || ndr.Rate < 495e6 || len(ndr.Tried) != 9 {
		t.Errorf("NDR %v after %d trials, want just under 500e6 after 9", ndr.Rate, len(ndr.Tried))
	}
	pdr, err := Search(ndr.Rate, 1e9, 0.5, 8, path)
	if err != nil {
		t.Fatal(err)
	}
	if pdr.Rate > 600e6 || pdr.Rate < 595e6 {
		t.Errorf("PDR %v, want just under 600e6", pdr.Rate)
	}
	all, _ := Search(0, 400e6, 0, 8, path)
	if all.Rate != 400e6 || len(all.Tried) != 1 {
		t.Errorf("a path that carries the top rate: %+v", all)
	}
	boom := errors.New("boom")
	if _, err := Search(0, 1e9, 0, 3, func(float64) (float64, float64, error) { return 0, 0, boom }); !errors.Is(err, boom) {
		t.Errorf("trial error: %v", err)
	}
}
