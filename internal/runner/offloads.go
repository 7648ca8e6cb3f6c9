package runner

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/testbed"
)

// applyOffloadSet sets a named feature set on every device of the path:
// the underlay veth and the method's devices on both sides. A feature a
// device cannot change (fixed, or refused by the driver) is returned in
// notApplied, to be recorded; an unknown feature name is an error.
func applyOffloadSet(tb *testbed.Local, path *method.Path, set map[string]bool) (notApplied []string, err error) {
	for _, ep := range tb.Endpoints() {
		devs := []string{ep.Dev}
		for _, d := range path.Devices[ep.Side] {
			if !slices.Contains(devs, d) {
				devs = append(devs, d)
			}
		}
		for _, dev := range devs {
			err := nic.SetFeatures(ep.NS, dev, set)
			if err == nil {
				continue
			}
			var rest []error
			for _, e := range unjoin(err) {
				var fe *nic.FeatureError
				if errors.As(e, &fe) {
					notApplied = append(notApplied, ep.Side+": "+fe.Error())
				} else {
					rest = append(rest, e)
				}
			}
			if len(rest) > 0 {
				return notApplied, fmt.Errorf("apply offload set on %s %s: %w", ep.Side, dev, errors.Join(rest...))
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
