package runner

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// opHostInfo collects a host's metadata where it runs.
var opHostInfo = testbed.NewOp("host.info", func(ctx context.Context, _ *testbed.Endpoint, _ struct{}) (result.Host, error) {
	return hostinfo.Collect(ctx, hostinfo.ExecRunner{})
})

// opNICInfo describes the underlay device where it is: driver, firmware
// and bus from the ethtool driver-info ioctl, speed, MTU.
var opNICInfo = testbed.NewOp("nic.info", func(_ context.Context, ep *testbed.Endpoint, dev string) (result.NIC, error) {
	n := result.NIC{Dev: dev}
	err := ep.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		di, err := unix.IoctlGetEthtoolDrvinfo(fd, dev)
		if err != nil {
			return fmt.Errorf("ethtool driver info of %s: %w", dev, err)
		}
		n.Driver, n.Version = cstr(di.Driver[:]), cstr(di.Version[:])
		n.Firmware, n.BusInfo = cstr(di.Fw_version[:]), cstr(di.Bus_info[:])
		return nil
	})
	if err != nil {
		return n, err
	}
	if ls, err := nic.Speed(ep.NS, dev); err == nil {
		n.SpeedMbps = ls.SpeedMbps
	}
	if l, err := ep.NL.LinkByName(dev); err == nil {
		n.MTU = l.Attrs().MTU
	}
	return n, nil
})

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

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
			if n, err := opNICInfo.Call(ctx, ep, ep.Dev); err == nil {
				info.NIC = &n
			} else {
				info.NIC = &result.NIC{Dev: ep.Dev, Driver: "unknown: " + err.Error()}
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
