package udpgen

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// sysctlInt reads an integer from /proc/sys.
func sysctlInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// withoutNetAdmin runs fn on a thread without CAP_NET_ADMIN in its
// effective set, as a tunbench without that capability would run, and
// restores the capability afterwards (capabilities are per thread).
func withoutNetAdmin(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var orig [2]unix.CapUserData
		if err := unix.Capget(&hdr, &orig[0]); err != nil {
			t.Errorf("capget: %v", err)
			return // the thread stays locked and ends with the goroutine
		}
		if orig[0].Effective&(1<<unix.CAP_NET_ADMIN) == 0 {
			runtime.UnlockOSThread()
			t.Errorf("no CAP_NET_ADMIN to drop")
			return
		}
		dropped := orig
		dropped[0].Effective &^= 1 << unix.CAP_NET_ADMIN
		if err := unix.Capset(&hdr, &dropped[0]); err != nil {
			t.Errorf("capset: %v", err)
			return
		}
		fn()
		if unix.Capset(&hdr, &orig[0]) == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}

// The buffer each side asks for is read back as the kernel granted it:
// in full with CAP_NET_ADMIN whatever net.core.wmem_max/rmem_max say, and
// capped by them without it, which ShortBuffer then says.
func TestSizeBuffer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to set a buffer beyond net.core.wmem_max")
	}
	for _, c := range []struct {
		side  string
		send  bool
		limit string
	}{
		{"send", true, "/proc/sys/net/core/wmem_max"},
		{"receive", false, "/proc/sys/net/core/rmem_max"},
	} {
		t.Run(c.side, func(t *testing.T) {
			limit := sysctlInt(t, c.limit)
			if limit > 1<<28 {
				t.Skipf("%s is %d: no request above it fits an int socket option", c.limit, limit)
			}
			want := 2 * limit // above the limit: only the forcing option grants it
			size := func() (int, error) {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return 0, err
				}
				defer unix.Close(fd)
				return sizeBuffer(fd, c.send, want)
			}

			got, err := size()
			if err != nil {
				t.Fatal(err)
			}
			if got != 2*want {
				t.Errorf("with CAP_NET_ADMIN: granted %d, want %d (%d doubled)", got, 2*want, want)
			}
			if n := ShortBuffer(c.side, want, got); n != "" {
				t.Errorf("buffer granted in full called short: %q", n)
			}

			var gotCapped int
			withoutNetAdmin(t, func() { gotCapped, err = size() })
			if err != nil {
				t.Fatalf("without CAP_NET_ADMIN: %v", err)
			}
			if gotCapped != 2*limit {
				t.Errorf("without CAP_NET_ADMIN: granted %d, want %d (%s %d doubled)", gotCapped, 2*limit, c.limit, limit)
			}
			n := ShortBuffer(c.side, want, gotCapped)
			wantNote := c.side + " buffer " + strconv.Itoa(gotCapped) + " bytes, below the " + strconv.Itoa(2*want) + " asked"
			if !strings.Contains(n, wantNote) || !strings.Contains(n, strings.ReplaceAll(strings.TrimPrefix(c.limit, "/proc/sys/"), "/", ".")) {
				t.Errorf("note %q: want it to say %q and name the limit", n, wantNote)
			}
		})
	}
}
