package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces are bind-mounted (iproute2's convention).
const netnsDir = "/run/netns"

// KillInNamespace sends SIGKILL to every process whose network namespace is
// ns. It finds them through /proc/PID/ns/net, so it also finds processes of
// a run that was killed before it could record them.
func KillInNamespace(ns netns.NsHandle) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		return fmt.Errorf("testbed: stat namespace: %w", err)
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("testbed: list processes: %w", err)
	}
	self := os.Getpid()
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
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("testbed: kill pid %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
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
		removed = append(removed, procs...)
		if err != nil {
			errs = append(errs, err)
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
			if err := KillInNamespace(ns); err != nil {
				errs = append(errs, err)
			}
			ns.Close()
		}
		if err := netns.DeleteNamed(n.Name()); err != nil {
			errs = append(errs, fmt.Errorf("testbed: delete namespace %s: %w", n.Name(), err))
			continue
		}
		removed = append(removed, Leftover{"namespace", n.Name()})
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
func killRecorded(dir string) ([]Leftover, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "pids"))
	if err != nil {
		return nil, nil
	}
	var removed []Leftover
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		want, _ := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) != filepath.Base(string(want)) {
			continue // pid reused by something else
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("testbed: kill pid %d: %w", pid, err))
			continue
		}
		removed = append(removed, Leftover{"process", fmt.Sprintf("%d (%s)", pid, argv0)})
	}
	return removed, errors.Join(errs...)
}
