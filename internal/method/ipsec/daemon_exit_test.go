package ipsec

import (
	"context"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// charon's CHILD_SA and TUN device waits keep the exit of the daemon in
// the error chain.
func TestDaemonExitThroughMethodWaits(t *testing.T) {
	ctx := context.Background()
	methodtest.CheckWaitsSeeExit(t, map[string]methodtest.DaemonWait{
		"charon child sa": func(p *method.Process, ep *testbed.Endpoint) error {
			_, err := (&charon{ep: ep, proc: p}).waitInstalled(ctx, "net")
			return err
		},
		"charon tun": func(p *method.Process, ep *testbed.Endpoint) error {
			_, err := (&charon{ep: ep, proc: p}).tunDevice(ctx)
			return err
		},
	})
}
