package testbed

import (
	"fmt"
	"os"
	"path/filepath"

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
// between MkdirAll and OpenFile, so it retries.
func CreateLock(id string) (*os.File, error) {
	var err error
	for try := 0; try < 5; try++ {
		if err = os.MkdirAll(LockDir, 0o700); err != nil {
			return nil, fmt.Errorf("testbed: create %s: %w", LockDir, err)
		}
		var f *os.File
		if f, err = os.OpenFile(lockPath(id), os.O_CREATE|os.O_RDWR, 0o600); err == nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("testbed: create lock: %w", err)
}

// Locked reports whether a process holds the lock of run id: the run is
// alive, and cleaning leaves what it owns alone.
func Locked(id string) bool { return locked(lockPath(id)) }

// DropLock removes the lock file of run id unless a process holds it.
func DropLock(id string) {
	if !Locked(id) {
		_ = os.Remove(lockPath(id))
	}
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
