package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/nic"
)

// DeviceState is what a run may change of a host's own underlay device
// (ssh.host_changes): its MTU and every feature, keyed as `ethtool -k`
// prints them.
type DeviceState struct {
	MTU      int
	Features map[string]bool
}

// Lines renders the state as text lines, "mtu N" then "feature: on|off"
// sorted, for comparing two states line by line.
func (s DeviceState) Lines() []string {
	out := []string{fmt.Sprintf("mtu %d", s.MTU)}
	for _, k := range slices.Sorted(maps.Keys(s.Features)) {
		v := "off"
		if s.Features[k] {
			v = "on"
		}
		out = append(out, k+": "+v)
	}
	return out
}

// ReadDevice reads dev's MTU and features in ns.
func ReadDevice(ns netns.NsHandle, dev string) (DeviceState, error) {
	d, err := nic.Describe(ns, dev)
	if err != nil {
		return DeviceState{}, err
	}
	return DeviceState{MTU: d.MTU, Features: d.Offloads}, nil
}

// restoreDevice puts dev in ns back to want: the MTU first (features of
// some drivers depend on it), then every feature that differs. It returns
// what it changed, e.g. "mtu 9000 → 1500", "rx-gro on".
func restoreDevice(ns netns.NsHandle, dev string, want DeviceState) ([]string, error) {
	have, err := ReadDevice(ns, dev)
	if err != nil {
		return nil, err
	}
	var changed []string
	if want.MTU != 0 && have.MTU != want.MTU {
		if err := nic.SetMTU(ns, dev, want.MTU); err != nil {
			return nil, err
		}
		changed = append(changed, fmt.Sprintf("mtu %d → %d", have.MTU, want.MTU))
	}
	feats, err := nic.RestoreFeatures(ns, dev, want.Features)
	for _, f := range feats {
		changed = append(changed, f+" "+onOff(want.Features[f]))
	}
	return changed, err
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// UndoDevice is the Undo kind that puts Dev back to MTU and Features.
const UndoDevice = "device"

// deviceUndoName is the journal entry of a device's original state.
func deviceUndoName(dev string) string { return "device-" + dev }

// readUndo reads the journal entry name of dir; ok is false when there is
// none.
func readUndo(dir, name string) (u Undo, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(undoDir(dir), name))
	if errors.Is(err, os.ErrNotExist) {
		return u, false, nil
	}
	if err != nil {
		return u, false, fmt.Errorf("testbed: journal: %w", err)
	}
	if err := json.Unmarshal(data, &u); err != nil {
		return u, false, fmt.Errorf("testbed: journal entry %s: %w", name, err)
	}
	return u, true, nil
}

// HostDev changes a host's own underlay device for the cells of a run
// (ssh.host_changes) through ops on the endpoint's host, keeping its
// original state in the site directory's journal there from before the
// first change until the run puts it back, so that agent.CleanSite
// restores it after any crash.
type HostDev struct{ EP *Endpoint }

// Save journals the device's state, unless the journal already holds it
// (the original, from before the run's first change), and returns the
// state journaled.
func (h HostDev) Save(ctx context.Context) (DeviceState, error) {
	return opDevSave.Call(ctx, h.EP, devArgs{Dev: h.EP.Dev})
}

// Read returns the device's current state.
func (h HostDev) Read(ctx context.Context) (DeviceState, error) {
	return opDevRead.Call(ctx, h.EP, devArgs{Dev: h.EP.Dev})
}

// SetMTU sets the device's MTU; Save must have run.
func (h HostDev) SetMTU(ctx context.Context, mtu int) error {
	_, err := opDevMTU.Call(ctx, h.EP, devArgs{Dev: h.EP.Dev, MTU: mtu})
	return err
}

// Restore puts the device back to its journaled state and returns what
// changed; drop also takes the entry out of the journal (the run's end).
func (h HostDev) Restore(ctx context.Context, drop bool) ([]string, error) {
	return opDevRestore.Call(ctx, h.EP, devArgs{Dev: h.EP.Dev, Drop: drop})
}

// Arm starts or renews the host's watchdog: unless Arm comes again
// within d, the host puts the device back to its journaled state by
// itself. It fails when the watchdog fired since the last Arm. d of 0
// stops the watchdog.
func (h HostDev) Arm(ctx context.Context, d time.Duration) error {
	_, err := opDevArm.Call(ctx, h.EP, devArgs{Dev: h.EP.Dev, Within: d})
	return err
}

// ControlDevs returns the devices the host's SSH connection (its
// SSH_CONNECTION, as sshd sets it for the agent) runs over: the one
// holding the connection's local address and the one the route to the
// client leaves by. Both are empty when the endpoint was not reached
// over SSH.
func (h HostDev) ControlDevs(ctx context.Context) (ControlPath, error) {
	return opDevControl.Call(ctx, h.EP, struct{}{})
}

// ControlPath is how a host's SSH connection reaches it.
type ControlPath struct {
	Local, Peer       string // the connection's addresses on the host and at the client
	LocalDev, PeerDev string // the device holding Local, the device the route to Peer leaves by
}

// Over reports whether the connection runs over dev.
func (c ControlPath) Over(dev string) bool {
	return dev != "" && (c.LocalDev == dev || c.PeerDev == dev)
}

type devArgs struct {
	Dev    string
	MTU    int
	Drop   bool
	Within time.Duration
}

// watchdogs are the armed watchdogs of this host, by site directory and
// device.
var (
	watchdogMu sync.Mutex
	watchdogs  = map[string]*watchdog{}
)

type watchdog struct {
	timer *time.Timer
	// done is closed once a fired watchdog has restored the device;
	// fired then says what it restored.
	done  chan struct{}
	fired string
}

var (
	opDevRead = NewOp("hostdev.read", func(_ context.Context, ep *Endpoint, a devArgs) (DeviceState, error) {
		return ReadDevice(ep.NS, a.Dev)
	})
	opDevSave = NewOp("hostdev.save", func(_ context.Context, ep *Endpoint, a devArgs) (DeviceState, error) {
		if ep.Dir == "" {
			return DeviceState{}, errors.New("testbed: host changes need a site directory for their journal")
		}
		name := deviceUndoName(a.Dev)
		u, ok, err := readUndo(ep.Dir, name)
		if err != nil || ok {
			return DeviceState{MTU: u.MTU, Features: u.Features}, err
		}
		// What another run still owes the device comes first.
		if ep.NS == -1 {
			runDir := filepath.Dir(ep.Dir)
			if err := owedDevice(filepath.Dir(runDir), filepath.Base(runDir), a.Dev); err != nil {
				return DeviceState{}, err
			}
		}
		st, err := ReadDevice(ep.NS, a.Dev)
		if err != nil {
			return st, err
		}
		return st, WriteUndo(ep.Dir, name, Undo{Kind: UndoDevice, Dev: a.Dev, MTU: st.MTU, Features: st.Features})
	})
	opDevMTU = NewOp("hostdev.mtu", func(_ context.Context, ep *Endpoint, a devArgs) (struct{}, error) {
		if _, ok, err := readUndo(ep.Dir, deviceUndoName(a.Dev)); err != nil || !ok {
			return struct{}{}, errors.Join(err, fmt.Errorf("testbed: %s: no journaled state to return to: save it first", a.Dev))
		}
		return struct{}{}, nic.SetMTU(ep.NS, a.Dev, a.MTU)
	})
	opDevRestore = NewOp("hostdev.restore", func(_ context.Context, ep *Endpoint, a devArgs) ([]string, error) {
		return restoreJournaled(ep, a.Dev, a.Drop)
	})
	opDevArm = NewOp("hostdev.arm", func(_ context.Context, ep *Endpoint, a devArgs) (struct{}, error) {
		key := ep.Dir + "\x00" + a.Dev
		watchdogMu.Lock()
		defer watchdogMu.Unlock()
		if w := watchdogs[key]; w != nil {
			delete(watchdogs, key)
			if !w.timer.Stop() {
				// It fired: the device is back once it is done.
				watchdogMu.Unlock()
				<-w.done
				watchdogMu.Lock()
				return struct{}{}, fmt.Errorf("testbed: %s: the controller was silent too long, so the host put the device back (%s)", a.Dev, w.fired)
			}
		}
		if a.Within <= 0 {
			return struct{}{}, nil
		}
		w := &watchdog{done: make(chan struct{})}
		w.timer = time.AfterFunc(a.Within, func() {
			defer close(w.done)
			changed, err := restoreJournaled(ep, a.Dev, false)
			w.fired = strings.Join(changed, ", ")
			if err != nil {
				w.fired += "; " + err.Error()
			}
			if w.fired == "" {
				w.fired = "it was unchanged"
			}
		})
		watchdogs[key] = w
		return struct{}{}, nil
	})
	opDevControl = NewOp("hostdev.control", func(_ context.Context, ep *Endpoint, _ struct{}) (ControlPath, error) {
		return controlPath(ep.NS, os.Getenv("SSH_CONNECTION"))
	})
)

// restoreJournaled puts dev back to its journaled state; drop also takes
// the entry out.
func restoreJournaled(ep *Endpoint, dev string, drop bool) ([]string, error) {
	name := deviceUndoName(dev)
	u, ok, err := readUndo(ep.Dir, name)
	if err != nil || !ok {
		return nil, err
	}
	changed, err := restoreDevice(ep.NS, dev, DeviceState{MTU: u.MTU, Features: u.Features})
	if err != nil {
		return changed, fmt.Errorf("testbed: restore %s: %w", dev, err)
	}
	if drop {
		return changed, DropUndo(ep.Dir, name)
	}
	return changed, nil
}

// controlPath finds the devices of the connection sshConn describes
// ("CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT", sshd's SSH_CONNECTION).
func controlPath(ns netns.NsHandle, sshConn string) (ControlPath, error) {
	f := strings.Fields(sshConn)
	if len(f) != 4 {
		return ControlPath{}, nil
	}
	peer, err1 := netip.ParseAddr(f[0])
	local, err2 := netip.ParseAddr(f[2])
	if err1 != nil || err2 != nil {
		return ControlPath{}, fmt.Errorf("testbed: SSH_CONNECTION %q: %w", sshConn, errors.Join(err1, err2))
	}
	peer, local = peer.Unmap(), local.Unmap()
	cp := ControlPath{Local: local.String(), Peer: peer.String()}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return cp, fmt.Errorf("testbed: netlink: %w", err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return cp, fmt.Errorf("testbed: list links: %w", err)
	}
	name := map[int]string{}
	for _, l := range links {
		name[l.Attrs().Index] = l.Attrs().Name
		addrs, _ := h.AddrList(l, netlink.FAMILY_ALL)
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == local {
				cp.LocalDev = l.Attrs().Name
			}
		}
	}
	routes, err := h.RouteGet(net.IP(peer.AsSlice()))
	if err == nil && len(routes) > 0 {
		cp.PeerDev = name[routes[0].LinkIndex]
	}
	return cp, nil
}

// SettleDeadJournals puts back, in this process's network namespace,
// what the journals of dead runs under root (DefaultRoot when empty)
// still owe, before run self changes anything on this host: for every
// run other than self whose lock no process holds, each site directory's
// journal is applied and, once applied, taken out (the rest of the dead
// run is left to clean). A journal naming a device this namespace lacks
// is another host's (test hosts sharing one file system) and stays.
// Without this, a run after a killed one would journal the state the
// killed one left as the host's original, and keep it for good.
func SettleDeadJournals(root, self string) ([]Leftover, error) {
	if root == "" {
		root = DefaultRoot
	}
	runs, err := os.ReadDir(root)
	if err != nil {
		return nil, nil
	}
	var done []Leftover
	var errs []error
	for _, r := range runs {
		if !r.IsDir() || !ValidID(r.Name()) || r.Name() == self || locked(lockPath(r.Name())) {
			continue
		}
		sites, _ := os.ReadDir(filepath.Join(root, r.Name()))
		for _, s := range sites {
			dir := filepath.Join(root, r.Name(), s.Name())
			if !s.IsDir() || s.Name() == "pids" {
				continue
			}
			if _, err := os.Stat(undoDir(dir)); err != nil {
				continue
			}
			restored, foreign, err := applyJournalHere(dir)
			done = append(done, restored...)
			if err != nil {
				errs = append(errs, fmt.Errorf("run %s, site %s: %w", r.Name(), s.Name(), err))
				continue
			}
			if !foreign {
				if err := os.RemoveAll(undoDir(dir)); err != nil {
					errs = append(errs, fmt.Errorf("testbed: journal: %w", err))
				}
			}
		}
	}
	return done, errors.Join(errs...)
}

// owedDevice looks for the journal entry of dev in the site directories
// of runs under root other than self, for a Save about to journal dev's
// state as the original. An entry of a dead run is applied first (the
// device gets its true original back, which is then what Save reads) and
// taken out; one of a live run is an error, since that run's changes
// would be taken for the original.
func owedDevice(root, self, dev string) error {
	runs, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	name := deviceUndoName(dev)
	for _, r := range runs {
		if !r.IsDir() || !ValidID(r.Name()) || r.Name() == self {
			continue
		}
		sites, _ := os.ReadDir(filepath.Join(root, r.Name()))
		for _, s := range sites {
			dir := filepath.Join(root, r.Name(), s.Name())
			u, ok, err := readUndo(dir, name)
			if err != nil || !ok {
				continue
			}
			if locked(lockPath(r.Name())) {
				return fmt.Errorf("testbed: run %s (alive) has changed %s on this host and not yet put it back: run one benchmark with host_changes on a host at a time", r.Name(), dev)
			}
			if _, err := restoreDevice(netns.None(), dev, DeviceState{MTU: u.MTU, Features: u.Features}); err != nil {
				return fmt.Errorf("testbed: put %s back as dead run %s journaled it: %w", dev, r.Name(), err)
			}
			if err := DropUndo(dir, name); err != nil {
				return err
			}
		}
	}
	return nil
}
