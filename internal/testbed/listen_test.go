package testbed

import "testing"

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
