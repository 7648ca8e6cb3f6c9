package testbed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestStartRecordsPid: a started process's pid is in the run directory
// (where "tunbench clean" finds it after a SIGKILL) until it is forgotten.
func TestStartRecordsPid(t *testing.T) {
	ep := &testbed.Endpoint{Side: "a", NS: -1, Dir: t.TempDir()}
	c := ep.Command(context.Background(), "sleep", "30")
	if err := ep.Start(c); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(ep.Dir, "pids", strconv.Itoa(c.Pid()))
	got, err := os.ReadFile(pidFile)
	if err != nil {
		t.Errorf("pid file of a running process: %v", err)
	} else if prog, start, _ := strings.Cut(string(got), "\n"); prog != "sleep" || start == "" {
		t.Errorf("pid file holds %q, want the program, sleep, and its start time", got)
	}
	if err := ep.StopAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file after StopAll: %v, want it removed", err)
	}
}

// TestStartFailsWithoutPidFile: a process whose pid cannot be recorded
// would outlive a killed run, so starting it fails and it is stopped again.
func TestStartFailsWithoutPidFile(t *testing.T) {
	dir := t.TempDir()
	// A file where the pids directory belongs: nothing can be recorded.
	if err := os.WriteFile(filepath.Join(dir, "pids"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ep := &testbed.Endpoint{Side: "a", NS: -1, Dir: dir}
	// A duration no other process uses marks both the shell and its child.
	marker := "1000." + strconv.Itoa(os.Getpid())
	c := ep.Command(context.Background(), "sh", "-c", "sleep "+marker+"; true")
	err := ep.Start(c)
	if err == nil {
		_ = ep.StopAll()
		t.Fatal("Start succeeded although the pid could not be recorded")
	}
	if !strings.Contains(err.Error(), "record pid") || !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("error %q: want it to say the pid was not recorded, wrapping ENOTDIR", err)
	}
	if c.Started() {
		t.Error("the command counts as started")
	}
	// Nothing of it is left running.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesWith(t, marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left running after the failed start: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := ep.StopAll(); err != nil {
		t.Errorf("StopAll after a failed start: %v", err)
	}
}

// TestAgentRefusesRunWithoutPidFile: an agent that cannot record its own
// pid could not be ended by cleaning its site, so it refuses the run.
func TestAgentRefusesRunWithoutPidFile(t *testing.T) {
	l := testbedtest.New(t, 0)
	a := testbedtest.StartAgentNoHello(t, l.B.Namespace)
	root, id := t.TempDir(), testbed.NewID()
	site := testbed.SiteDir(root, id, "x")
	if err := os.MkdirAll(site, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "pids"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := a.Conn.Hello(context.Background(), agent.Hello{Version: testbedtest.AgentVersion, ID: id, Site: "x", Root: root})
	if err == nil || !strings.Contains(err.Error(), "record pid") {
		t.Fatalf("hello: got %v, want a refusal saying the pid was not recorded", err)
	}
	if _, err := os.Stat(filepath.Join(testbed.LockDir, id+".lock")); err == nil {
		t.Errorf("the refused hello left its run's lock file behind")
	}
}

// processesWith returns the pids of live processes whose command line
// contains s (zombies are not running anything).
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		pids = append(pids, filepath.Base(d))
	}
	return pids
}

// TestCleanSparesReusedPid: a recorded pid now held by another process of
// the same program (pids wrap; another run's tunbench is a tunbench too)
// is left alone, told apart by its start time; the recorded process
// itself is killed.
func TestCleanSparesReusedPid(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	root, id := t.TempDir(), testbed.NewID()
	dir := testbed.SiteDir(root, id, "s")
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = other.Wait(); close(exited) }()
	defer func() { _ = other.Process.Kill(); <-exited }()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", other.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+1:])
	start, _ := strconv.Atoi(f[19])
	record := func(start int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pids", strconv.Itoa(other.Process.Pid)), fmt.Appendf(nil, "sleep\n%d", start), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The record is of an earlier sleep that had this pid.
	record(start - 1)
	if _, err := agent.CleanSite(root, id, "s"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatal("clean killed a process that only reuses a recorded pid")
	case <-time.After(200 * time.Millisecond):
	}

	// The record is of this very process.
	record(start)
	if _, err := agent.CleanSite(root, id, "s"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("clean left the recorded process running")
	}
}
