package runner

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

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

// TestRecoverJournal: before the flap the underlay is journaled (the
// entry that sets it up with its addresses); ensureUp sets it up again
// and drops the entry.
func TestRecoverJournal(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	l, err := testbed.NewLocal(testbed.Config{ID: testbed.NewID(), MTU: 1500, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := l.Pair().A
	if err := journalLinkUp(a); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(a.Dir, "undo", recoverUndo(a.Dev))
	data, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("no journal entry before the flap: %v", err)
	}
	var u testbed.Undo
	if err := json.Unmarshal(data, &u); err != nil || u.Kind != testbed.UndoAddrs || u.Dev != a.Dev || len(u.Addrs) == 0 {
		t.Errorf("journal entry %s: %+v, %v; want the addresses of %s", entry, u, err, a.Dev)
	}
	link, err := a.NL.LinkByName(a.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.NL.LinkSetDown(link); err != nil {
		t.Fatal(err)
	}
	if err := ensureUp(a); err != nil {
		t.Fatal(err)
	}
	if link, _ = a.NL.LinkByName(a.Dev); link.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("%s still down after ensureUp", a.Dev)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("journal entry left after ensureUp: %v", err)
	}
}
