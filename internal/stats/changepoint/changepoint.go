// Package changepoint finds the points where a series of measurements,
// in time order, shifts its mean: E-divisive means with a Student's
// t-test, the method of MongoDB's change-point detection as open-sourced
// in Hunter and Apache Otava.
//
// References:
//   - D. S. Matteson and N. A. James, "A Nonparametric Approach for
//     Multiple Change Point Analysis of Multivariate Data", JASA 109(505),
//     2014 (E-divisive: the energy statistic and binary segmentation).
//   - D. Daly et al., "The Use of Change Point Detection to Identify
//     Software Performance Regressions in a Continuous Integration
//     System", ICPE 2020 (its use on benchmark series, at MongoDB).
//   - M. Fleming et al., "Hunter: Using Change Point Detection to Hunt for
//     Performance Regressions", ICPE 2023, and Apache Otava
//     (otava/analysis.py): the permutation test replaced by Student's
//     t-test between the segments on either side of a candidate, and the
//     weakest candidate dropped until every one left passes.
//
// Detect works so: the series is split where the E-divisive statistic
// (the energy distance between the values before and after, weighted by
// the segments' sizes) is largest; the split is kept when a two-sample
// Student's t-test between the two segments gives p <= Options.MaxP, and
// each side is split the same way. Then, as Otava does, every change point
// is tested again against only its neighbouring segments, and the one with
// the largest p above MaxP is dropped until none is left. A change point
// is the index of the first value after the shift.
//
// DetectSamples does the same over points that are each the mean of
// repeated measurements: the means locate a change, and its t-test
// compares all the repetitions either side.
//
// Everything here is pure and deterministic; input is never modified.
package changepoint

import (
	"math"
	"slices"
	"sort"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Options tune Detect. The zero value uses the defaults.
type Options struct {
	// MaxP is the largest t-test p-value a change point may have; 0 means
	// DefaultMaxP.
	MaxP float64
	// MinSize is the fewest values a segment may hold; 0 means
	// DefaultMinSize.
	MinSize int
}

// Window is the longest stretch of a series searched at once; longer
// series are searched in windows that overlap by half (Hunter's windows
// are 50 values).
const Window = 64

// Defaults: Hunter and Otava use p <= 0.001. A segment needs three
// values for a t-test with any power on both sides.
const (
	DefaultMaxP    = 0.001
	DefaultMinSize = 3
)

// Point is a change point.
type Point struct {
	// Index is the first value after the change.
	Index int
	// P is the two-sided p-value of Student's t-test between the segments
	// on either side (bounded by the neighbouring change points).
	P float64
	// Before and After are the means of those segments.
	Before, After float64
	// NBefore and NAfter are their sizes.
	NBefore, NAfter int
}

// Change is (After-Before)/|Before|, the relative change; 0 when Before
// is 0.
func (p Point) Change() float64 {
	if p.Before == 0 {
		return 0
	}
	return (p.After - p.Before) / math.Abs(p.Before)
}

// Detect returns the change points of xs in index order.
func Detect(xs []float64, o Options) []Point {
	return detect(xs, nil, o)
}

// DetectSamples is Detect over series of repeated measurements: point i
// is the mean of samples[i], which locates the changes, and the t-test
// of a change compares every sample of the segments either side, so
// that more repetitions give a claim more power. A point without samples
// is skipped.
func DetectSamples(samples [][]float64, o Options) []Point {
	var xs []float64
	var kept [][]float64
	for _, s := range samples {
		if len(s) > 0 {
			xs = append(xs, mean(s))
			kept = append(kept, s)
		}
	}
	return detect(xs, kept, o)
}

// segmentTest is the t-test between xs[lo:mid] and xs[mid:hi], over
// samples when there are any.
func segmentTest(xs []float64, samples [][]float64, lo, mid, hi int) float64 {
	if samples == nil {
		return TTest(xs[lo:mid], xs[mid:hi])
	}
	return TTest(slices.Concat(samples[lo:mid]...), slices.Concat(samples[mid:hi]...))
}

func detect(xs []float64, samples [][]float64, o Options) []Point {
	if o.MaxP <= 0 {
		o.MaxP = DefaultMaxP
	}
	if o.MinSize < 2 {
		o.MinSize = DefaultMinSize
	}
	var idx []int
	if len(xs) <= Window {
		split(xs, samples, 0, len(xs), o, &idx)
	} else {
		// Long series in overlapping windows, as Hunter does: the search
		// stays quadratic in the window, not cubic in the series.
		seen := map[int]bool{}
		for lo := 0; lo < len(xs)-o.MinSize; lo += Window / 2 {
			var w []int
			split(xs, samples, lo, min(lo+Window, len(xs)), o, &w)
			for _, i := range w {
				if !seen[i] {
					seen[i] = true
					idx = append(idx, i)
				}
			}
		}
	}
	sort.Ints(idx)
	// Otava's pruning: test each candidate against its neighbours only,
	// drop the weakest above MaxP, repeat.
	for {
		pts := evaluate(xs, samples, idx)
		worst := -1
		for i, p := range pts {
			if p.P > o.MaxP && (worst < 0 || p.P > pts[worst].P) {
				worst = i
			}
		}
		if worst < 0 {
			return pts
		}
		idx = append(idx[:worst], idx[worst+1:]...)
	}
}

// split finds the best split of xs[lo:hi] and, when it passes the
// t-test, records it and splits both sides.
func split(xs []float64, samples [][]float64, lo, hi int, o Options, out *[]int) {
	if hi-lo < 2*o.MinSize {
		return
	}
	tau, _, ok := bestSplit(xs[lo:hi], o.MinSize)
	if !ok {
		return
	}
	if segmentTest(xs, samples, lo, lo+tau, hi) > o.MaxP {
		return
	}
	*out = append(*out, lo+tau)
	split(xs, samples, lo, lo+tau, o, out)
	split(xs, samples, lo+tau, hi, o, out)
}

// bestSplit returns the tau in [min, n-min] that maximises the E-divisive
// statistic
//
//	Q(tau) = (m(n-m)/n) * (2/(m(n-m)) sum|x_i-y_j| - 1/C(m,2) sum|x_i-x_k| - 1/C(n-m,2) sum|y_j-y_l|)
//
// with X = xs[:tau] (m values) and Y = xs[tau:] (alpha = 1), and that Q.
//
// Each of the three sums of each tau adds the same terms in the same
// order as the plain triple loop (bestSplitReference in the tests), so Q
// is the same to the last bit; but the distances |x_i-x_j| are computed
// once, and the sums of splitBlock taus are added up side by side, so
// that the processor overlaps their additions rather than wait for each.
func bestSplit(xs []float64, min int) (int, float64, bool) {
	n := len(xs)
	// d[i*n+j] = |xs[i]-xs[j]|; n is at most a window (Window values) or
	// a short series' length.
	buf := distances.Get().(*[]float64)
	defer distances.Put(buf)
	if cap(*buf) < n*n {
		*buf = make([]float64, n*n)
	}
	d := (*buf)[:n*n]
	for i, x := range xs {
		row := d[i*n : (i+1)*n]
		for j, y := range xs {
			row[j] = math.Abs(x - y)
		}
	}
	best, bestQ := -1, math.Inf(-1)
	for t0 := min; t0 <= n-min; t0 += splitBlock {
		// The taus t0 .. last, kk of them; k indexes them.
		kk := splitBlock
		if n-min-t0+1 < kk {
			kk = n - min - t0 + 1
		}
		last := t0 + kk - 1
		var between, within1, within2 [splitBlock]float64
		// Rows i < tau: within1 adds row[i+1:tau], between row[tau:n].
		for i := range last {
			row := d[i*n : (i+1)*n]
			kmin := 0 // the taus above i
			if i+1 > t0 {
				kmin = i + 1 - t0
			}
			lo := t0 + kmin
			all := kk == splitBlock && kmin == 0
			if all {
				within1[0], within1[1], within1[2], within1[3] = add4(within1[0], within1[1], within1[2], within1[3], row[i+1:lo])
			} else {
				for _, v := range row[i+1 : lo] {
					for k := kmin; k < kk; k++ {
						within1[k] += v
					}
				}
			}
			for p := lo; p < last; p++ {
				for k := kmin; k < kk; k++ {
					if p < t0+k {
						within1[k] += row[p]
					} else {
						between[k] += row[p]
					}
				}
			}
			if all {
				between[0], between[1], between[2], between[3] = add4(between[0], between[1], between[2], between[3], row[last:])
			} else {
				for _, v := range row[last:] {
					for k := kmin; k < kk; k++ {
						between[k] += v
					}
				}
			}
		}
		// Rows j >= tau: within2 adds row[j+1:n].
		for j := t0; j < n; j++ {
			seg := d[j*n+j+1 : (j+1)*n]
			kmax := kk // the taus at or below j
			if j-t0+1 < kmax {
				kmax = j - t0 + 1
			}
			if kmax == splitBlock {
				within2[0], within2[1], within2[2], within2[3] = add4(within2[0], within2[1], within2[2], within2[3], seg)
				continue
			}
			for _, v := range seg {
				for k := range kmax {
					within2[k] += v
				}
			}
		}
		for k := range kk {
			t := t0 + k
			m, r := float64(t), float64(n-t)
			e := 2*between[k]/(m*r) - within1[k]/(m*(m-1)/2) - within2[k]/(r*(r-1)/2)
			q := m * r / (m + r) * e
			if q > bestQ {
				best, bestQ = t, q
			}
		}
	}
	return best, bestQ, best >= 0
}

// distances keeps bestSplit's distance matrices for reuse: a long series
// is searched in many windows.
var distances = sync.Pool{New: func() any { return new([]float64) }}

// splitBlock is how many taus bestSplit sums side by side (add4).
const splitBlock = 4

// add4 adds every value of vs to each of four sums, in order.
func add4(a, b, c, d float64, vs []float64) (float64, float64, float64, float64) {
	for _, v := range vs {
		a += v
		b += v
		c += v
		d += v
	}
	return a, b, c, d
}

// evaluate computes each change point's t-test against the segments
// bounded by its neighbours in idx (sorted).
func evaluate(xs []float64, samples [][]float64, idx []int) []Point {
	pts := make([]Point, 0, len(idx))
	for i, c := range idx {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = idx[i-1]
		}
		if i+1 < len(idx) {
			hi = idx[i+1]
		}
		a, b := xs[lo:c], xs[c:hi]
		pts = append(pts, Point{Index: c, P: segmentTest(xs, samples, lo, c, hi), Before: mean(a), After: mean(b), NBefore: len(a), NAfter: len(b)})
	}
	return pts
}

// TTest is the two-sided p-value of Student's two-sample t-test (pooled
// variance) that a and b have the same mean. Fewer than two values on a
// side gives 1; two constant, different sides give 0.
func TTest(a, b []float64) float64 {
	na, nb := len(a), len(b)
	if na < 2 || nb < 2 {
		return 1
	}
	ma, mb := mean(a), mean(b)
	var ss float64
	for _, x := range a {
		ss += (x - ma) * (x - ma)
	}
	for _, x := range b {
		ss += (x - mb) * (x - mb)
	}
	df := float64(na + nb - 2)
	se := math.Sqrt(ss / df * (1/float64(na) + 1/float64(nb)))
	if se == 0 {
		if ma == mb {
			return 1
		}
		return 0
	}
	t := math.Abs(ma-mb) / se
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
