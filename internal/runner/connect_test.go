package runner

import "testing"

func TestUDPBoundIn(t *testing.T) {
	data := []byte(`   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 00000000:3242 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 0
`)
	if !udpBoundIn(data, 12866) {
		t.Error("port 12866 (0x3242) not found")
	}
	if udpBoundIn(data, 5201) {
		t.Error("port 5201 found")
	}
	if got := string(lastLine([]byte("{\"a\":1}\nrr probe: failed\n"))); got != `{"a":1}` {
		t.Errorf("lastLine = %q", got)
	}
}
