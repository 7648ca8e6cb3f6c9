package testbed_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testenv"
	"golang.org/x/sys/unix"
)

// While runs take their locks, a cleaner drops every lock file it finds
// unheld, as "tunbench clean" and the start of every run do: no run ever
// holds the lock of a file the cleaner removed, so every live run's
// objects stay its own (a cleaner once removed a file between a run's
// open and its flock, and then killed the ssh hosts of a test as a dead
// run's).
func TestLockSurvivesCleaners(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipMissing(t, "not root: the lock directory %s is root's; run the tests as root", testbed.LockDir)
	}
	var ids []string
	for range 20 {
		ids = append(ids, testbed.NewID())
	}
	stop := make(chan struct{})
	var cleaners sync.WaitGroup
	for range 2 {
		cleaners.Add(1)
		go func() {
			defer cleaners.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, id := range ids {
					testbed.DropLock(id)
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	rounds := 0
	for time.Now().Before(deadline) {
		rounds++
		for i, id := range ids {
			how := unix.LOCK_EX
			if i%2 == 1 {
				how = unix.LOCK_SH
			}
			f, err := testbed.TakeLock(id, how)
			if err != nil {
				t.Fatalf("round %d: %v", rounds, err)
			}
			if !testbed.Locked(id) {
				t.Fatalf("round %d: run %s holds its lock but Locked says no: its lock file was removed under it", rounds, id)
			}
			if _, err := os.Stat(filepath.Join(testbed.LockDir, id+".lock")); err != nil {
				t.Fatalf("round %d: run %s holds its lock, but its file: %v", rounds, id, err)
			}
			f.Close()
		}
	}
	close(stop)
	cleaners.Wait()
	for _, id := range ids {
		testbed.DropLock(id)
		if _, err := os.Stat(filepath.Join(testbed.LockDir, id+".lock")); !os.IsNotExist(err) {
			t.Errorf("lock file of %s left after DropLock: %v", id, err)
		}
	}
	t.Logf("%d rounds of %d locks beside two cleaners", rounds, len(ids))
}

// A run's end removes the lock directory and its parent when they are
// empty, while another run is in MkdirAll between making the parent and
// making the lock directory (which then fails with ENOENT): every
// CreateLock still succeeds (a clean-clone run's ebpf test once failed
// with "mkdir /run/tunbench/locks: no such file or directory").
func TestCreateLockBesideRunEnds(t *testing.T) {
	saved := testbed.LockDir
	testbed.LockDir = filepath.Join(t.TempDir(), "tunbench", "locks")
	t.Cleanup(func() { testbed.LockDir = saved })
	stop := make(chan struct{})
	var enders sync.WaitGroup
	for range 2 {
		enders.Add(1)
		go func() {
			defer enders.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = os.Remove(testbed.LockDir)
				_ = os.Remove(filepath.Dir(testbed.LockDir))
			}
		}()
	}
	defer func() { close(stop); enders.Wait() }()
	for i := range 2000 {
		id := testbed.NewID()
		f, err := testbed.CreateLock(id)
		if err != nil {
			t.Fatalf("lock %d: %v", i, err)
		}
		f.Close()
		_ = os.Remove(filepath.Join(testbed.LockDir, id+".lock"))
	}
}
