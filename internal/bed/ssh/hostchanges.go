package ssh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
)

// Host changes (ssh.host_changes): the cells of a run set the MTU of a
// site's underlay device, and the runner switches its offloads, as on the
// local testbed. Before the first change the device's original MTU and
// every feature go into the journal of the site directory on the host
// (testbed.HostDev.Save); the pair of every cell puts both hosts back when
// it closes, the run's end drops the entries, and whatever ends the run
// otherwise, the agent's end or "tunbench clean" on the host restores
// from the journal.
//
// A site whose SSH connection runs over the device (ControlOverDev) gets
// the MTU raised before anything else changes, an agent round trip after
// each change, and a watchdog on the host that puts the device back by
// itself when the controller falls silent for WatchdogAfter.

// Timings of the control connection's protection.
var (
	// WatchdogAfter is how long a host whose connection runs over the
	// device waits for the controller before putting the device back.
	WatchdogAfter = 10 * time.Second
	// heartbeatEvery is how often the controller renews the watchdog;
	// ReachTimeout bounds the round trip that checks a host after a
	// change.
	heartbeatEvery = 2 * time.Second
	ReachTimeout   = 5 * time.Second
	// restoreTimeout bounds putting a host back from the controller.
	restoreTimeout = 30 * time.Second
)

// changes says whether a run changes h's device: host_changes is on for
// its site and some cell asks for an MTU or offloads other than the
// host's.
func (t *Testbed) changes(h *host, mtu int) bool {
	if !t.cfg.SSH.ChangesHost(h.site.Name) {
		return false
	}
	for _, m := range t.cfg.MTUs {
		if m != mtu {
			return true
		}
	}
	return slices.ContainsFunc(t.cfg.Offloads, func(o string) bool { return o != "on" })
}

// checkControl refuses a site whose SSH connection runs over the device
// the run changes, unless it says control_over_dev, and says so either
// way.
func (t *Testbed) checkControl(ctx context.Context, h *host) error {
	ep := h.agent.Endpoint("a", h.hello)
	cp, err := testbed.HostDev{EP: ep}.ControlDevs(ctx)
	if err != nil {
		return fmt.Errorf("find the device of the SSH connection: %w", err)
	}
	if !cp.Over(h.site.Dev) {
		return nil
	}
	via := fmt.Sprintf("the SSH connection to this host (%s → %s) runs over %s, the device host_changes changes per cell", cp.Peer, cp.Local, h.site.Dev)
	if !h.site.ControlOverDev {
		return fmt.Errorf("%s: a wrong MTU or offload there can cut tunbench off the host; reach it over another interface (address), or set control_over_dev: true on the site to go ahead with the MTU raised first, a check after each change and the device put back when the host stops answering", via)
	}
	h.overDev = true
	t.logf("site %s: %s (control_over_dev): the MTU is raised first, the host is checked after each change and puts the device back by itself when the controller is silent for %s", h.site.Name, via, WatchdogAfter)
	return nil
}

// prepareHosts journals the original state of the pair's devices that
// the run changes and sets the cell's MTU on them: raised ones before
// lowered ones, every host reached over its device checked after its
// change. It returns what undoes it: the heartbeats stopped and both
// devices put back.
func (t *Testbed) prepareHosts(ctx context.Context, hosts []*host, mtu int) (func() error, error) {
	var changed []*host
	for _, h := range hosts {
		if h.changes {
			changed = append(changed, h)
		}
	}
	if len(changed) == 0 {
		return func() error { return nil }, nil
	}
	var beats []func() error
	undo := func() error {
		var errs []error
		for _, stop := range beats {
			errs = append(errs, stop())
		}
		errs = append(errs, restoreHosts(ctx, changed, false))
		return errors.Join(errs...)
	}
	type step struct {
		h    *host
		from int
	}
	var steps []step
	for _, h := range changed {
		dev := h.dev()
		if h.orig == nil {
			st, err := dev.Save(ctx)
			if err != nil {
				return undo, fmt.Errorf("site %s: journal the state of %s: %w", h.site.Name, h.site.Dev, err)
			}
			h.orig = &st
		}
		if h.overDev {
			stop, err := t.heartbeat(h)
			if err != nil {
				return undo, err
			}
			beats = append(beats, stop)
		}
		if mtu != 0 && mtu != h.orig.MTU {
			steps = append(steps, step{h, h.orig.MTU})
		}
	}
	// Raising first keeps every packet the other host may still send
	// within what this one takes.
	slices.SortStableFunc(steps, func(a, b step) int {
		return boolInt(mtu < a.from) - boolInt(mtu < b.from)
	})
	for _, s := range steps {
		if err := t.setMTU(ctx, s.h, mtu); err != nil {
			return undo, fmt.Errorf("site %s: set the MTU of %s to %d: %w", s.h.site.Name, s.h.site.Dev, mtu, err)
		}
	}
	return undo, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// setMTU sets h's MTU; on a host reached over its device the reply must
// come within ReachTimeout and a round trip after it too (reachable).
func (t *Testbed) setMTU(ctx context.Context, h *host, mtu int) error {
	if !h.overDev {
		return h.dev().SetMTU(ctx, mtu)
	}
	sctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	err := h.dev().SetMTU(sctx, mtu)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		return t.putBack(ctx, h, err)
	}
	if err != nil {
		return err
	}
	return t.reachable(ctx, h)
}

// dev is the host's underlay device.
func (h *host) dev() testbed.HostDev {
	return testbed.HostDev{EP: h.agent.Endpoint("a", h.hello)}
}

// reachable checks, with a round trip bounded by ReachTimeout, that the
// agent still answers after a change of its device; when it does not,
// the device is put back at once (the host's watchdog does it when the
// request cannot get through).
func (t *Testbed) reachable(ctx context.Context, h *host) error {
	rctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	err := h.dev().Arm(rctx, WatchdogAfter)
	if err == nil {
		return nil
	}
	return t.putBack(ctx, h, err)
}

// putBack tries to put h's device back at once after the host stopped
// answering (err).
func (t *Testbed) putBack(ctx context.Context, h *host, err error) error {
	rctx2, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), ReachTimeout)
	defer cancel2()
	if _, rerr := h.dev().Restore(rctx2, false); rerr != nil {
		return fmt.Errorf("the host did not answer within %s (%v) and the device was not put back from here (%v); the host's watchdog puts it back within %s", ReachTimeout, err, rerr, WatchdogAfter)
	}
	return fmt.Errorf("the host did not answer within %s (%v): the device was put back", ReachTimeout, err)
}

// heartbeat arms h's watchdog and renews it until the returned function
// stops it; that function reports a host that fell silent or whose
// watchdog fired.
func (t *Testbed) heartbeat(h *host) (func() error, error) {
	ctx := context.Background()
	if err := h.dev().Arm(ctx, WatchdogAfter); err != nil {
		return nil, fmt.Errorf("site %s: arm the watchdog: %w", h.site.Name, err)
	}
	done := make(chan struct{})
	var mu sync.Mutex
	var failed error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(heartbeatEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(ctx, ReachTimeout)
			err := h.dev().Arm(rctx, WatchdogAfter)
			cancel()
			if err != nil {
				mu.Lock()
				failed = errors.Join(failed, err)
				mu.Unlock()
			}
		}
	}()
	return func() error {
		close(done)
		wg.Wait()
		rctx, cancel := context.WithTimeout(ctx, ReachTimeout)
		defer cancel()
		err := h.dev().Arm(rctx, 0)
		mu.Lock()
		defer mu.Unlock()
		if err = errors.Join(failed, err); err != nil {
			return fmt.Errorf("site %s: the host over whose device tunbench is connected: %w", h.site.Name, err)
		}
		return nil
	}, nil
}

// restoreHosts puts every host's device back to its journaled state at
// once; drop also takes the journal entries out (the run's end).
func restoreHosts(ctx context.Context, hosts []*host, drop bool) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A host that answers takes milliseconds; one that does not
			// is left to its journal (watchdog, agent's end, clean).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
			defer cancel()
			if _, err := h.dev().Restore(rctx, drop); err != nil {
				errs[i] = fmt.Errorf("site %s: put %s back: %w", h.site.Name, h.site.Dev, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mtuRefusal is the error for a host whose MTU the run would change
// without host_changes.
func mtuRefusal(dev string, have, want int) error {
	return fmt.Errorf("%s has MTU %d, and mtus asks for %d: tunbench changes a host's MTU only with ssh.host_changes: true (scenario-wide or for the site), which journals and restores it; otherwise set mtus: [%d] or change the hosts' MTU first", dev, have, want, have)
}
