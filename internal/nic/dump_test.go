package nic_test

import (
	"errors"
	"testing"

	"github.com/tunbench/tunbench/internal/nic"
	"github.com/vishvananda/netlink"
)

// TestDump: an interrupted dump is read again until it is whole; one
// interrupted every time ends with the error; another error is not
// retried.
func TestDump(t *testing.T) {
	calls := 0
	got, err := nic.Dump(func() ([]int, error) {
		calls++
		if calls < 3 {
			return []int{1}, netlink.ErrDumpInterrupted
		}
		return []int{1, 2}, nil
	})
	if err != nil || len(got) != 2 || calls != 3 {
		t.Errorf("Dump = %v, %v after %d calls; want [1 2], nil after 3", got, err, calls)
	}
	calls = 0
	_, err = nic.Dump(func() ([]int, error) { calls++; return nil, netlink.ErrDumpInterrupted })
	if !errors.Is(err, netlink.ErrDumpInterrupted) || calls != 10 {
		t.Errorf("always interrupted: %v after %d calls; want ErrDumpInterrupted after 10", err, calls)
	}
	calls = 0
	other := errors.New("no such device")
	_, err = nic.Dump(func() ([]int, error) { calls++; return nil, other })
	if err != other || calls != 1 {
		t.Errorf("other error: %v after %d calls; want it at once", err, calls)
	}
}
