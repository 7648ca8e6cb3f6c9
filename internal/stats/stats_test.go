package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSummarizeKnownValues(t *testing.T) {
	tests := []struct {
		name         string
		xs           []float64
		mean, sd, hw float64
		cv           float64
		wantUnstable bool
	}{
		// Textbook set: population sd 2, sample sd sqrt(32/7).
		{"eight", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 2.13809, 2.364624 * 2.13809 / math.Sqrt(8), 2.13809 / 5, true},
		// n=3: t(0.975, 2) = 4.303.
		{"three", []float64{1, 2, 3}, 2, 1, 4.302653 / math.Sqrt(3), 0.5, true},
		// Five throughput runs in Gbit/s with 1% spread.
		{"steady", []float64{10.0, 10.1, 9.9, 10.0, 10.0}, 10, 0.0707107, 2.776445 * 0.0707107 / math.Sqrt(5), 0.00707107, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.xs)
			if s.N != len(tc.xs) || !s.HasCI {
				t.Fatalf("N = %d, HasCI = %v; want %d, true", s.N, s.HasCI, len(tc.xs))
			}
			if !near(s.Mean, tc.mean, 1e-9) {
				t.Errorf("Mean = %v, want %v", s.Mean, tc.mean)
			}
			if !near(s.StdDev, tc.sd, 1e-5) {
				t.Errorf("StdDev = %v, want %v", s.StdDev, tc.sd)
			}
			if !near(s.HalfWidth, tc.hw, 1e-4) {
				t.Errorf("HalfWidth = %v, want %v", s.HalfWidth, tc.hw)
			}
			if !near(s.CI95Low, tc.mean-tc.hw, 1e-4) || !near(s.CI95High, tc.mean+tc.hw, 1e-4) {
				t.Errorf("CI = [%v, %v], want [%v, %v]", s.CI95Low, s.CI95High, tc.mean-tc.hw, tc.mean+tc.hw)
			}
			if !near(s.CV, tc.cv, 1e-5) {
				t.Errorf("CV = %v, want %v", s.CV, tc.cv)
			}
			if s.Unstable() != tc.wantUnstable {
				t.Errorf("Unstable() = %v, want %v (CV %v)", s.Unstable(), tc.wantUnstable, s.CV)
			}
		})
	}
}

func TestTQuantileTable(t *testing.T) {
	// Two-sided 95% critical values from a printed t table.
	table := map[int]float64{1: 12.706, 2: 4.303, 4: 2.776, 9: 2.262, 29: 2.045, 1000: 1.962}
	for df, want := range table {
		if got := TQuantile(df); !near(got, want, 5e-4) {
			t.Errorf("TQuantile(%d) = %.4f, want %.3f", df, got, want)
		}
	}
}

func TestSummarizeTooFewValues(t *testing.T) {
	for _, xs := range [][]float64{nil, {}, {7.5}} {
		s := Summarize(xs)
		if s.HasCI || s.HalfWidth != 0 || s.StdDev != 0 || s.CV != 0 || s.Unstable() {
			t.Errorf("Summarize(%v) = %+v: want no CI, no spread, not unstable", xs, s)
		}
		if len(xs) == 1 && (s.Mean != 7.5 || s.CI95Low != 7.5 || s.CI95High != 7.5) {
			t.Errorf("Summarize(%v) = %+v: want mean and bounds 7.5", xs, s)
		}
		// A summary is stored as JSON, which cannot hold NaN.
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("Summarize(%v) does not encode as JSON: %v", xs, err)
		}
	}
}

func TestSummarizeZeroMean(t *testing.T) {
	s := Summarize([]float64{-1, 1})
	if s.CV != 0 || s.Mean != 0 || !s.HasCI {
		t.Errorf("Summarize([-1 1]) = %+v: want mean 0, CV 0, a CI", s)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("zero-mean summary does not encode as JSON: %v", err)
	}
}

func randomSample(r *rand.Rand, n int, mean, sd float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mean + sd*r.NormFloat64()
	}
	return xs
}

func TestSummarizeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		n := 2 + r.IntN(30)
		xs := randomSample(r, n, 100*r.Float64(), 1+10*r.Float64())
		s := Summarize(xs)
		if !(s.CI95Low <= s.Mean && s.Mean <= s.CI95High) {
			t.Fatalf("case %d: mean %v outside CI [%v, %v]", i, s.Mean, s.CI95Low, s.CI95High)
		}
		// Spreading the values k times around their mean widens the CI k times.
		k := 1 + 4*r.Float64()
		wide := make([]float64, n)
		for j, x := range xs {
			wide[j] = s.Mean + k*(x-s.Mean)
		}
		w := Summarize(wide)
		if !near(w.HalfWidth, k*s.HalfWidth, 1e-9*(1+w.HalfWidth)) || !(w.HalfWidth > s.HalfWidth) {
			t.Fatalf("case %d: spread x%.2f gave half-width %v from %v", i, k, w.HalfWidth, s.HalfWidth)
		}
		// Shifting all values moves the CI and keeps the spread.
		shifted := make([]float64, n)
		for j, x := range xs {
			shifted[j] = x + 1000
		}
		sh := Summarize(shifted)
		if !near(sh.StdDev, s.StdDev, 1e-9*(1+s.StdDev)) || !near(sh.CI95Low, s.CI95Low+1000, 1e-6) {
			t.Fatalf("case %d: shift changed spread: %+v vs %+v", i, sh, s)
		}
	}
}

// The interval is honest if about 95% of intervals from independent
// samples contain the true mean, even for small n where a normal
// approximation would cover far less.
func TestCICoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const trials, n, trueMean = 4000, 4, 10.0
	hits := 0
	for range trials {
		s := Summarize(randomSample(r, n, trueMean, 2))
		if s.CI95Low <= trueMean && trueMean <= s.CI95High {
			hits++
		}
	}
	if cov := float64(hits) / trials; cov < 0.935 || cov > 0.965 {
		t.Errorf("coverage of 95%% CI with n=%d is %.3f, want about 0.95", n, cov)
	}
}
