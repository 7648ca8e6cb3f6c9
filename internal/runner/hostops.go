package runner

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Device operations run where the endpoint is (testbed ops): in its
// namespace here, or in the agent on a remote host.

type featuresArgs struct {
	Dev string
	Set map[string]bool
}

// featuresResult separates what a device cannot change (recorded) from
// real failures (returned as the op's error).
type featuresResult struct{ NotApplied []string }

var (
	opSetOffloads = testbed.NewOp("nic.offloads", func(_ context.Context, ep *testbed.Endpoint, a featuresArgs) (struct{}, error) {
		return struct{}{}, nic.SetOffloads(ep.NS, a.Dev, a.Set["all"])
	})
	opSetFeatures = testbed.NewOp("nic.features", func(_ context.Context, ep *testbed.Endpoint, a featuresArgs) (featuresResult, error) {
		var r featuresResult
		err := nic.SetFeatures(ep.NS, a.Dev, a.Set)
		if err == nil {
			return r, nil
		}
		var rest []error
		for _, e := range unjoin(err) {
			var fe *nic.FeatureError
			if errors.As(e, &fe) {
				r.NotApplied = append(r.NotApplied, fe.Error())
			} else {
				rest = append(rest, e)
			}
		}
		return r, errors.Join(rest...)
	})
	opDescribe = testbed.NewOp("nic.describe", func(_ context.Context, ep *testbed.Endpoint, a describeArgs) ([]result.Device, error) {
		if a.Prefix == "" {
			return nic.DescribeAll(ep.NS, a.Side)
		}
		return nic.DescribeExcept(ep.NS, a.Side, func(name string) bool {
			return strings.HasPrefix(name, a.Prefix) && !slices.Contains(a.Keep, name)
		})
	})
	opSpeed = testbed.NewOp("nic.speed", func(_ context.Context, ep *testbed.Endpoint, dev string) (nic.LinkSpeed, error) {
		return nic.Speed(ep.NS, dev)
	})
)

// describeArgs are what opDescribe describes on a side: every device but
// loopback, or, with Prefix set, every device but those named Prefix...
// that are not in Keep (a scaled cell's other tunnels' devices).
type describeArgs struct {
	Side   string   `json:"side"`
	Prefix string   `json:"prefix,omitempty"`
	Keep   []string `json:"keep,omitempty"`
}

// setOffloads switches TSO, GSO and GRO of dev on ep on or off.
func setOffloads(ep *testbed.Endpoint, dev string, on bool) error {
	_, err := opSetOffloads.Call(context.Background(), ep, featuresArgs{Dev: dev, Set: map[string]bool{"all": on}})
	return err
}
