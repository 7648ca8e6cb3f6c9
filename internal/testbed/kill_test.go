package testbed

import (
	"os/exec"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// comm may hold spaces and parentheses: fields count from the last ')'.
	line := "4242 (ovs-vswitchd (x) y) S 1 4242 4242 0 -1 4194560 2191 0 0 0 12 7 0 0 20 0 3 0 987654 123 456 0 0\n"
	st, ok := parseProcStat(line)
	if !ok || st.comm != "ovs-vswitchd (x) y" || st.state != 'S' || st.start != "987654" {
		t.Errorf("parseProcStat = %+v, %v; want comm %q, state S, start 987654", st, ok, "ovs-vswitchd (x) y")
	}
	for _, bad := range []string{"", "4242 ovs", "4242 (x) S 1 2"} {
		if _, ok := parseProcStat(bad); ok {
			t.Errorf("parseProcStat(%q) accepted a malformed line", bad)
		}
	}
}

// TestWaitGoneZombie kills a real child: waitGone counts it gone while it
// is still a zombie (this test, its parent, has not reaped it), and a
// live process as a survivor.
func TestWaitGoneZombie(t *testing.T) {
	live := exec.Command("sleep", "60")
	dead := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{live, dead} {
		if err := c.Start(); err != nil {
			t.Skipf("cannot start sleep: %v", err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	v, err := Kill(dead.Process.Pid)
	if err != nil || v == nil {
		t.Fatalf("Kill(%d) = %v, %v", dead.Process.Pid, v, err)
	}
	st, _ := readProcStat(live.Process.Pid)
	alive := Victim{Pid: live.Process.Pid, start: st.start, Name: "sleep"}
	got := waitGone([]Victim{*v, alive}, 300*time.Millisecond)
	if len(got) != 1 || got[0].Pid != live.Process.Pid {
		t.Errorf("waitGone = %v, want only the live sleep %d", got, live.Process.Pid)
	}
	// A pid taken over by another process is not the victim.
	reused := Victim{Pid: live.Process.Pid, start: "1", Name: "old"}
	if !reused.gone() {
		t.Errorf("a victim whose pid has another start time is not gone")
	}
}
