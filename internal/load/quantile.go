package load

import (
	"math"
	"slices"

	"github.com/tunbench/tunbench/internal/result"
)

// cdfFractions are the quantile points kept for a full distribution: every
// percentile from 0 to 100 plus the tail points sockperf itself prints.
var cdfFractions = func() []float64 {
	f := make([]float64, 0, 104)
	for i := 0; i <= 100; i++ {
		f = append(f, float64(i)/100)
	}
	f = append(f, 0.999, 0.9999, 0.99999)
	slices.Sort(f)
	return f
}()

// quantile returns the q-quantile (0 <= q <= 1) of sorted, non-empty data
// with sockperf's rule, index = (int)(0.5 + q*n) - 1, so figures computed
// from a full log equal the ones sockperf prints. q = 0 is the minimum,
// q = 1 the maximum.
func quantile(sorted []float64, q float64) float64 {
	i := int(0.5+q*float64(len(sorted))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// fromSamples fills the distribution fields of l from RTT samples in µs.
// It sorts rtts in place.
func fromSamples(l *result.Latency, rtts []float64) {
	slices.Sort(rtts)
	var sum float64
	for _, v := range rtts {
		sum += v
	}
	n := float64(len(rtts))
	mean := sum / n
	var sq float64
	for _, v := range rtts {
		sq += (v - mean) * (v - mean)
	}
	l.Samples = int64(len(rtts))
	l.Mean = mean
	if len(rtts) > 1 {
		// Sample standard deviation, as sockperf prints it.
		l.StdDev = math.Sqrt(sq / (n - 1))
	}
	l.Min = rtts[0]
	l.Max = rtts[len(rtts)-1]
	l.P50 = quantile(rtts, 0.50)
	l.P90 = quantile(rtts, 0.90)
	l.P99 = quantile(rtts, 0.99)
	l.CDF = make([]result.Quantile, 0, len(cdfFractions))
	for _, f := range cdfFractions {
		l.CDF = append(l.CDF, result.Quantile{Fraction: f, RTT: quantile(rtts, f)})
	}
}
