package agent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
)

// TestAgentEndpoint drives a remote endpoint through a real agent process
// in a namespace: commands, exit statuses, signals, standard input,
// files, netlink, and the cleanup the agent does when its controller goes.
func TestAgentEndpoint(t *testing.T) {
	l, pair, agents := testbedtest.AgentPair(t, 0)
	b := pair.B
	ctx := context.Background()
	if b.Local() {
		t.Fatal("agent endpoint claims to be local")
	}

	out, err := b.Run(ctx, "ip", "-o", "-4", "addr", "show", "dev", b.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), localns.UnderlayB4.String()) {
		t.Errorf("command did not run in b's namespace: %s", out)
	}

	err = b.Command(ctx, "sh", "-c", "exit 3").Wait()
	if err == nil {
		t.Error("Wait before Start succeeded")
	}
	c := b.Command(ctx, "sh", "-c", "echo out; echo err >&2; exit 3")
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	if err := b.Start(c); err != nil {
		t.Fatal(err)
	}
	var ee *testbed.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("exit status: got %v, want exit status 3", err)
	}
	b.Forget(c)
	if so.String() != "out\n" || se.String() != "err\n" {
		t.Errorf("output: stdout %q stderr %q", so.String(), se.String())
	}

	// The exit status carries the CPU time the process used (what
	// accounts a client that exited before its CPU could be read).
	busy := b.Command(ctx, "sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
	if _, _, ok := busy.CPUTime(); ok {
		t.Error("CPU time before Start")
	}
	if err := b.Start(busy); err != nil {
		t.Fatal(err)
	}
	if err := busy.Wait(); err != nil {
		t.Fatal(err)
	}
	b.Forget(busy)
	if user, sys, ok := busy.CPUTime(); !ok || user+sys <= 0 {
		t.Errorf("CPU time through the agent: user %v, system %v, reported %v: want some, reported", user, sys, ok)
	}

	cat := b.Command(ctx, "cat")
	in, err := cat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var echoed bytes.Buffer
	cat.Stdout = &echoed
	if err := b.Start(cat); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(in, "through the agent\n")
	in.Close()
	if err := cat.Wait(); err != nil || echoed.String() != "through the agent\n" {
		t.Errorf("stdin round trip: %v %q", err, echoed.String())
	}
	b.Forget(cat)

	sleep := b.Command(ctx, "sleep", "100")
	if err := b.Start(sleep); err != nil {
		t.Fatal(err)
	}
	if err := sleep.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := sleep.Wait(); !testbed.Signaled(err) {
		t.Errorf("killed process: got %v, want a signal", err)
	}
	b.Forget(sleep)

	file := b.Path("probe")
	if err := b.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := b.ReadFile(file); err != nil || string(data) != "x" {
		t.Errorf("ReadFile: %q, %v", data, err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("file mode: %v %v", st, err)
	}

	if _, err := b.NL.LinkByName("nonexistent0"); !testbed.IsLinkNotFound(err) {
		t.Errorf("lookup of a missing device: got %v, want link not found", err)
	}
	if _, err := b.NL.LinkByName(b.Dev); err != nil {
		t.Errorf("lookup of the underlay: %v", err)
	}
	id := filepath.Base(filepath.Dir(b.Dir))
	name := testbed.DevicePrefix(id) + "-d"
	if err := b.NL.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		t.Fatal(err)
	}
	if err := b.NL.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("adding a device twice: got %v, want EEXIST kept across the agent", err)
	}
	if _, err := l.B.NL.LinkByName(name); err != nil {
		t.Errorf("device added through the agent is not in b's namespace: %v", err)
	}
	if err := b.WaitListening(ctx, os.Getpid(), 1, 50*time.Millisecond); err == nil {
		t.Error("WaitListening found a listener on port 1")
	}

	left := b.Command(ctx, "sleep", "100")
	if err := b.Start(left); err != nil {
		t.Fatal(err)
	}
	pid := left.Pid()
	// The controller goes away: the agent kills what runs, deletes the
	// run's devices and its directory.
	if err := agents[1].Conn.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, procErr := os.Stat("/proc/" + strconv.Itoa(pid))
		_, linkErr := l.B.NL.LinkByName(name)
		_, dirErr := os.Stat(b.Dir)
		if procErr != nil && linkErr != nil && dirErr != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the controller left: process %v, device %v, directory %v (nil means still there)", procErr, linkErr, dirErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := b.Run(ctx, "true"); !errors.Is(err, agent.ErrLost) {
		t.Errorf("command after close: got %v, want ErrLost", err)
	}
}

// TestAgentRefusesOtherVersion: a controller and an agent of different
// builds do not talk.
func TestAgentRefusesOtherVersion(t *testing.T) {
	l := testbedtest.New(t, 0)
	a := testbedtest.StartAgentNoHello(t, l.B.Namespace)
	err := a.Conn.Hello(context.Background(), agent.Hello{Version: "other", ID: testbed.NewID(), Site: "x", Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "install the same tunbench on both") {
		t.Fatalf("got %v, want a version mismatch naming the fix", err)
	}
}

// TestClockOffsetOfAgent: the agent runs on this machine's clock, so the
// measured offset must be zero within the stated uncertainty.
func TestClockOffsetOfAgent(t *testing.T) {
	_, pair, _ := testbedtest.AgentPair(t, 0)
	off, unc, err := testbed.ClockOffset(context.Background(), pair.B, 8)
	if err != nil {
		t.Fatal(err)
	}
	if unc <= 0 {
		t.Errorf("uncertainty %v: a round trip takes time", unc)
	}
	if off < -unc-time.Millisecond || off > unc+time.Millisecond {
		t.Errorf("offset %v outside ±%v on one clock", off, unc)
	}
}
