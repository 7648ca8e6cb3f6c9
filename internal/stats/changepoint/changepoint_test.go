package changepoint

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// series returns n values around level 100 with noise of cv, the level
// multiplied by factor[i] from change[i] on.
func series(r *rand.Rand, n int, cv float64, change []int, factor []float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		level := 100.0
		for k, c := range change {
			if i >= c {
				level *= factor[k]
			}
		}
		xs[i] = level * (1 + cv*r.NormFloat64())
	}
	return xs
}

func TestOneChangeAtTheRightIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := series(r, 20, 0.03, []int{12}, []float64{0.7})
	pts := Detect(xs, Options{})
	if len(pts) != 1 || pts[0].Index != 12 {
		t.Fatalf("change points %+v, want one at 12", pts)
	}
	if c := pts[0].Change(); c > -0.25 || c < -0.35 {
		t.Errorf("change %.3f, want about -0.30", c)
	}
	if pts[0].P > DefaultMaxP || pts[0].NBefore != 12 || pts[0].NAfter != 8 {
		t.Errorf("point %+v", pts[0])
	}
}

// The real-run test's shape: three runs, then three at a quarter.
func TestShortSeriesQuarterRate(t *testing.T) {
	xs := []float64{16.1, 14.2, 17.5, 4.1, 3.9, 4.3}
	pts := Detect(xs, Options{})
	if len(pts) != 1 || pts[0].Index != 3 {
		t.Fatalf("change points %+v, want one at 3", pts)
	}
}

// TestNoChangeInNoise: the best split of pure noise is tested after it
// was chosen as the best, so p <= 0.001 is passed more often than once
// in a thousand; over 200 series of 40 values (CV 10%) few may raise an
// alarm.
func TestNoChangeInNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alarms := 0
	for range 200 {
		xs := series(r, 40, 0.10, nil, nil)
		if pts := Detect(xs, Options{}); len(pts) != 0 {
			alarms++
		}
	}
	t.Logf("%d of 200 series of pure noise show a change point", alarms)
	if alarms > 6 {
		t.Errorf("%d of 200 series of pure noise show a change point, want at most 3%%", alarms)
	}
}

func TestTooShort(t *testing.T) {
	if pts := Detect([]float64{1, 1, 10, 10, 10}, Options{}); len(pts) != 0 {
		t.Fatalf("change points %+v in 5 values with MinSize 3", pts)
	}
	if pts := Detect(nil, Options{}); len(pts) != 0 {
		t.Fatalf("change points %+v in nothing", pts)
	}
}

// TestPrecisionRecall runs Detect over 200 synthetic series with known
// shifts (0 to 3 per series, each 15% to 50% up or down, segments of at
// least 8 values, noise CV 5%) and counts a detection within one index
// of a true change as found. docs/results.md states the figures.
func TestPrecisionRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var tp, fp, fn int
	for range 200 {
		n := 40 + r.IntN(80)
		k := r.IntN(4)
		var change []int
		var factor []float64
		for c := 0; len(change) < k && c < 20; c++ {
			at := 8 + r.IntN(n-16)
			ok := true
			for _, o := range change {
				if at-o < 8 && o-at < 8 {
					ok = false
				}
			}
			if !ok {
				continue
			}
			change = append(change, at)
			f := 1 + 0.15 + 0.35*r.Float64()
			if r.IntN(2) == 0 {
				f = 1 / f
			}
			factor = append(factor, f)
		}
		xs := series(r, n, 0.05, change, factor)
		found := map[int]bool{}
		for _, p := range Detect(xs, Options{}) {
			hit := false
			for _, c := range change {
				if p.Index-c <= 1 && c-p.Index <= 1 && !found[c] {
					found[c], hit = true, true
					break
				}
			}
			if hit {
				tp++
			} else {
				fp++
			}
		}
		fn += len(change) - len(found)
	}
	precision := float64(tp) / float64(tp+fp)
	recall := float64(tp) / float64(tp+fn)
	t.Logf("true %d, false %d, missed %d: precision %.3f, recall %.3f", tp, fp, fn, precision, recall)
	if precision < 0.95 || recall < 0.95 {
		t.Errorf("precision %.3f, recall %.3f: want both >= 0.95", precision, recall)
	}
}

func TestLongSeriesWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	xs := series(r, 1000, 0.05, []int{300, 700}, []float64{0.7, 1.5})
	pts := Detect(xs, Options{})
	if len(pts) != 2 || pts[0].Index < 299 || pts[0].Index > 301 || pts[1].Index < 699 || pts[1].Index > 701 {
		t.Fatalf("change points %+v, want about 300 and 700", pts)
	}
}

func BenchmarkDetect10000(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	xs := series(r, 10000, 0.05, []int{3000, 7000}, []float64{0.7, 1.5})
	for b.Loop() {
		Detect(xs, Options{})
	}
}

// The real-run test's shape with its repetitions: three noisy runs of two
// repetitions, then three at a quarter. Over the run means alone
// (p = 0.0035) the change would not be claimed at p <= 0.001; over the
// twelve repetitions it is.
func TestSamplesGivePower(t *testing.T) {
	samples := [][]float64{{7.4, 45.2}, {37.9, 38.0}, {34.5, 48.5}, {7.2, 7.9}, {5.7, 8.3}, {5.1, 8.4}}
	var means []float64
	for _, s := range samples {
		means = append(means, (s[0]+s[1])/2)
	}
	if pts := Detect(means, Options{}); len(pts) != 0 {
		t.Errorf("over the means: %+v, want none at p <= 0.001", pts)
	}
	pts := DetectSamples(samples, Options{})
	if len(pts) != 1 || pts[0].Index != 3 || pts[0].P > DefaultMaxP {
		t.Fatalf("over the repetitions: %+v, want one at 3", pts)
	}
}

// bestSplitReference is bestSplit as first written, term by term: the
// distance-matrix version must give the same split and statistic.
func bestSplitReference(xs []float64, min int) (int, float64, bool) {
	n := len(xs)
	best, bestQ := -1, math.Inf(-1)
	for tau := min; tau <= n-min; tau++ {
		var between, within1, within2 float64
		for i := range tau {
			for j := tau; j < n; j++ {
				between += math.Abs(xs[i] - xs[j])
			}
			for k := i + 1; k < tau; k++ {
				within1 += math.Abs(xs[i] - xs[k])
			}
		}
		for j := tau; j < n; j++ {
			for l := j + 1; l < n; l++ {
				within2 += math.Abs(xs[j] - xs[l])
			}
		}
		m, r := float64(tau), float64(n-tau)
		e := 2*between/(m*r) - within1/(m*(m-1)/2) - within2/(r*(r-1)/2)
		q := m * r / (m + r) * e
		if q > bestQ {
			best, bestQ = tau, q
		}
	}
	return best, bestQ, best >= 0
}

// TestBestSplitSameAsReference: the same split on noisy series, steps,
// constant series (every statistic ties) and series of repeated values,
// and the same detected points.
func TestBestSplitSameAsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var cases [][]float64
	for n := 6; n <= Window; n += 7 {
		cases = append(cases, series(r, n, 0.05, nil, nil), series(r, n, 0.05, []int{n / 2}, []float64{0.8}),
			slices.Repeat([]float64{3.25}, n))
		rep := make([]float64, n)
		for i := range rep {
			rep[i] = float64(r.IntN(3))
		}
		cases = append(cases, rep)
	}
	for n := 1; n <= Window; n++ {
		cases = append(cases, series(r, n, 0.05, nil, nil))
	}
	for _, xs := range cases {
		for _, min := range []int{2, DefaultMinSize, 4, 5} {
			tau, q, ok := bestSplit(xs, min)
			wantTau, wantQ, wantOK := bestSplitReference(xs, min)
			if tau != wantTau || math.Float64bits(q) != math.Float64bits(wantQ) || ok != wantOK {
				t.Errorf("bestSplit(%v, %d) = %d, %v, %v; the reference %d, %v, %v", xs, min, tau, q, ok, wantTau, wantQ, wantOK)
			}
		}
	}
}
