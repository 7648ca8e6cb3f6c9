package stats

import (
	"math"
	"testing"
)

// TestLogLogSlope: set-up times that grow linearly, as the square root
// and quadratically with the tunnel count give slopes 1, 0.5 and 2; noise
// widens the interval around the true slope; too few points give none.
func TestLogLogSlope(t *testing.T) {
	ns := []float64{10, 10, 100, 100, 1000, 1000}
	for _, tc := range []struct {
		name string
		f    func(n float64) float64
		want float64
	}{
		{"linear", func(n float64) float64 { return 0.004 * n }, 1},
		{"square root", func(n float64) float64 { return 0.3 * math.Sqrt(n) }, 0.5},
		{"quadratic", func(n float64) float64 { return 1e-6 * n * n }, 2},
	} {
		var ys []float64
		for _, n := range ns {
			ys = append(ys, tc.f(n))
		}
		s, ok := LogLogSlope(ns, ys)
		if !ok || math.Abs(s.Slope-tc.want) > 1e-9 || s.HalfWidth > 1e-9 || s.N != 6 {
			t.Errorf("%s: %+v, %v; want slope %g with no spread", tc.name, s, ok, tc.want)
		}
	}
	// Linear with ±5% noise: the interval holds 1 and is not wide.
	ys := []float64{0.038, 0.042, 0.41, 0.39, 4.1, 3.9}
	s, ok := LogLogSlope(ns, ys)
	if !ok || s.Slope-s.HalfWidth > 1 || s.Slope+s.HalfWidth < 1 || s.HalfWidth > 0.1 {
		t.Errorf("noisy linear: %+v, %v; want an interval around 1 narrower than ±0.1", s, ok)
	}
	if _, ok := LogLogSlope([]float64{10, 100}, []float64{1, 10}); ok {
		t.Error("two points gave a slope with an interval")
	}
	if _, ok := LogLogSlope([]float64{10, 10, 10}, []float64{1, 2, 3}); ok {
		t.Error("one x value gave a slope")
	}
}
