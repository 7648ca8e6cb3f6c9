package udpgen

import "fmt"

// Trial is one measurement at an offered rate (payload bits per second; 0
// is unlimited), returning the loss in percent and the rate the sender
// really achieved.
type Trial func(rate float64) (lossPercent, achieved float64, err error)

// SearchResult is the highest rate found at or under a loss threshold.
type SearchResult struct {
	// Rate is the highest offered rate whose loss was at most the
	// threshold; 0 if none was.
	Rate float64
	// Tried are the offered rates in the order they were tried.
	Tried []float64
}

// Search looks for the highest offered rate in (lo, hi] whose loss stays
// at or under threshold percent, in the spirit of FD.io CSIT's NDR/PDR
// search: it tries hi first (the rate the path carried unlimited), then
// halves the interval steps times. lo is a rate known to pass (0 when none
// is). Every trial is also reported by the caller's Trial.
func Search(lo, hi, threshold float64, steps int, trial Trial) (SearchResult, error) {
	var res SearchResult
	if hi <= 0 {
		return res, fmt.Errorf("search: upper rate %v is not positive", hi)
	}
	try := func(rate float64) (bool, error) {
		res.Tried = append(res.Tried, rate)
		loss, _, err := trial(rate)
		if err != nil {
			return false, fmt.Errorf("search: trial at %.0f bit/s: %w", rate, err)
		}
		return loss <= threshold, nil
	}
	ok, err := try(hi)
	if err != nil {
		return res, err
	}
	if ok {
		res.Rate = hi
		return res, nil
	}
	res.Rate = lo
	for range steps {
		mid := (lo + hi) / 2
		ok, err := try(mid)
		if err != nil {
			return res, err
		}
		if ok {
			lo, res.Rate = mid, mid
		} else {
			hi = mid
		}
	}
	return res, nil
}
