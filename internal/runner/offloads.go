package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// applyOffloadSet sets a named feature set on every device of the path:
// the underlay veth and the method's devices on both sides. A feature a
// device cannot change (fixed, or refused by the driver) is returned in
// notApplied, to be recorded; an unknown feature name is an error.
func applyOffloadSet(tb *testbed.Pair, path *method.Path, set map[string]bool) (notApplied []string, err error) {
	for _, ep := range tb.Endpoints() {
		devs := []string{ep.Dev}
		for _, d := range path.Devices[ep.Side] {
			if !slices.Contains(devs, d) {
				devs = append(devs, d)
			}
		}
		for _, dev := range devs {
			r, err := opSetFeatures.Call(context.Background(), ep, featuresArgs{Dev: dev, Set: set})
			for _, n := range r.NotApplied {
				notApplied = append(notApplied, ep.Side+": "+n)
			}
			if err != nil {
				return notApplied, fmt.Errorf("apply offload set on %s %s: %w", ep.Side, dev, err)
			}
		}
	}
	return notApplied, nil
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
