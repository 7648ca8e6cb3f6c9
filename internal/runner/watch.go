package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// watchInterval is how often a watch looks at the daemons and the
// underlay: short enough to see a link that is down for a second.
const watchInterval = 100 * time.Millisecond

// watch observes a cell while it is measured: the method's userspace
// daemons and both underlay devices. What it sees (a daemon that exited,
// an underlay that went down) fails the cell with a reason naming the side
// and the component, even when the load tools finished and their figures
// look plausible: a figure measured across a fault is not a figure of the
// method. The first fault also cancels the measurement's context, so the
// load tools stop at once instead of running into their timeouts.
type watch struct {
	cancel context.CancelCauseFunc
	stopc  chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	faults []string
	seen   map[string]bool
	// flapping is set while the recover test takes an underlay device
	// down on purpose: the devices' state is not watched meanwhile, and
	// is learnt again after.
	flapping bool
}

// setFlapping tells the watch that the underlay goes down on purpose
// (on) or that it is back (off). A nil watch does nothing.
func (w *watch) setFlapping(on bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flapping = on
}

func (w *watch) isFlapping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flapping
}

// probes are how a watch looks at a cell's daemons and underlay devices:
// liveProbes on the endpoints' hosts; tests pass fakes.
type probes struct {
	// daemon reports whether pid still runs on ep's host.
	daemon func(ep *testbed.Endpoint, pid int) bool
	// link reports whether ep's underlay device is up and running; an
	// error is a device that is gone.
	link func(ep *testbed.Endpoint) (bool, error)
}

// liveProbes ask the endpoints' hosts.
var liveProbes = probes{daemon: daemonAlive, link: linkUp}

// daemonAlive reports whether pid still runs on ep's host (a zombie has
// exited). A host that cannot be asked (its connection is lost) counts as
// the daemon gone.
func daemonAlive(ep *testbed.Endpoint, pid int) bool {
	data, err := ep.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// exitHow is how daemon d exited, as its own process says when tunbench
// started it (" (signal: killed)", " (exit status 1)"), else "", and
// whether it did: a daemon the probe finds gone while its process has not
// exited (the wait lands a moment after /proc shows a zombie, so it is
// given 200 ms) is running, and the probe failed.
func exitHow(d method.Daemon) (string, bool) {
	if d.Exit == nil {
		return "", true
	}
	for range 10 {
		var ee *method.ExitedError
		if err := d.Exit(); errors.As(err, &ee) {
			if ee.Status == nil {
				return " (exit status 0)", true
			}
			return " (" + ee.Status.Error() + ")", true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", false
}

// linkUp reports whether ep's underlay device is up and running: set
// up, and not operationally down (devices whose driver reports no
// operstate read "unknown", and count as up).
func linkUp(ep *testbed.Endpoint) (bool, error) {
	l, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		return false, err
	}
	a := l.Attrs()
	return a.Flags&net.FlagUp != 0 && a.OperState != netlink.OperDown && a.OperState != netlink.OperLowerLayerDown, nil
}

// startWatch starts watching path's daemons and tb's underlay devices
// through p and returns the context to measure with.
//
// An underlay device faults when it vanishes, or when it goes down after
// having been seen up: at the start of the measurement or at any tick
// since. A device that is not up yet when the measurement begins (the
// ssh testbed measures over the hosts' own devices, whose state tunbench
// does not set) has not gone down; its figures fail on their own if it
// carries nothing.
func startWatch(ctx context.Context, tb *testbed.Pair, path *method.Path, p probes) (context.Context, *watch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watch{cancel: cancel, stopc: make(chan struct{}), done: make(chan struct{}), seen: map[string]bool{}}
	start := time.Now()
	wasUp := map[string]bool{}
	for _, ep := range tb.Endpoints() {
		if ep.Lost() == nil {
			up, err := p.link(ep)
			wasUp[ep.Side] = err == nil && up
		}
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		for {
			select {
			case <-w.stopc:
				return
			case <-t.C:
			}
			at := time.Since(start).Round(100 * time.Millisecond)
			for _, ep := range tb.Endpoints() {
				if lost := ep.Lost(); lost != nil {
					w.fault(ep.Side+"/host", fmt.Sprintf("%s: %s %s into the measurement", ep.Side, lost, at))
				}
			}
			for _, d := range path.Daemons {
				ep := tb.A
				if d.Side == "b" {
					ep = tb.B
				}
				if !p.daemon(ep, d.PID) && !w.faulted(d.Side+"/"+d.Role) {
					how, exited := exitHow(d)
					if !exited {
						continue // its process runs: the probe failed, not the daemon
					}
					msg := fmt.Sprintf("%s: %s (pid %d) exited %s into the measurement%s", d.Side, d.Role, d.PID, at, how)
					if d.Log != "" {
						if tail := method.LogTail(ep, d.Log, daemonLogLines); tail != "" {
							msg += fmt.Sprintf(" (its log ends: %s)", strings.ReplaceAll(tail, "\n", " | "))
						}
					}
					w.fault(d.Side+"/"+d.Role, msg)
				}
			}
			flapping := w.isFlapping()
			for _, ep := range tb.Endpoints() {
				if ep.Lost() != nil {
					continue // said above
				}
				if flapping {
					wasUp[ep.Side] = false
					continue
				}
				up, err := p.link(ep)
				switch {
				case err != nil:
					w.fault(ep.Side+"/link", fmt.Sprintf("%s: underlay device %s vanished %s into the measurement: %v", ep.Side, ep.Dev, at, err))
				case !up && wasUp[ep.Side]:
					w.fault(ep.Side+"/link", fmt.Sprintf("%s: underlay device %s went down %s into the measurement", ep.Side, ep.Dev, at))
				case up:
					wasUp[ep.Side] = true
				}
			}
		}
	}()
	return ctx, w
}

// fault records a problem once per component.
// daemonLogLines is how many of a daemon's last log lines a fault quotes.
const daemonLogLines = 5

// faulted reports whether component has faulted already.
func (w *watch) faulted(component string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[component]
}

func (w *watch) fault(component, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen[component] {
		w.seen[component] = true
		w.faults = append(w.faults, msg)
		w.cancel(errors.New(msg))
	}
}

// stop ends the watch and returns what it saw, or nil.
func (w *watch) stop() error {
	close(w.stopc)
	<-w.done
	w.cancel(nil)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.faults) == 0 {
		return nil
	}
	return errors.New(strings.Join(w.faults, "; "))
}
