package remotehost_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// fakeVersion is what this test binary prints when it runs as
// ".../tunbench version" (InstallSelf uploads it as tunbench).
const fakeVersion = "v0.0.0-sshtest"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "tunbench" && len(os.Args) == 2 && os.Args[1] == "version" {
		// The format of `tunbench version` (internal/cli).
		fmt.Printf("tunbench %s (%s)\n", fakeVersion, runtime.Version())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, ctx context.Context, c remotehost.Config) *remotehost.Host {
	t.Helper()
	h, err := remotehost.Dial(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Two hosts: each command runs in its own host's network namespace, and
// one reaches the other over the underlay.
func TestDialRun(t *testing.T) {
	s := sshtest.New(t, 2)
	ctx := testCtx(t)
	for i, site := range s.Site {
		h := dial(t, ctx, site.Config)
		out, _, err := h.Run(ctx, "ip", "-o", "-4", "addr", "show", "dev", site.Dev)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), site.Addr4+"/24") {
			t.Errorf("site %d: ip addr = %q, want %s/24", i, out, site.Addr4)
		}
		peer := s.Site[1-i]
		if _, _, err := h.Run(ctx, "ping", "-c", "1", "-W", "2", peer.Addr6); err != nil {
			t.Errorf("site %d: ping %s: %v", i, peer.Addr6, err)
		}
	}
	// The IPv6 address is known too.
	c6 := s.Site[1].Config
	c6.Addr = s.Site[1].Addr6
	h6 := dial(t, ctx, c6)
	if out, _, err := h6.Run(ctx, "echo", "v6"); err != nil || string(out) != "v6\n" {
		t.Errorf("Run over IPv6: %q, %v", out, err)
	}

	h := dial(t, ctx, s.Site[0].Config)
	_, _, err := h.Run(ctx, "sh", "-c", "echo bad thing >&2; exit 7")
	var ee *remotehost.ExitError
	if !errors.As(err, &ee) || ee.Status != 7 || strings.TrimSpace(string(ee.Stderr)) != "bad thing" {
		t.Fatalf("Run of a failing command: %v, want an ExitError with status 7 and its stderr", err)
	}
	if want := `remotehost: host s0: sh -c 'echo bad thing >&2; exit 7': exit status 7: bad thing`; err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	<-h.Done()
	if !errors.Is(h.Err(), remotehost.ErrClosed) {
		t.Errorf("Err after Close = %v, want ErrClosed", h.Err())
	}
	if _, _, err := h.Run(ctx, "true"); !errors.Is(err, remotehost.ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
}

// Every argument reaches the remote program exactly as given.
func TestQuotingRoundTrip(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	h := dial(t, ctx, s.Site[0].Config)
	args := []string{
		"", " ", "a b", "'", "''", `"`, `\`, `\'`, `'\''`, "$HOME", "${PATH}", "$(id)", "`id`",
		"*", "?", "~", "~root", "a=b", "-n", "--", "-", "\n", "a\nb\n", "tab\there", "üñí ✓",
		";", "&&", "|", "#", "!", "{a,b}", "[x]", "%s", "%%", "\x01\x7f", "<", ">", "2>&1",
		strings.Repeat("x'y ", 2000),
	}
	out, _, err := h.Run(ctx, append([]string{"printf", `%s\0`}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(out), "\x00")
	got = got[:len(got)-1]
	if len(got) != len(args) {
		t.Fatalf("printf printed %d arguments, want %d: %q", len(got), len(args), out)
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("argument %d: remote got %q, want %q", i, got[i], args[i])
		}
	}
	// An argv[0] that looks like an assignment runs as a command (and is
	// not found), not as an assignment.
	_, _, err = h.Run(ctx, "TUNBENCH_X=1", "true")
	var ee *remotehost.ExitError
	if !errors.As(err, &ee) || ee.Status != 127 {
		t.Errorf("Run(\"TUNBENCH_X=1\", \"true\") = %v, want exit status 127 (command not found)", err)
	}
}

func TestUnknownHostKey(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	site := s.Site[0]
	for _, kh := range []string{"empty", "missing"} {
		c := site.Config
		c.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
		if kh == "empty" {
			if err := os.WriteFile(c.KnownHosts, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		h, err := remotehost.Dial(ctx, c)
		if err == nil {
			h.Close()
			t.Fatalf("%s known_hosts: Dial succeeded", kh)
		}
		if !errors.Is(err, remotehost.ErrUnknownHostKey) {
			t.Errorf("%s known_hosts: %v, want ErrUnknownHostKey", kh, err)
		}
		fp := ssh.FingerprintSHA256(site.HostKey)
		for _, want := range []string{
			"ssh-keyscan -p 22 -t ed25519 " + site.Addr4 + " >> " + c.KnownHosts,
			"check the fingerprint " + fp + " against the host's `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`",
			"host s0 (" + site.Addr4 + ":22)",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s known_hosts: error %q\nlacks %q", kh, err, want)
			}
		}
	}
}

func TestChangedHostKey(t *testing.T) {
	s := sshtest.New(t, 2)
	ctx := testCtx(t)
	c := s.Site[0].Config
	// known_hosts says site 0's address has site 1's key.
	c.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{s.Site[0].Addr4}, s.Site[1].HostKey) + "\n"
	if err := os.WriteFile(c.KnownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := remotehost.Dial(ctx, c)
	if err == nil {
		h.Close()
		t.Fatal("Dial accepted a changed host key")
	}
	if !errors.Is(err, remotehost.ErrHostKeyChanged) {
		t.Fatalf("%v, want ErrHostKeyChanged", err)
	}
	for _, want := range []string{
		"it offers ssh-ed25519 " + ssh.FingerprintSHA256(s.Site[0].HostKey),
		"known_hosts has ssh-ed25519 " + ssh.FingerprintSHA256(s.Site[1].HostKey) + " at " + c.KnownHosts + ":1",
		"ssh-keygen -f " + c.KnownHosts + " -R " + s.Site[0].Addr4,
		"ssh-keyscan -p 22 -t ed25519 " + s.Site[0].Addr4 + " >> " + c.KnownHosts,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
}

// With no identity file, the keys of the ssh-agent at SSH_AUTH_SOCK log in.
func TestAgentAuth(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	data, err := os.ReadFile(s.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.ParseRawPrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
	c := s.Site[0].Config
	c.IdentityFile = ""
	h := dial(t, ctx, c)
	if out, _, err := h.Run(ctx, "echo", "ok"); err != nil || string(out) != "ok\n" {
		t.Errorf("Run over an agent-authenticated connection: %q, %v", out, err)
	}
}

func TestWriteReadFile(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	h := dial(t, ctx, s.Site[0].Config)
	dir := t.TempDir() // the sites share the test's filesystem
	data := make([]byte, 1<<20+3)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a file's name")
	if err := h.WriteFile(ctx, p, bytes.NewReader(data), 0o640); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %o, want 640", st.Mode().Perm())
	}
	got, err := h.ReadFile(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes, differing from the %d written", len(got), len(data))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only the file (no temporary left)", dir, len(entries))
	}
	if err := h.WriteFile(ctx, filepath.Join(dir, "no", "such", "dir", "f"), strings.NewReader("x"), 0o600); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
	if _, err := h.ReadFile(ctx, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want an error matching fs.ErrNotExist", err)
	}
	if _, err := h.ReadFile(ctx, dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a directory: %v, want cat's error", err)
	}
	names, err := h.FileNames(ctx, filepath.Dir(dir))
	if err != nil || !slices.Contains(names, p) {
		t.Errorf("FileNames(%s) = %v, %v; want it to list %s", filepath.Dir(dir), names, err, p)
	}
	if _, err := h.FileNames(ctx, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FileNames of a missing directory: %v, want an error matching fs.ErrNotExist", err)
	}
}

func TestInstallSelf(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	h := dial(t, ctx, s.Site[0].Config)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	remote := filepath.Join(dir, "tunbench")
	inode := func() uint64 {
		st, err := os.Stat(remote)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("%s has mode %o, want 755", remote, st.Mode().Perm())
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	// An older tunbench is there: it is replaced.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(remote, []byte("#!/bin/sh\necho 'tunbench v0.0.0-old (go1.20)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := h.InstallSelf(ctx, dir, fakeVersion, self)
	if err != nil {
		t.Fatal(err)
	}
	if got != remote {
		t.Errorf("InstallSelf = %s, want %s", got, remote)
	}
	first := inode()
	// The right version is there: it is reused, not uploaded again.
	if _, err := h.InstallSelf(ctx, dir, fakeVersion, self); err != nil {
		t.Fatal(err)
	}
	if inode() != first {
		t.Error("InstallSelf uploaded again although the installed binary prints the same version")
	}
	// The binary given is not this version: the mismatch is reported.
	_, err = h.InstallSelf(ctx, dir, "v9.9.9", self)
	if err == nil || !strings.Contains(err.Error(), "prints version "+fakeVersion+", not v9.9.9") {
		t.Errorf("InstallSelf with another version: %v, want a version mismatch", err)
	}
	if inode() == first {
		t.Error("InstallSelf did not upload when the installed version differed")
	}
}

func TestMissingTools(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	h := dial(t, ctx, s.Site[0].Config)
	missing, err := h.MissingTools(ctx, []remotehost.Tool{
		{Program: "sh"},
		{Program: "tunbench-no-such-tool", Package: "tunbench-no-such-package"},
		{Program: "ip", Package: "iproute2"},
		{Program: "it's absent"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := remotehost.MissingReport(h.Name(), missing)
	want := "host s0 lacks tunbench-no-such-tool, it's absent: apt-get install -y --no-install-recommends tunbench-no-such-package it's absent"
	if got != want {
		t.Errorf("report %q\nwant   %q", got, want)
	}
}

// Killing the host's sshd (and so the connection's server side) is seen
// by Done within a few seconds; after a restart the host can be dialled
// again.
func TestKilledSSHDDetected(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	site := s.Site[0]
	h := dial(t, ctx, site.Config)
	sess, err := h.Start(ctx, "sleep", "1000")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := site.KillSSHD(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5s after sshd was killed")
	}
	t.Logf("lost connection seen after %v: %v", time.Since(start).Round(time.Millisecond), h.Err())
	if !errors.Is(h.Err(), remotehost.ErrConnectionLost) {
		t.Errorf("Err = %v, want ErrConnectionLost", h.Err())
	}
	if err := sess.Wait(); !errors.Is(err, remotehost.ErrConnectionLost) {
		t.Errorf("Wait of a command on the lost host = %v, want ErrConnectionLost", err)
	}
	if _, _, err := h.Run(ctx, "true"); !errors.Is(err, remotehost.ErrConnectionLost) {
		t.Errorf("Run on the lost host = %v, want ErrConnectionLost", err)
	}
	if err := site.RestartSSHD(); err != nil {
		t.Fatal(err)
	}
	h2 := dial(t, ctx, site.Config)
	if _, _, err := h2.Run(ctx, "true"); err != nil {
		t.Errorf("Run after restart: %v", err)
	}
}

// A host that falls silent (sshd stopped, TCP still open) is found by the
// keepalives.
func TestSilentHostDetected(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	site := s.Site[0]
	h := dial(t, ctx, site.Config)
	if _, _, err := h.Run(ctx, "true"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := site.SignalSSHD(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer site.SignalSSHD(syscall.SIGCONT)
	limit := remotehost.KeepaliveInterval*time.Duration(remotehost.KeepaliveMissed+1) + 2*time.Second
	select {
	case <-h.Done():
	case <-time.After(limit):
		t.Fatalf("Done not closed %v after the host fell silent", limit)
	}
	t.Logf("silent host seen after %v: %v", time.Since(start).Round(time.Millisecond), h.Err())
	if !errors.Is(h.Err(), remotehost.ErrConnectionLost) || !strings.Contains(h.Err().Error(), "keepalives") {
		t.Errorf("Err = %v, want ErrConnectionLost from keepalives", h.Err())
	}
}

// Cancelling Run kills the remote command and everything in its process
// group.
func TestRunCancelKills(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	h := dial(t, ctx, s.Site[0].Config)
	pidFile := filepath.Join(t.TempDir(), "pids")
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, _, err := h.Run(runCtx, "sh", "-c", `sleep 1000 & echo $$ $! > "$1"; wait`, "sh", pidFile)
		errc <- err
	}()
	pids := sshtest.WaitPids(t, pidFile, 5*time.Second)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Run = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled Run did not return within 5s")
	}
	// The kill goes over a session of its own: on a loaded machine its
	// start alone can take seconds.
	for _, pid := range pids {
		sshtest.WaitDead(t, pid, killWithin)
	}
	// The connection survives a cancelled command.
	if _, _, err := h.Run(ctx, "true"); err != nil {
		t.Errorf("Run after a cancelled one: %v", err)
	}
}

// A started command carries a byte stream both ways, reports its exit,
// and dies with Close.
func TestStart(t *testing.T) {
	s := sshtest.New(t, 1)
	ctx := testCtx(t)
	h := dial(t, ctx, s.Site[0].Config)

	sess, err := h.Start(ctx, "cat")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	for i := 0; i < 100; i++ {
		msg := fmt.Sprintf("%05d", i)
		if _, err := sess.Stdin.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(sess.Stdout, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %d: got %q, %v", i, buf, err)
		}
	}
	sess.Stdin.Close()
	if err := sess.Wait(); err != nil {
		t.Errorf("cat after EOF: %v", err)
	}

	sess, err = h.Start(ctx, "sh", "-c", "echo oops >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	var ee *remotehost.ExitError
	if err := sess.Wait(); !errors.As(err, &ee) || ee.Status != 3 || string(ee.Stderr) != "oops\n" {
		t.Errorf("Wait = %v, want exit status 3 with stderr oops", err)
	}

	pidFile := filepath.Join(t.TempDir(), "pid")
	sess, err = h.Start(ctx, "sh", "-c", `echo $$ > "$1"; exec sleep 1000`, "sh", pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pids := sshtest.WaitPids(t, pidFile, 5*time.Second)
	sess.Close()
	for _, pid := range pids {
		sshtest.WaitDead(t, pid, killWithin)
	}
	if err := sess.Wait(); !errors.As(err, &ee) || ee.Signal != "KILL" {
		t.Errorf("Wait after Close = %v, want killed by signal KILL", err)
	}

	// Cancelling Start's ctx kills the command too.
	startCtx, cancel := context.WithCancel(ctx)
	sess, err = h.Start(startCtx, "sleep", "1000")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Pid <= 1 {
		t.Fatalf("Session.Pid = %d", sess.Pid)
	}
	cancel()
	sshtest.WaitDead(t, sess.Pid, killWithin)
	if err := sess.Wait(); !errors.As(err, &ee) || ee.Signal != "KILL" {
		t.Errorf("Wait after cancel = %v, want killed by signal KILL", err)
	}
}

// killWithin is how long a command killed over the connection may take to
// die: the SIGKILL goes over a new session (kill -KILL -PGID), which a
// loaded machine (make test's four packages at once beside the fuzzer)
// has taken over 3 s to start.
const killWithin = 10 * time.Second

// The cost of one command round trip (a session: open, exec, exit status,
// close) and of a connection (TCP, key exchange, host key check, login).
func BenchmarkRun(b *testing.B) {
	s := sshtest.New(b, 1)
	ctx := context.Background()
	h, err := remotehost.Dial(ctx, s.Site[0].Config)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := h.Run(ctx, "true"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDial(b *testing.B) {
	s := sshtest.New(b, 1)
	ctx := context.Background()
	for b.Loop() {
		h, err := remotehost.Dial(ctx, s.Site[0].Config)
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}
