package ebpftun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/clsact"
	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// The eBPF work runs on the host that carries the programs (ops): the
// kernel that verifies and runs them, the bpffs that holds their pins
// and the namespace of the device they sit on are that host's. On a
// remote endpoint the agent does it; the controller only sends the rules.

// probeArgs says what opProbe checks: the data path, and with
// FamilyChange the decapsulation of an inner family other than the
// underlay's.
type probeArgs struct{ FamilyChange bool }

// attachArgs are one side's programs: where their maps are pinned, the
// device they go on, and the rules and decap entries to write.
type attachArgs struct {
	PinDir string
	Dev    string
	Rules  []ebpf.Rule
	Decaps []ebpf.Decap
}

// putRulesArgs are rules to write into the maps pinned in PinDir.
type putRulesArgs struct {
	PinDir string
	Rules  []ebpf.Rule
}

// detachArgs say which device's programs go and which pins with them
// (none when PinDir is empty).
type detachArgs struct {
	PinDir string
	Dev    string
}

var (
	// opProbe returns what the host's kernel lacks for the data path, or
	// "" when it carries it.
	opProbe = testbed.NewOp("ebpf.probe", func(_ context.Context, _ *testbed.Endpoint, a probeArgs) (string, error) {
		if err := ebpf.Probe(); err != nil {
			return err.Error(), nil
		}
		if a.FamilyChange {
			if err := ebpf.ProbeFamilyChange(); err != nil {
				return err.Error(), nil
			}
		}
		return "", nil
	})
	// opAttach loads the programs with their maps pinned in PinDir, fills
	// the maps and attaches both programs to Dev in the endpoint's
	// namespace, next to the host's own tc filters (see clsact.Plan). The
	// pins keep the maps; the programs stay as tc filters. The rules are
	// written one by one, each timed (a tunnel's add, method.AddTimer):
	// the durations come back in order.
	opAttach = testbed.NewOp("ebpf.attach", func(_ context.Context, ep *testbed.Endpoint, a attachArgs) ([]time.Duration, error) {
		// The site's journal learns first how to take the pins off the
		// host's bpffs and, once the places are chosen, the programs off
		// its device, for a clean after a crash (agent.CleanSite).
		if ep.Dir != "" {
			if err := testbed.WriteUndo(ep.Dir, pinsUndo(a.PinDir), testbed.Undo{Kind: testbed.UndoUnpin, Path: a.PinDir}); err != nil {
				return nil, err
			}
		}
		h := method.LocalHandle(ep)
		// Programs a set-up of this run left on the device (one that
		// failed, not torn down) go first: the record is about to be
		// overwritten.
		if old, ok, err := recalled(ep, a.Dev); err != nil {
			return nil, err
		} else if ok {
			if err := errors.Join(ebpf.Detach(h, old), forget(ep, a.Dev)); err != nil {
				return nil, err
			}
		}
		objs, err := ebpf.Load(ebpf.Config{PinDir: a.PinDir})
		if err != nil {
			return nil, err
		}
		t := objs.Table()
		adds, err := putTimed(t, a.Rules)
		err = errors.Join(err, t.PutDecaps(a.Decaps))
		if err != nil {
			return nil, errors.Join(err, objs.Close())
		}
		at, err := objs.Plan(h, a.Dev)
		if err == nil {
			err = remember(ep, at)
		}
		if err != nil {
			return nil, errors.Join(err, objs.Close())
		}
		created := at.QdiscCreated
		err = objs.Attach(h, &at)
		if at.QdiscCreated != created {
			// A qdisc appeared since the plan: the host's, not the run's.
			err = errors.Join(err, remember(ep, at))
		}
		return adds, errors.Join(err, objs.Close())
	})
	// opPutRules writes rules into the maps pinned in PinDir, while the
	// programs run (Grow).
	opPutRules = testbed.NewOp("ebpf.put-rules", func(_ context.Context, _ *testbed.Endpoint, a putRulesArgs) ([]time.Duration, error) {
		p, err := ebpf.OpenPinned(a.PinDir)
		if err != nil {
			return nil, err
		}
		adds, err := putTimed(p.Table, a.Rules)
		return adds, errors.Join(err, p.Close())
	})
	// opDetach removes Dev's programs (what opAttach journalled) and the
	// pins in PinDir.
	opDetach = testbed.NewOp("ebpf.detach", func(_ context.Context, ep *testbed.Endpoint, a detachArgs) (struct{}, error) {
		at, ok, err := recalled(ep, a.Dev)
		if err == nil && ok {
			err = ebpf.Detach(method.LocalHandle(ep), at)
		}
		if err == nil {
			err = forget(ep, a.Dev)
		}
		errs := []error{err}
		if a.PinDir != "" {
			err := ebpf.Unpin(a.PinDir)
			if err == nil && ep.Dir != "" {
				err = testbed.DropUndo(ep.Dir, pinsUndo(a.PinDir))
			}
			errs = append(errs, err)
		}
		return struct{}{}, errors.Join(errs...)
	})
	// opStats reads the counters of the maps pinned in a directory.
	opStats = testbed.NewOp("ebpf.stats", func(_ context.Context, _ *testbed.Endpoint, dir string) (*ebpf.Stats, error) {
		return readStats(dir)
	})
)

// putTimed writes rules into t one by one (one map update each, as a
// mesh adds its sites) and returns how long each took. All are checked
// before the first is written.
func putTimed(t *ebpf.Table, rules []ebpf.Rule) ([]time.Duration, error) {
	for _, r := range rules {
		if err := r.Check(); err != nil {
			return nil, fmt.Errorf("rule %d (%s): %w", r.ID, r.Dst, err)
		}
	}
	var timer method.AddTimer
	timer.Start()
	for _, r := range rules {
		if err := t.PutRules([]ebpf.Rule{r}); err != nil {
			return timer.Adds(), err
		}
		timer.Done()
	}
	return timer.Adds(), nil
}

// An endpoint without a site directory (a bare test endpoint) keeps no
// journal; this process remembers its attachments instead.
var (
	unjournalledMu sync.Mutex
	unjournalled   = map[unjournalledKey]clsact.Attachment{}
)

type unjournalledKey struct {
	ep  *testbed.Endpoint
	dev string
}

// remember records what opAttach puts on the device at, before it does:
// in the site's journal, or in this process without one.
func remember(ep *testbed.Endpoint, at clsact.Attachment) error {
	if ep.Dir != "" {
		return testbed.WriteUndo(ep.Dir, clsactUndo(at.Dev), testbed.ClsactUndo(at))
	}
	unjournalledMu.Lock()
	defer unjournalledMu.Unlock()
	unjournalled[unjournalledKey{ep, at.Dev}] = at
	return nil
}

// recalled returns what remember recorded for dev; ok is false when
// nothing was (never attached, or detached already).
func recalled(ep *testbed.Endpoint, dev string) (at clsact.Attachment, ok bool, err error) {
	if ep.Dir != "" {
		u, ok, err := testbed.ReadUndo(ep.Dir, clsactUndo(dev))
		if err != nil || !ok {
			return at, false, err
		}
		if u.Kind != testbed.UndoClsact || u.Dev != dev {
			return at, false, fmt.Errorf("journal entry %s: kind %q dev %q, want %q %q", clsactUndo(dev), u.Kind, u.Dev, testbed.UndoClsact, dev)
		}
		return u.Attachment(), true, nil
	}
	unjournalledMu.Lock()
	defer unjournalledMu.Unlock()
	at, ok = unjournalled[unjournalledKey{ep, dev}]
	return at, ok, nil
}

// forget drops what remember recorded for dev, once it is undone.
func forget(ep *testbed.Endpoint, dev string) error {
	if ep.Dir != "" {
		return testbed.DropUndo(ep.Dir, clsactUndo(dev))
	}
	unjournalledMu.Lock()
	defer unjournalledMu.Unlock()
	delete(unjournalled, unjournalledKey{ep, dev})
	return nil
}

// clsactUndo and pinsUndo name a side's entries in its site's journal.
func clsactUndo(dev string) string  { return "ebpf-clsact-" + dev }
func pinsUndo(pinDir string) string { return "ebpf-pins-" + filepath.Base(pinDir) }

// readStats reads every counter of the maps pinned in dir on this host.
func readStats(dir string) (*ebpf.Stats, error) {
	p, err := ebpf.OpenPinned(dir)
	if err != nil {
		return nil, err
	}
	s, err := p.Stats()
	return s, errors.Join(err, p.Close())
}

// probe checks the data path on ep's host: nil, or an error wrapping
// method.ErrNotSupported that names the host and what its kernel lacks.
func probe(ctx context.Context, m EBPF, env *method.Env, ep *testbed.Endpoint, familyChange bool) error {
	problem, err := opProbe.Call(ctx, ep, probeArgs{FamilyChange: familyChange})
	if err != nil {
		return fmt.Errorf("%s: probe the eBPF data path: %w", hostOf(ep), err)
	}
	if problem == "" {
		return nil
	}
	what := m.Name()
	if familyChange {
		what += " over " + env.Family
	}
	return fmt.Errorf("%s: %s: %w: needs %s", hostOf(ep), what, method.ErrNotSupported, problem)
}

// hostOf names ep's side and, when it is on another machine, that host.
func hostOf(ep *testbed.Endpoint) string {
	if ep.Host != "" {
		return ep.Side + " (host " + ep.Host + ")"
	}
	return ep.Side
}

// Stats reads the counters of the eBPF data path pinned in dir on ep's
// host (tunbench ebpf stats, and each cell's counters).
func Stats(ctx context.Context, ep *testbed.Endpoint, dir string) (*ebpf.Stats, error) {
	return opStats.Call(ctx, ep, dir)
}
