package nic

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

var capture = flag.Bool("capture", false, "rewrite testdata/ with replies captured from this kernel")

// TestCaptureTestdata refreshes the captured kernel replies that the
// decoder tests read: run `go test ./internal/nic -run Capture -capture`.
// Each raw reply is stored next to the `ethtool -k` output taken at the
// same moment, so the decoder is checked against ethtool itself.
func TestCaptureTestdata(t *testing.T) {
	if !*capture {
		t.Skip("capture only with -capture")
	}
	tb := newTestbed(t, true)
	c, err := dial(tb.a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	req, err := encodeFeatureNamesGet()
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := execute(c.c, c.family, unix.ETHTOOL_MSG_STRSET_GET, req, netlink.Request)
	if err != nil {
		t.Fatal(err)
	}
	write(t, "strset-features.bin", msgs[0].Data)
	for _, dev := range []string{"va", "vx0"} {
		b, err := c.featuresReply(dev)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("ip", "netns", "exec", tb.nameA, "ethtool", "-k", dev)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ethtool -k %s: %v\n%s", dev, err, out)
		}
		write(t, "features-"+dev+".bin", b)
		write(t, "ethtool-k-"+dev+".txt", out)
	}
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
