package ovs

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// OVS's control socket and path waits keep the exit of the daemon in the
// error chain.
func TestDaemonExitThroughMethodWaits(t *testing.T) {
	ctx := context.Background()
	methodtest.CheckWaitsSeeExit(t, map[string]methodtest.DaemonWait{
		"ovs socket": func(p *method.Process, ep *testbed.Endpoint) error {
			return (&ovsSide{ep: ep}).waitSocket(ctx, p, filepath.Join(ep.Dir, "db.ctl"))
		},
		"ovs path": func(p *method.Process, ep *testbed.Endpoint) error {
			run := &ovsRun{datapath: "netdev", sides: []*ovsSide{{ep: ep, db: p, vsd: p}}}
			path := &method.Path{A: netip.MustParseAddr("10.0.0.1"), B: netip.MustParseAddr("10.0.0.2")}
			return NewOVSVXLAN().waitPath(ctx, &method.Env{A: ep, B: ep}, run, path)
		},
	})
}
