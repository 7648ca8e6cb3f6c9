package stats

import (
	"math"
	"slices"

	"github.com/tunbench/tunbench/internal/result"
)

// Quantile returns the q-quantile (0 <= q <= 1) of sorted, which must be in
// ascending order, by linear interpolation between the two nearest ranks
// (Hyndman and Fan type 7, the default of R and NumPy): Quantile(s, 0) is the
// minimum, Quantile(s, 1) the maximum, Quantile(s, 0.5) the median.
// It returns NaN for an empty slice and panics if q is outside [0, 1].
func Quantile(sorted []float64, q float64) float64 {
	if !(q >= 0 && q <= 1) {
		panic("stats: quantile fraction outside [0, 1]")
	}
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// Median returns the median of xs, which need not be sorted and is not
// modified: the middle value, or the mean of the two middle ones; 0 for an
// empty slice.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantile(s, 0.5)
}

// CDF returns one point of the cumulative distribution of xs per fraction,
// in the order given: the value below which that fraction of xs lies. xs
// need not be sorted and is not modified. It returns nil when xs is empty,
// and panics if a fraction is outside [0, 1].
func CDF(xs []float64, fractions []float64) []result.Quantile {
	if len(xs) == 0 {
		return nil
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	out := make([]result.Quantile, len(fractions))
	for i, f := range fractions {
		out[i] = result.Quantile{Fraction: f, RTT: Quantile(sorted, f)}
	}
	return out
}

// Fractions returns n+1 evenly spaced fractions 0, 1/n, ..., 1, enough to
// draw a CDF with n steps. It returns nil if n < 1.
func Fractions(n int) []float64 {
	if n < 1 {
		return nil
	}
	out := make([]float64, n+1)
	for i := range out {
		out[i] = float64(i) / float64(n)
	}
	out[n] = 1
	return out
}
