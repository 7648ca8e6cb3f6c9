package stats

import "math"

// Slope is a least-squares line's slope with the half-width of its 95%
// confidence interval (Student t, n-2 degrees of freedom).
type Slope struct {
	// N is the number of points fitted.
	N         int
	Slope     float64
	HalfWidth float64
}

// LogLogSlope fits log(y) = a + b log(x) by least squares over the
// points with x > 0 and y > 0 and returns b, the exponent of y's growth
// with x (1: y grows linearly; below 1: sublinearly; above: faster). ok
// is false without three such points at two distinct x, when the
// interval is undefined.
func LogLogSlope(xs, ys []float64) (s Slope, ok bool) {
	var lx, ly []float64
	for i := range min(len(xs), len(ys)) {
		if xs[i] > 0 && ys[i] > 0 {
			lx, ly = append(lx, math.Log(xs[i])), append(ly, math.Log(ys[i]))
		}
	}
	n := len(lx)
	if n < 3 {
		return Slope{}, false
	}
	var mx, my float64
	for i := range lx {
		mx, my = mx+lx[i], my+ly[i]
	}
	mx, my = mx/float64(n), my/float64(n)
	var sxx, sxy float64
	for i := range lx {
		sxx += (lx[i] - mx) * (lx[i] - mx)
		sxy += (lx[i] - mx) * (ly[i] - my)
	}
	if sxx == 0 {
		return Slope{}, false
	}
	b := sxy / sxx
	var sse float64
	for i := range lx {
		r := ly[i] - (my + b*(lx[i]-mx))
		sse += r * r
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	return Slope{N: n, Slope: b, HalfWidth: TQuantile(n-2) * se}, true
}
