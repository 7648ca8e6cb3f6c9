package labtest

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunTestsInGuest boots one guest and runs TestGuestSide there.
func TestRunTestsInGuest(t *testing.T) {
	k := Kernel(t)
	RunTestsInGuestWith(t, ".", "^TestGuestSide$", Options{Env: []string{"LABTEST_WANT_KERNEL=" + k.Version}})
}

// TestGuestSide runs only in the guest, started by TestRunTestsInGuest.
func TestGuestSide(t *testing.T) {
	if !InLab() {
		t.Skip("runs inside the kernel lab, through TestRunTestsInGuest")
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	if got, want := unix.ByteSliceToString(u.Release[:]), os.Getenv("LABTEST_WANT_KERNEL"); got != want {
		t.Errorf("guest kernel %q, want %q", got, want)
	}
	if os.Geteuid() != 0 {
		t.Errorf("guest test runs as uid %d, want root", os.Geteuid())
	}
	wd, err := os.Getwd()
	if err != nil || !strings.HasSuffix(wd, "/internal/lab/labtest") {
		t.Errorf("guest working directory %q (%v), want the package's source directory", wd, err)
	}
	if _, err := os.Stat("testdata/verbose.txt"); err != nil {
		t.Errorf("package testdata not visible in the guest: %v", err)
	}
}
