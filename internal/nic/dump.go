package nic

import (
	"errors"
	"time"

	"github.com/vishvananda/netlink"
)

// dumpTries bounds Dump's retries.
const dumpTries = 10

// Dump returns what list returns once the kernel's dump behind it was not
// interrupted: a netlink dump (addresses, routes, links) that the kernel
// marks NLM_F_DUMP_INTR, because the table changed while it was read (as
// it does while a device comes up: IPv6 addresses, routes), fails with
// netlink.ErrDumpInterrupted and may be incomplete. Dump reads it again,
// up to 10 times 10 ms apart, and returns the last error otherwise.
func Dump[T any](list func() ([]T, error)) ([]T, error) {
	for i := 1; ; i++ {
		out, err := list()
		if !errors.Is(err, netlink.ErrDumpInterrupted) || i == dumpTries {
			return out, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
