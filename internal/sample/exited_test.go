package sample

import (
	"context"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// exitedProcess runs a shell that spends some CPU time and exits, and
// waits for it: by the time the caller tracks its pid, the process has
// exited and been reaped, as a short iperf3 client had on a loaded ssh
// host before its CPU tracking started (TestSSHForeignState's "track
// process N: file does not exist"). It returns the pid and the CPU time
// its exit status gives.
func exitedProcess(t *testing.T) (pid int, user, sys time.Duration) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
}

// A process gone before it is tracked does not fail the measurement: it
// is accounted from its exit status (ExitedCPU), its whole CPU time.
func TestTrackProcessThatHasExited(t *testing.T) {
	pid, user, sys := exitedProcess(t)
	s := NewSampler(&ProcFS{}, 50*time.Millisecond)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.TrackProcess("iperf3-client", SideSender, pid); err != nil {
		t.Fatalf("tracking a process that exited: %v", err)
	}
	if tr := s.Tracked(); len(tr) != 1 || !tr[0].Exited {
		t.Errorf("tracked %+v: want the one process, exited", tr)
	}
	if !s.ExitedCPU(pid, user, sys) {
		t.Fatal("ExitedCPU did not take the exit status's CPU time")
	}
	if s.ExitedCPU(pid, user, sys) {
		t.Error("ExitedCPU took a second CPU time for the same process")
	}
	cpu, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpu.Processes) != 1 {
		t.Fatalf("processes %+v: want one", cpu.Processes)
	}
	p := cpu.Processes[0]
	tick := 1 / ClockTicks()
	if math.Abs(p.User-user.Seconds()) > tick || math.Abs(p.System-sys.Seconds()) > tick || p.User+p.System <= 0 {
		t.Errorf("accounted user %v s, system %v s: want the exit status's %v, %v (and above zero)", p.User, p.System, user, sys)
	}
	if p.Cores <= 0 || cpu.SenderCores != p.Cores {
		t.Errorf("cores %v, sender cores %v: want the process's share, on the sender", p.Cores, cpu.SenderCores)
	}
}

// Tracked before Start, gone by Start: accounted the same way.
func TestTrackProcessExitedBeforeStart(t *testing.T) {
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := NewSampler(&ProcFS{}, 50*time.Millisecond)
	if err := s.TrackProcess("iperf3-client", SideSender, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("start with a tracked process that exited since: %v", err)
	}
	s.ExitedCPU(cmd.Process.Pid, cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime())
	if _, err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

// Without its exit status's CPU time, such a process fails Stop, saying
// why: a zero would read as free.
func TestTrackProcessExitedWithoutCPUTime(t *testing.T) {
	pid, _, _ := exitedProcess(t)
	s := NewSampler(&ProcFS{}, 50*time.Millisecond)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.TrackProcess("iperf3-client", SideSender, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stop(); err == nil || !strings.Contains(err.Error(), "exited before its CPU time could be read") {
		t.Errorf("Stop: %v, want the process's CPU time unknown", err)
	}
}
