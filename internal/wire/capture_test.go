package wire_test

import (
	"context"
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.pcap from live captures")

// TestStartStop captures a ping over the plain underlay of a fresh testbed.
func TestStartStop(t *testing.T) {
	l := testbedtest.New(t, 1500)
	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := l.A.Run(context.Background(), "ping", "-c", "3", "-i", "0.2", "-s", "1000", "-W", "3", l.B.Addr4.Addr().String()); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Stop()
	if err != nil || len(again) != len(pkts) {
		t.Errorf("second Stop = %d packets, %v; want the same %d, nil", len(again), err, len(pkts))
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	echoes := wire.Filter(frames, func(f wire.Frame) bool {
		return f.Family == wire.IPv4 && f.Proto == wire.ProtoICMP && f.IPLen == 1028
	})
	// Both directions: three requests and three replies.
	if len(echoes) != 6 {
		t.Errorf("captured %d ICMP frames of 1028 bytes, want 6; frames:\n%s", len(echoes), list(frames))
	}
	for _, p := range pkts {
		ci := p.Metadata().CaptureInfo
		if ci.CaptureLength > wire.SnapLen || len(p.Data()) != ci.CaptureLength {
			t.Errorf("captured %d bytes (data %d), want at most %d", ci.CaptureLength, len(p.Data()), wire.SnapLen)
		}
	}
	for _, f := range echoes {
		if f.WireLen != 14+1028 {
			t.Errorf("wire length %d, want %d", f.WireLen, 14+1028)
		}
	}
}

// TestCaptureBounded floods more frames than a capture keeps.
func TestCaptureBounded(t *testing.T) {
	l := testbedtest.New(t, 1500)
	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	// Each echo is two frames: send four times what the capture keeps, so
	// that it fills even when a loaded machine drops some on the socket.
	n := 2 * wire.MaxPackets
	if out, err := l.A.Run(context.Background(), "ping", "-f", "-c", strconv.Itoa(n), "-W", "1", l.B.Addr4.Addr().String()); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	// The socket may still hold frames the reader has not taken yet.
	for deadline := time.Now().Add(2 * time.Second); c.Count() < wire.MaxPackets && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != wire.MaxPackets {
		t.Errorf("kept %d frames of %d sent, want %d", len(pkts), 2*n, wire.MaxPackets)
	}
}

func TestStartMissingDevice(t *testing.T) {
	l := testbedtest.New(t, 1500)
	_, err := wire.Start(l.B, "nosuchdev0")
	if err == nil || !strings.Contains(err.Error(), "b: capture on nosuchdev0") {
		t.Errorf("Start on a missing device: error %v, want it to name side b and the device", err)
	}
	// The underlay device of a is not in b's namespace.
	if _, err := wire.Start(l.B, l.A.Dev); err == nil {
		t.Errorf("Start(b, %s) succeeded: the capture is not in b's namespace", l.A.Dev)
	}
}

// TestCaptureVXLAN and TestCaptureSRv6 capture real encapsulated traffic of
// the host kernel, check it, and with -update save it to testdata for the
// pure decoder tests.
func TestCaptureVXLAN(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			frames := captureMethod(t, kernel.VXLAN{}, family, "vxlan-"+family+".pcap")
			checkVXLAN(t, frames, family)
		})
	}
}

func TestCaptureSRv6(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			frames := captureMethod(t, kernel.SRv6{}, family, "srv6-"+family+".pcap")
			checkSRv6(t, frames, family)
		})
	}
}

// captureMethod sets m up, captures a ping through it on a's underlay and
// returns the decoded frames.
func captureMethod(t *testing.T, m method.Method, family, save string) []wire.Frame {
	t.Helper()
	l, _, path := methodtest.Setup(t, m, family, 1500, nil)
	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.Ping(t, l, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := wire.WriteFile(filepath.Join("testdata", save), pkts); err != nil {
			t.Fatal(err)
		}
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}
