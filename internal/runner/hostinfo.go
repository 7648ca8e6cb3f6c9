package runner

import (
	"context"
	"sync"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// opHostInfo collects a host's metadata where it runs.
var opHostInfo = testbed.NewOp("host.info", func(ctx context.Context, _ *testbed.Endpoint, _ struct{}) (result.Host, error) {
	return hostinfo.Collect(ctx, hostinfo.ExecRunner{})
})

// hostInfos caches each remote host's metadata for the process's life:
// a host does not change during a run.
var hostInfos sync.Map // run id + "/" + host -> result.Host

// remoteHosts returns the metadata of the pair's hosts when they are not
// this machine (whose metadata is the run's).
func remoteHosts(ctx context.Context, runID string, tb *testbed.Pair) []result.Host {
	var hs []result.Host
	for _, ep := range tb.Endpoints() {
		if ep.Local() {
			continue
		}
		key := runID + "/" + ep.Host
		h, ok := hostInfos.Load(key)
		if !ok {
			info, err := opHostInfo.Call(ctx, ep, struct{}{})
			if err != nil {
				info = result.Host{Hostname: "unknown: " + err.Error()}
			}
			hostInfos.Store(key, info)
			h = info
		}
		info := h.(result.Host)
		info.Site, info.Side = ep.Host, ep.Side
		hs = append(hs, info)
	}
	return hs
}
