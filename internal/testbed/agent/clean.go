package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// CleanSite removes what run id left on this host as site of an ssh
// testbed: the agent (if it still runs) and every process it started, the
// run's devices in this namespace, and the site directory under root. The
// controller runs it (as "tunbench clean --run ID --site NAME") on a host
// whose connection it lost, once the host is reachable again: that site's
// agent is gone or cut off, so its lock is not asked.
func CleanSite(root, id, site string) ([]testbed.Leftover, error) {
	if !testbed.ValidID(id) {
		return nil, fmt.Errorf("testbed: invalid run id %q", id)
	}
	dir := testbed.SiteDir(root, id, site)
	var removed []testbed.Leftover
	var errs []error
	procs, err := testbed.KillRecorded(dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range procs {
		removed = append(removed, testbed.Leftover{Kind: "process", Name: p.String()})
	}
	if err := testbed.WaitGone(procs); err != nil {
		errs = append(errs, err)
	}
	if h, err := netlink.NewHandle(); err == nil {
		names, err := removeRunLinks(h, id)
		for _, n := range names {
			removed = append(removed, testbed.Leftover{Kind: "device", Name: n})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("testbed: remove devices of run %s: %w", id, err))
		}
		// What the run changed on the host's own devices and sysctls
		// goes back once its processes and devices are gone.
		restored, err := testbed.ApplyJournal(h, dir)
		removed = append(removed, restored...)
		if err != nil {
			errs = append(errs, err)
		}
		h.Close()
	}
	if _, err := os.Stat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("testbed: remove %s: %w", dir, err))
		} else {
			removed = append(removed, testbed.Leftover{Kind: "directory", Name: dir})
		}
	}
	_ = os.Remove(filepath.Dir(dir))
	return removed, errors.Join(errs...)
}
