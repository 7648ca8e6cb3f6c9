package sshtest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitPids waits up to within for a remote command to write its pids to
// path, one line ending in a newline (the hosts of these tests share this
// machine's file system and pid space), and returns them.
func WaitPids(t testing.TB, path string, within time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		data, _ := os.ReadFile(path)
		if strings.HasSuffix(string(data), "\n") {
			var pids []int
			for _, f := range strings.Fields(string(data)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("%s: %q", path, data)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("remote command did not write %s within %s", path, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitDead fails t unless pid is gone (or a zombie) within the bound.
func WaitDead(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(data, ')'); i > 0 && i+2 < len(data) && (data[i+2] == 'Z' || data[i+2] == 'X') {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("remote process %d still alive %s after it was killed: %s", pid, within, data)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
