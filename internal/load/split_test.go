package load

import (
	"slices"
	"testing"
)

// The stream split of the parallel test: seed 000 ran 256 streams as two
// iperf3 processes of 128; 130 streams are balanced, not 128 + 2.
func TestSplitStreams(t *testing.T) {
	for _, tc := range []struct {
		streams, per int
		want         []int
	}{
		{1, 128, []int{1}},
		{4, 128, []int{4}},
		{128, 128, []int{128}},
		{130, 128, []int{65, 65}},
		{256, 128, []int{128, 128}},
		{512, 128, []int{128, 128, 128, 128}},
		{513, 128, []int{103, 103, 103, 102, 102}},
		{4, 1, []int{1, 1, 1, 1}},
		{3, 2, []int{2, 1}},
		{300, 500, []int{100, 100, 100}}, // capped at iperf3's 128
		{0, 128, nil},
	} {
		got := SplitStreams(tc.streams, tc.per)
		if !slices.Equal(got, tc.want) {
			t.Errorf("SplitStreams(%d, %d) = %v, want %v", tc.streams, tc.per, got, tc.want)
		}
		sum := 0
		for _, n := range got {
			sum += n
			if n > 128 || n > max(tc.per, 1) && tc.per <= 128 {
				t.Errorf("SplitStreams(%d, %d): a process with %d streams", tc.streams, tc.per, n)
			}
		}
		if sum != max(tc.streams, 0) {
			t.Errorf("SplitStreams(%d, %d) sums to %d", tc.streams, tc.per, sum)
		}
	}
}

// --bidir: both halves are summed, the reverse half kept on its own.
func TestParseIperf3Bidir(t *testing.T) {
	got, err := ParseIperf3(readTestdata(t, "iperf3_tcp4_bidir_mss1220.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !nearRel(got.BitsPerSecond, 7566250937.906573, 1e-9) || !nearRel(got.ReverseBitsPerSecond, 3746812062.4078474, 1e-9) {
		t.Errorf("bidir rates = %v total, %v reverse", got.BitsPerSecond, got.ReverseBitsPerSecond)
	}
	if got.Retransmits != 5 {
		t.Errorf("bidir retransmits = %d, want 2 + 3", got.Retransmits)
	}
	if len(got.Intervals) != 2 || !nearRel(got.Intervals[0].BitsPerSecond, 6748757237.215131, 1e-9) {
		t.Errorf("bidir intervals = %+v", got.Intervals)
	}
}
