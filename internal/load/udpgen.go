package load

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/udpgen"
)

// UDPGenReceiver is "tunbench udpgen recv": it binds Bind:Port, prints
// "listening" on stderr, and ends 200 ms after the sender's end marker or
// after Timeout, printing its report as JSON. Exe is the tunbench binary.
type UDPGenReceiver struct {
	Bind    netip.Addr
	Port    int
	Timeout time.Duration
	Exe     string
}

// Args returns the argv, e.g.
//
//	/usr/bin/tunbench udpgen recv --addr 198.18.0.2 --port 12867 --timeout 13s
func (r UDPGenReceiver) Args() []string {
	return []string{exeOr(r.Exe), "udpgen", "recv", "--addr", r.Bind.Unmap().String(),
		"--port", strconv.Itoa(portOr(r.Port, udpgen.DefaultPort)), "--timeout", r.Timeout.String()}
}

// UDPGenSender is "tunbench udpgen send": Size bytes of UDP payload to
// Server:Port for Duration, at Rate payload bits per second (0 unlimited).
type UDPGenSender struct {
	Server   netip.Addr
	Port     int
	Size     int
	Rate     float64
	Duration time.Duration
	Exe      string
}

// Args returns the argv, e.g.
//
//	/usr/bin/tunbench udpgen send --addr 198.18.0.2 --port 12867 --size 22 --rate 0 --duration 3s
func (s UDPGenSender) Args() []string {
	return []string{exeOr(s.Exe), "udpgen", "send", "--addr", s.Server.Unmap().String(),
		"--port", strconv.Itoa(portOr(s.Port, udpgen.DefaultPort)), "--size", strconv.Itoa(s.Size),
		"--rate", strconv.FormatFloat(s.Rate, 'f', 0, 64), "--duration", s.Duration.String()}
}

// ParseUDPGen decodes the sender's and receiver's JSON reports and returns
// the error either reported.
func ParseUDPGen(sender, receiver []byte) (udpgen.SenderReport, udpgen.ReceiverReport, error) {
	var s udpgen.SenderReport
	var r udpgen.ReceiverReport
	if err := json.Unmarshal(sender, &s); err != nil {
		return s, r, fmt.Errorf("parse udpgen sender report %q: %w", trimOut(sender), err)
	}
	if err := json.Unmarshal(receiver, &r); err != nil {
		return s, r, fmt.Errorf("parse udpgen receiver report %q: %w", trimOut(receiver), err)
	}
	if s.Error != "" {
		return s, r, &ToolError{Tool: "udpgen send", Message: s.Error}
	}
	if r.Error != "" {
		return s, r, &ToolError{Tool: "udpgen recv", Message: r.Error}
	}
	return s, r, nil
}

// UDPGenTrial combines the sender's and receiver's reports into the
// trial's record: loss is what the sender sent and the receiver did not
// see; rates are over the sender's sending time; the socket buffers are
// what the kernel granted each side, with a note when either fell short
// of what was asked.
func UDPGenTrial(s udpgen.SenderReport, r udpgen.ReceiverReport) result.UDPTrial {
	t := result.UDPTrial{
		OfferedBitsPerSecond: s.OfferedBitsPerSecond,
		Seconds:              s.Seconds,
		Sent:                 s.Sent,
		Received:             r.Received,
		OutOfOrder:           r.OutOfOrder,
		DelayMin:             r.DelayMinUs,
		DelayP50:             r.DelayP50Us,
		DelayP99:             r.DelayP99Us,
		DelayMax:             r.DelayMaxUs,
		DelayMean:            r.DelayMeanUs,
		Jitter:               r.JitterUs,
		SendBuffer:           s.SendBufferGranted,
		ReceiveBuffer:        r.ReceiveBufferGranted,
	}
	if s.Sent > r.Received {
		t.Lost = s.Sent - r.Received
	}
	if s.Sent > 0 {
		t.LossPercent = 100 * float64(t.Lost) / float64(s.Sent)
	}
	if s.Seconds > 0 {
		t.PacketsPerSecond = float64(r.Received) / s.Seconds
		t.BitsPerSecond = 8 * float64(r.Bytes) / s.Seconds
		t.SentBitsPerSec = 8 * float64(s.Bytes) / s.Seconds
	}
	var notes []string
	if n := udpgen.ShortBuffer("send", s.SendBufferRequested, s.SendBufferGranted); n != "" {
		notes = append(notes, "sender's "+n)
	}
	if n := udpgen.ShortBuffer("receive", r.ReceiveBufferRequested, r.ReceiveBufferGranted); n != "" {
		notes = append(notes, "receiver's "+n)
	}
	t.BufferNote = strings.Join(notes, "; ")
	return t
}

func trimOut(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
