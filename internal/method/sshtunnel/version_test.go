package sshtunnel

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation: "OpenSSH 9.2p1, OpenSSL 3.0.22" from the captured
// output of the real program, and this machine's own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, programVersion, "testdata/ssh_version.txt", "OpenSSH 9.2p1, OpenSSL 3.0.22")
	if got, want := New().Implementation(), v+" (ssh -w, userspace, TUN over TCP)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
