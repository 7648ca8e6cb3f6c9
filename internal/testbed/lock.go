package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// LockDir holds one lock file per live run, <id>.lock, held (flock) for
// the run's lifetime. It is global, whatever the run's root, because
// namespaces are global.
var LockDir = "/run/tunbench/locks"

func lockPath(id string) string { return filepath.Join(LockDir, id+".lock") }

// CreateLock creates (or opens) the lock file of run id; the caller takes
// the lock with flock, exclusive for the run's whole testbed, shared for
// one of its sites. Another run's end may remove the empty lock directory
// between MkdirAll and OpenFile, or its empty parent in the middle of
// MkdirAll (which then fails with ENOENT), so it retries.
func CreateLock(id string) (*os.File, error) {
	var err error
	for try := 0; try < 1000; try++ {
		if err = os.MkdirAll(LockDir, 0o700); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("testbed: create %s: %w", LockDir, err)
		}
		var f *os.File
		if f, err = os.OpenFile(lockPath(id), os.O_CREATE|os.O_RDWR, 0o600); err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return nil, fmt.Errorf("testbed: create lock: %w", err)
}

// Locked reports whether a process holds the lock of run id: the run is
// alive, and cleaning leaves what it owns alone.
func Locked(id string) bool { return locked(lockPath(id)) }

// DropLock removes the lock file of run id unless a process holds it.
// It removes the file while holding its lock, and only the file it
// locked: a run that opened the file a moment before finds it gone when
// it has its lock and takes a new one (TakeLock), rather than holding
// the lock of a file no cleaner can see (which made its namespaces look
// dead to every "tunbench clean").
func DropLock(id string) {
	f, err := os.OpenFile(lockPath(id), os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	if sameFile(f, lockPath(id)) {
		_ = os.Remove(lockPath(id))
	}
}

// TakeLock creates the lock file of run id and takes its lock: how is
// unix.LOCK_EX for a run's whole testbed, unix.LOCK_SH for one of its
// sites. A cleaner that holds the file's lock for a moment (Locked,
// DropLock) makes it wait and try again; a file removed between its
// open and its lock is created anew.
func TakeLock(id string, how int) (*os.File, error) {
	var err error
	for try := 0; try < 50; try++ {
		var f *os.File
		if f, err = CreateLock(id); err != nil {
			return nil, err
		}
		if err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
			f.Close()
			if err == unix.EWOULDBLOCK {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return nil, fmt.Errorf("testbed: lock run %s: %w", id, err)
		}
		if sameFile(f, lockPath(id)) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("testbed: lock run %s: %w", id, err)
}

// sameFile reports whether path still names the file f has open.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

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
