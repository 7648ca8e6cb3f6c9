package stats

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
)

func TestQuantile(t *testing.T) {
	// Expected values as numpy.quantile (linear) gives them.
	tests := []struct {
		sorted []float64
		q      float64
		want   float64
	}{
		{[]float64{1, 2, 3, 4}, 0.25, 1.75},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{15, 20, 35, 40, 50}, 0.4, 29},
		{[]float64{15, 20, 35, 40, 50}, 0, 15},
		{[]float64{15, 20, 35, 40, 50}, 1, 50},
		{[]float64{15, 20, 35, 40, 50}, 0.99, 49.6},
		{[]float64{42}, 0.9, 42},
	}
	for _, tc := range tests {
		if got := Quantile(tc.sorted, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tc.sorted, tc.q, got, tc.want)
		}
	}
	if got := Quantile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("Quantile(nil, 0.5) = %v, want NaN", got)
	}
}

func TestQuantileRejectsBadFraction(t *testing.T) {
	for _, q := range []float64{-0.1, 1.5, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Quantile(_, %v) did not panic", q)
				}
			}()
			Quantile([]float64{1, 2}, q)
		}()
	}
}

func TestCDF(t *testing.T) {
	rtts := []float64{30, 10, 50, 20, 40} // unsorted, microseconds
	orig := slices.Clone(rtts)
	got := CDF(rtts, []float64{0, 0.5, 0.9, 1})
	want := []result.Quantile{{Fraction: 0, RTT: 10}, {Fraction: 0.5, RTT: 30}, {Fraction: 0.9, RTT: 46}, {Fraction: 1, RTT: 50}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("CDF mismatch (-want +got):\n%s", diff)
	}
	if !slices.Equal(rtts, orig) {
		t.Errorf("CDF modified its input: %v", rtts)
	}
	if CDF(nil, []float64{0.5}) != nil {
		t.Errorf("CDF of no samples is not nil")
	}
}

func TestFractions(t *testing.T) {
	if diff := cmp.Diff([]float64{0, 0.25, 0.5, 0.75, 1}, Fractions(4)); diff != "" {
		t.Errorf("Fractions(4) mismatch (-want +got):\n%s", diff)
	}
	if Fractions(0) != nil {
		t.Errorf("Fractions(0) is not nil")
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{5, 1, 3}
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{xs, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}, {nil, 0}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if !slices.Equal(xs, []float64{5, 1, 3}) {
		t.Errorf("Median sorted its argument: %v", xs)
	}
}
