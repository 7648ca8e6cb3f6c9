package openvpn

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// OpenVPN's start and client waits keep the exit of the daemon in the
// error chain.
func TestDaemonExitThroughMethodWaits(t *testing.T) {
	ctx := context.Background()
	methodtest.CheckWaitsSeeExit(t, map[string]methodtest.DaemonWait{
		"openvpn init": func(p *method.Process, ep *testbed.Endpoint) error { return ovpnWaitInit(ctx, ep, p, ovpnInitTimeout) },
		"openvpn client": func(p *method.Process, ep *testbed.Endpoint) error {
			_, err := ovpnWaitClient(ctx, ep, p, filepath.Join(ep.Dir, "status"), "AES-256-GCM")
			return err
		},
	})
}
