package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Bounds of a capture.
const (
	// MaxPackets is the number of frames a capture keeps; it stops reading
	// after that many.
	MaxPackets = 2000
	// SnapLen is how many bytes of each frame a capture keeps: enough for
	// every outer and inner header the decoders look at.
	SnapLen = 256
)

// Capture is a running capture on one device; see Start.
type Capture struct {
	side, dev string
	h         *pcapgo.EthernetHandle
	ifindex   int

	stopOnce sync.Once
	done     chan struct{}

	mu       sync.Mutex
	stopping bool
	pkts     []gopacket.Packet
	err      error
}

// Start captures frames on dev inside ep's namespace until Stop. The
// socket is created on a thread inside the namespace (ep.Do), so it sees
// that namespace's device of that name.
func Start(ep *testbed.Endpoint, dev string) (*Capture, error) {
	c := &Capture{side: ep.Side, dev: dev, done: make(chan struct{})}
	err := ep.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		h, err := pcapgo.NewEthernetHandle(dev)
		if err != nil {
			return err
		}
		if err := h.SetCaptureLength(SnapLen); err != nil {
			h.Close()
			return err
		}
		c.h, c.ifindex = h, ifi.Index
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: capture on %s: %w", ep.Side, dev, err)
	}
	go c.read()
	return c, nil
}

// read collects frames until MaxPackets or until Stop closes the socket.
func (c *Capture) read() {
	defer close(c.done)
	for {
		data, ci, err := c.h.ReadPacketData()
		c.mu.Lock()
		if err != nil {
			// Stop closes the socket to end the read: not an error.
			if !c.stopping {
				c.err = fmt.Errorf("%s: capture on %s: %w", c.side, c.dev, err)
			}
			c.mu.Unlock()
			return
		}
		// The socket is bound to dev, but frames of other devices can be
		// queued between its creation and the bind.
		if ci.InterfaceIndex == c.ifindex {
			p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
			p.Metadata().CaptureInfo = ci
			c.pkts = append(c.pkts, p)
		}
		full := len(c.pkts) >= MaxPackets
		c.mu.Unlock()
		if full {
			return
		}
	}
}

// Count returns the number of frames kept so far.
func (c *Capture) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pkts)
}

// Stop ends the capture and returns the frames it kept, oldest first, each
// with its CaptureInfo (Length is the length on the wire, CaptureLength at
// most SnapLen). The error reports a failed read; the frames read before it
// are still returned. Calling Stop again returns the same frames.
//
// Frames the kernel has queued but the reader has not taken yet would be
// lost by closing the socket at once, so Stop first waits until no frame
// has arrived for quietPeriod (at most maxDrain).
func (c *Capture) Stop() ([]gopacket.Packet, error) {
	var closeErr error
	c.stopOnce.Do(func() {
		c.drain()
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		if err := c.h.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			closeErr = fmt.Errorf("%s: close capture on %s: %w", c.side, c.dev, err)
		}
	})
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pkts, errors.Join(c.err, closeErr)
}

// How long Stop waits for queued frames.
const (
	quietPeriod = 50 * time.Millisecond
	maxDrain    = time.Second
)

func (c *Capture) drain() {
	deadline := time.Now().Add(maxDrain)
	last := c.Count()
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return
		case <-time.After(quietPeriod):
		}
		n := c.Count()
		if n == last {
			return
		}
		last = n
	}
}

// Write writes pkts as a pcap stream (Ethernet link type, snap length
// SnapLen).
func Write(w io.Writer, pkts []gopacket.Packet) error {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(SnapLen, layers.LinkTypeEthernet); err != nil {
		return fmt.Errorf("write pcap header: %w", err)
	}
	for i, p := range pkts {
		ci := p.Metadata().CaptureInfo
		data := p.Data()
		if len(data) > SnapLen {
			data = data[:SnapLen]
		}
		ci.CaptureLength = len(data)
		if ci.Length < len(data) {
			ci.Length = len(data)
		}
		if err := pw.WritePacket(ci, data); err != nil {
			return fmt.Errorf("write pcap packet %d: %w", i, err)
		}
	}
	return nil
}

// WriteFile writes pkts to the pcap file path (mode 0644).
func WriteFile(path string, pkts []gopacket.Packet) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write pcap: %w", err)
	}
	if err := Write(f, pkts); err != nil {
		f.Close()
		return fmt.Errorf("write pcap %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write pcap %s: %w", path, err)
	}
	return nil
}

// Read reads every packet of a pcap stream with Ethernet link type.
func Read(r io.Reader) ([]gopacket.Packet, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read pcap: %w", err)
	}
	if lt := pr.LinkType(); lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("read pcap: link type %v, want Ethernet", lt)
	}
	var pkts []gopacket.Packet
	for {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return pkts, nil
		}
		if err != nil {
			return pkts, fmt.Errorf("read pcap packet %d: %w", len(pkts), err)
		}
		p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		p.Metadata().CaptureInfo = ci
		pkts = append(pkts, p)
	}
}

// ReadFile reads the pcap file path.
func ReadFile(path string) ([]gopacket.Packet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read pcap: %w", err)
	}
	defer f.Close()
	pkts, err := Read(f)
	if err != nil {
		return pkts, fmt.Errorf("%s: %w", path, err)
	}
	return pkts, nil
}
