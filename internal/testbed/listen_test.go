package testbed

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

func TestListeningIn(t *testing.T) {
	data := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100A8C6:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123 1 0000000000000000 100 0 0 10 0
   1: 0100A8C6:B2D2 0200A8C6:1452 01 00000000:00000000 00:00000000 00000000     0        0 124 1 0000000000000000 100 0 0 10 0
`)
	if !listeningIn(data, 5201) {
		t.Error("port 5201 (0x1451) in state 0A not seen as listening")
	}
	if listeningIn(data, 5202) {
		t.Error("port 5202 is only a connection's remote port, not a listener")
	}
}

// TestListeningOwnSocket: a listener of another process on the same port
// and another address in the namespace (the host's own iperf3, as
// TestSSHForeignState's hosts run) is not the waited-for process's; its
// own listener is, once it binds.
func TestListeningOwnSocket(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := other.Addr().(*net.TCPAddr).Port
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	ep := &Endpoint{Side: "b", NS: -1}
	if ok, err := ep.listening(sleeper.Process.Pid, port); err != nil || ok {
		t.Errorf("a process that listens nowhere: listening = %v, %v; want false (port %d is another process's)", ok, err, port)
	}
	if ok, err := ep.listening(os.Getpid(), port); err != nil || !ok {
		t.Errorf("this process's own listener on port %d: listening = %v, %v; want true", port, ok, err)
	}
}
