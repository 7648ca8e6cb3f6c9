package summary

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/tunbench/tunbench/internal/stats"
)

// Figure is one quantity summarised over repetitions, in Unit.
type Figure struct {
	Unit string
	stats.Summary
}

// IsZero reports whether nothing was measured; such figures are omitted
// from JSON.
func (f Figure) IsZero() bool { return f.N == 0 }

// MarshalJSON writes the figure with its unit. Spread and interval are
// written only when defined (n >= 2). Values are rounded to 6 significant
// digits: no measurement here is better than that.
func (f Figure) MarshalJSON() ([]byte, error) {
	type spread struct {
		StdDev    float64 `json:"stddev"`
		CI95Low   float64 `json:"ci95_low"`
		CI95High  float64 `json:"ci95_high"`
		HalfWidth float64 `json:"ci95_half_width"`
		CVPercent float64 `json:"cv_percent"`
		Unstable  bool    `json:"unstable"`
	}
	out := struct {
		Unit string  `json:"unit"`
		N    int     `json:"n"`
		Mean float64 `json:"mean"`
		*spread
	}{Unit: f.Unit, N: f.N, Mean: Round6(f.Mean)}
	if f.HasCI {
		out.spread = &spread{
			StdDev:    Round6(f.StdDev),
			CI95Low:   Round6(f.CI95Low),
			CI95High:  Round6(f.CI95High),
			HalfWidth: Round6(f.HalfWidth),
			CVPercent: Round6(100 * f.CV),
			Unstable:  f.Unstable(),
		}
	}
	return json.Marshal(out)
}

// Round6 rounds to 6 significant digits, keeping exports stable across
// platforms whose floating point differs in the last bits.
func Round6(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return r
}
