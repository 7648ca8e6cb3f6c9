// Package stats summarises repeated measurements honestly: mean, sample
// standard deviation, a 95% confidence interval from Student's t, and the
// coefficient of variation used to flag unstable cells. It also computes
// quantiles and CDF points for latency distributions.
//
// Everything here is pure and deterministic, and input slices are never
// modified. A Summary never contains NaN or infinities for finite input (so
// it encodes as JSON): where a figure is undefined, a flag says so
// (Summary.HasCI) and the figure is zero or equal to the mean, as documented
// on each field. Quantile of no values is NaN; CDF of no values is nil.
package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// CVFlagThreshold is the coefficient of variation above which a set of
// repetitions is flagged unstable: a spread of more than 10% of the mean
// means single runs cannot be compared with one another.
const CVFlagThreshold = 0.10

// Confidence is the two-sided confidence level of Summary's interval.
const Confidence = 0.95

// Summary describes a set of repeated measurements of one quantity.
// The zero value is the summary of no measurements.
type Summary struct {
	N    int
	Mean float64
	// StdDev is the sample standard deviation (divisor n-1); 0 when N < 2.
	StdDev float64
	// HasCI is true when N >= 2. With fewer values the confidence interval
	// is undefined: then HalfWidth is 0 and CI95Low = CI95High = Mean, which
	// must not be read as an exact figure.
	HasCI bool
	// HalfWidth is t(0.975, N-1) * StdDev / sqrt(N), the half-width of the
	// 95% confidence interval of the mean.
	HalfWidth float64
	CI95Low   float64
	CI95High  float64
	// CV is the coefficient of variation StdDev/|Mean|; 0 when Mean is 0 or
	// N < 2.
	CV float64
}

// Summarize returns the summary of xs. Values must be finite; NaN or
// infinite input gives non-finite results.
func Summarize(xs []float64) Summary {
	n := len(xs)
	if n == 0 {
		return Summary{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	s := Summary{N: n, Mean: mean, CI95Low: mean, CI95High: mean}
	if n < 2 {
		return s
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	s.StdDev = math.Sqrt(ss / float64(n-1))
	s.HasCI = true
	s.HalfWidth = TQuantile(n-1) * s.StdDev / math.Sqrt(float64(n))
	s.CI95Low = mean - s.HalfWidth
	s.CI95High = mean + s.HalfWidth
	if mean != 0 {
		s.CV = s.StdDev / math.Abs(mean)
	}
	return s
}

// Unstable reports whether the spread is too large to trust the mean:
// CV above CVFlagThreshold. With fewer than two values spread is unknown and
// Unstable is false; check N as well.
func (s Summary) Unstable() bool {
	return s.CV > CVFlagThreshold
}

// TQuantile returns the two-sided 95% critical value of Student's t
// distribution with df degrees of freedom (4.303 for df = 2). It panics if
// df < 1.
func TQuantile(df int) float64 {
	if df < 1 {
		panic("stats: t quantile needs at least one degree of freedom")
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	return t.Quantile(1 - (1-Confidence)/2)
}
