package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces are bind-mounted (iproute2's convention).
const netnsDir = "/run/netns"

// KillInNamespace sends SIGKILL to every process whose network namespace is
// ns and waits (at most KillWait) until they are gone. It finds them
// through /proc/PID/ns/net, so it also finds processes of a run that was
// killed before it could record them.
func KillInNamespace(ns netns.NsHandle) error {
	victims, err := killInNamespace(ns)
	if survivors := waitGone(victims, KillWait); len(survivors) > 0 {
		err = errors.Join(err, survivorsError(survivors))
	}
	return err
}

// killInNamespace sends SIGKILL to every process in ns and returns them.
func killInNamespace(ns netns.NsHandle) ([]victim, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		return nil, fmt.Errorf("testbed: stat namespace: %w", err)
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("testbed: list processes: %w", err)
	}
	self := os.Getpid()
	var victims []victim
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net"))
		if err != nil || link != want {
			continue
		}
		v, err := kill(pid)
		if err != nil {
			errs = append(errs, err)
		} else if v != nil {
			victims = append(victims, *v)
		}
	}
	return victims, errors.Join(errs...)
}

// KillWait bounds how long Clean and KillInNamespace wait for the
// processes they killed to be gone.
var KillWait = 5 * time.Second

// victim is a process that was sent SIGKILL; start (its start time in
// clock ticks) tells it apart from a later process that reuses the pid.
type victim struct {
	pid   int
	start string
	name  string
}

func (v victim) String() string { return fmt.Sprintf("%d (%s)", v.pid, v.name) }

// kill sends SIGKILL to pid; a nil victim means it was already gone.
func kill(pid int) (*victim, error) {
	st, ok := readProcStat(pid)
	if !ok {
		return nil, nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil, nil
		}
		return nil, fmt.Errorf("testbed: kill pid %d (%s): %w", pid, st.comm, err)
	}
	return &victim{pid: pid, start: st.start, name: st.comm}, nil
}

// procStat is what kill and waitGone read of /proc/PID/stat.
type procStat struct {
	comm  string
	state byte
	start string // field 22, starttime
}

func readProcStat(pid int) (procStat, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(string(data))
}

// parseProcStat reads "pid (comm) state ppid ... starttime ...": comm may
// hold spaces and parentheses, so the fields count from its last ')'.
func parseProcStat(s string) (procStat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	return procStat{comm: s[open+1 : end], state: f[0][0], start: f[19]}, true
}

// gone reports whether v has exited: no such process, a zombie (dead,
// waiting for its parent to reap it), or the pid now belongs to another
// process.
func (v victim) gone() bool {
	st, ok := readProcStat(v.pid)
	return !ok || st.state == 'Z' || st.state == 'X' || st.start != v.start
}

// waitGone polls until every victim is gone or timeout passes, and
// returns those still alive.
func waitGone(vs []victim, timeout time.Duration) []victim {
	deadline := time.Now().Add(timeout)
	for {
		vs = slices.DeleteFunc(vs, victim.gone)
		if len(vs) == 0 || time.Now().After(deadline) {
			return vs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func survivorsError(vs []victim) error {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.String()
	}
	return fmt.Errorf("testbed: still alive %s after SIGKILL: %s (see /proc/PID/stack; a process in uninterruptible sleep exits when its I/O completes)",
		KillWait, strings.Join(names, ", "))
}

// Leftover is something a previous run left behind.
type Leftover struct {
	Kind string // "namespace", "directory", "process"
	Name string
}

func (l Leftover) String() string { return l.Kind + " " + l.Name }

// Clean removes what killed runs left behind: namespaces named
// NamespacePrefix<id>-a|b (with every process inside them), processes
// recorded in their run directories, the directories under root, and BPF
// maps the ebpf-* methods pinned under BPFPinRoot. A run
// whose directory lock is still held is alive and left alone. It returns
// what it removed.
func Clean(root string) ([]Leftover, error) {
	if root == "" {
		root = DefaultRoot
	}
	var removed []Leftover
	var killed []victim
	var errs []error
	live := map[string]bool{}
	dirs, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("testbed: list %s: %w", root, err)
	}
	for _, d := range dirs {
		if !d.IsDir() || !ValidID(d.Name()) {
			continue
		}
		dir := filepath.Join(root, d.Name())
		if locked(lockPath(d.Name())) {
			live[d.Name()] = true
			continue
		}
		procs, err := killRecorded(dir)
		var keep []string // site directories of another host (see applyJournalHere)
		// Sites of an ssh testbed keep theirs one level down.
		if subs, _ := os.ReadDir(dir); len(subs) > 0 {
			for _, s := range subs {
				if s.IsDir() && s.Name() != "pids" {
					more, err2 := killRecorded(filepath.Join(dir, s.Name()))
					procs = append(procs, more...)
					err = errors.Join(err, err2)
					// What the site's run changed on this host's own
					// devices goes back before its journal is removed.
					restored, foreign, err3 := applyJournalHere(filepath.Join(dir, s.Name()))
					removed = append(removed, restored...)
					err = errors.Join(err, err3)
					if foreign {
						keep = append(keep, s.Name())
					}
				}
			}
		}
		for _, p := range procs {
			removed = append(removed, Leftover{"process", p.String()})
		}
		killed = append(killed, procs...)
		if err != nil {
			errs = append(errs, err)
		}
		if len(keep) > 0 {
			subs, _ := os.ReadDir(dir)
			for _, s := range subs {
				if slices.Contains(keep, s.Name()) {
					continue
				}
				if err := os.RemoveAll(filepath.Join(dir, s.Name())); err != nil {
					errs = append(errs, fmt.Errorf("testbed: remove %s: %w", filepath.Join(dir, s.Name()), err))
				} else {
					removed = append(removed, Leftover{"directory", filepath.Join(dir, s.Name())})
				}
			}
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("testbed: remove %s: %w", dir, err))
		} else {
			removed = append(removed, Leftover{"directory", dir})
		}
	}
	names, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, fmt.Errorf("testbed: list %s: %w", netnsDir, err)
	}
	for _, n := range names {
		id, _, ok := ParseNamespace(n.Name())
		if !ok || live[id] || locked(lockPath(id)) {
			continue
		}
		if ns, err := netns.GetFromName(n.Name()); err == nil {
			procs, err := killInNamespace(ns)
			for _, p := range procs {
				if !slices.ContainsFunc(killed, func(k victim) bool { return k.pid == p.pid }) {
					removed = append(removed, Leftover{"process", p.String()})
					killed = append(killed, p)
				}
			}
			if err != nil {
				errs = append(errs, err)
			}
			ns.Close()
		}
		if err := netns.DeleteNamed(n.Name()); err != nil {
			// Another clean (a run starting at the same moment) may have
			// removed it first: gone is what we wanted.
			fi, statErr := os.Stat(filepath.Join(netnsDir, n.Name()))
			if errors.Is(statErr, os.ErrNotExist) {
				continue
			}
			// EINVAL: the name is not (or no longer) a mounted namespace:
			// one being created this instant by a run that has not
			// taken its lock yet, or the empty file a crash left between
			// creating and mounting it. A fresh one is left to its run;
			// a stale one is only a file.
			if errors.Is(err, unix.EINVAL) && statErr == nil {
				if time.Since(fi.ModTime()) > 10*time.Second && os.Remove(filepath.Join(netnsDir, n.Name())) == nil {
					removed = append(removed, Leftover{"namespace", n.Name()})
				}
				continue
			}
			errs = append(errs, fmt.Errorf("testbed: delete namespace %s: %w", n.Name(), err))
			continue
		}
		removed = append(removed, Leftover{"namespace", n.Name()})
	}
	// Clean returns only once what it killed is gone: a daemon still
	// exiting could otherwise hold a socket or a device of the next run.
	if survivors := waitGone(killed, KillWait); len(survivors) > 0 {
		errs = append(errs, survivorsError(survivors))
	}
	// Devices of dead runs in this namespace: on a host of an ssh
	// testbed, the methods create theirs here.
	if h, err := netlink.NewHandle(); err == nil {
		if links, err := h.LinkList(); err == nil {
			for _, l := range links {
				id := runOfDevice(l.Attrs().Name)
				if id == "" || live[id] || locked(lockPath(id)) {
					continue
				}
				if err := h.LinkDel(l); err != nil {
					errs = append(errs, fmt.Errorf("testbed: delete device %s: %w", l.Attrs().Name, err))
					continue
				}
				removed = append(removed, Leftover{"device", l.Attrs().Name})
			}
		}
		h.Close()
	}
	// BPF maps pinned by the ebpf-* methods: BPFPinRoot/tb<id>-a|b.
	pins, _ := os.ReadDir(BPFPinRoot)
	for _, p := range pins {
		rest, ok := strings.CutPrefix(p.Name(), "tb")
		id := rest[:max(0, len(rest)-2)]
		if !ok || !ValidID(id) || live[id] || locked(lockPath(id)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(BPFPinRoot, p.Name())); err != nil {
			errs = append(errs, fmt.Errorf("testbed: unpin %s: %w", p.Name(), err))
			continue
		}
		removed = append(removed, Leftover{"bpf pins", filepath.Join(BPFPinRoot, p.Name())})
	}
	locks, _ := os.ReadDir(LockDir)
	for _, f := range locks {
		id, ok := strings.CutSuffix(f.Name(), ".lock")
		if ok && ValidID(id) && !locked(lockPath(id)) {
			_ = os.Remove(lockPath(id))
		}
	}
	return removed, errors.Join(errs...)
}

// CleanSite removes what run id left on this host as site of an ssh
// testbed: the agent (if it still runs) and every process it started, the
// run's devices in this namespace, and the site directory under root. The
// controller runs it (as "tunbench clean --run ID --site NAME") on a host
// whose connection it lost, once the host is reachable again: that site's
// agent is gone or cut off, so its lock is not asked.
func CleanSite(root, id, site string) ([]Leftover, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("testbed: invalid run id %q", id)
	}
	dir := SiteDir(root, id, site)
	var removed []Leftover
	var errs []error
	procs, err := killRecorded(dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range procs {
		removed = append(removed, Leftover{"process", p.String()})
	}
	if survivors := waitGone(procs, KillWait); len(survivors) > 0 {
		errs = append(errs, survivorsError(survivors))
	}
	if h, err := netlink.NewHandle(); err == nil {
		names, err := removeRunLinks(h, id)
		for _, n := range names {
			removed = append(removed, Leftover{"device", n})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("testbed: remove devices of run %s: %w", id, err))
		}
		// What the run changed on the host's own devices and sysctls
		// goes back once its processes and devices are gone.
		restored, err := applyJournal(h, dir)
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
			removed = append(removed, Leftover{"directory", dir})
		}
	}
	_ = os.Remove(filepath.Dir(dir))
	return removed, errors.Join(errs...)
}

// BPFPinRoot is where the ebpf-* methods pin their maps, one directory per
// endpoint named DevicePrefix(id)-side (ebpf.PinRoot).
var BPFPinRoot = "/sys/fs/bpf/tunbench"

// LockDir holds one lock file per live run, <id>.lock, held (flock) for
// the run's lifetime. It is global, whatever the run's root, because
// namespaces are global.
var LockDir = "/run/tunbench/locks"

func lockPath(id string) string { return filepath.Join(LockDir, id+".lock") }

// locked reports whether another process holds the lock file.
func locked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// killRecorded kills the processes whose pids a run wrote to dir/pids, when
// the process still runs the recorded program.
func killRecorded(dir string) ([]victim, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "pids"))
	if err != nil {
		return nil, nil
	}
	var killed []victim
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		rec, _ := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		want, start, _ := strings.Cut(string(rec), "\n")
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) != filepath.Base(want) {
			continue // pid reused by something else
		}
		// The same program under a reused pid (another run's tunbench
		// agent, say) is not the recorded process either: its start time
		// differs. A record without one (an older tunbench's) has only
		// the program to go by.
		if st, ok := readProcStat(pid); start != "" && (!ok || st.start != start) {
			continue
		}
		v, err := kill(pid)
		if err != nil {
			errs = append(errs, err)
		} else if v != nil {
			v.name = argv0
			killed = append(killed, *v)
		}
	}
	return killed, errors.Join(errs...)
}

// applyJournalHere applies the journal of the site directory dir in this
// process's network namespace. A journal naming a device this namespace
// lacks is another host's, one sharing this filesystem (test hosts in
// namespaces of one machine): it is left alone, foreign, for that host's
// clean.
func applyJournalHere(dir string) (restored []Leftover, foreign bool, err error) {
	ents, err := os.ReadDir(undoDir(dir))
	if err != nil {
		return nil, false, nil
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, false, fmt.Errorf("testbed: netlink: %w", err)
	}
	defer h.Close()
	for _, e := range ents {
		u, ok, _ := readUndo(dir, e.Name())
		// A device to delete may well be missing.
		if !ok || u.Dev == "" || u.Kind == UndoDelLink {
			continue
		}
		if _, err := h.LinkByName(u.Dev); err != nil {
			return nil, true, nil
		}
	}
	restored, err = applyJournal(h, dir)
	return restored, false, err
}
