package load

import (
	"errors"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// The generator's reports as "tunbench udpgen send|recv" print them; the
// buffers granted in full (4 MiB asked, reported doubled).
const (
	udpgenSender   = `{"sent":1000,"bytes":22000,"seconds_s":2,"offered_bits_per_second_bps":1000000,"send_errors":0,"send_buffer_requested_bytes":4194304,"send_buffer_granted_bytes":8388608}`
	udpgenReceiver = `{"received":990,"bytes":21780,"out_of_order":3,"seconds_s":1.9,"delay_min_us":4,"delay_p50_us":9,"delay_p99_us":30,"delay_max_us":70,"jitter_us":1.25,"end_seen":true,"receive_buffer_requested_bytes":4194304,"receive_buffer_granted_bytes":8388608}`
)

// Loss is what the sender sent and the receiver did not see; rates are
// over the sender's time; the granted buffers are recorded.
func TestUDPGenTrial(t *testing.T) {
	s, r, err := ParseUDPGen([]byte(udpgenSender), []byte(udpgenReceiver))
	if err != nil {
		t.Fatal(err)
	}
	got := UDPGenTrial(s, r)
	want := result.UDPTrial{OfferedBitsPerSecond: 1e6, Seconds: 2, Sent: 1000, Received: 990, Lost: 10, LossPercent: 1,
		OutOfOrder: 3, PacketsPerSecond: 495, BitsPerSecond: 87120, SentBitsPerSec: 88000,
		DelayMin: 4, DelayP50: 9, DelayP99: 30, DelayMax: 70, Jitter: 1.25,
		SendBuffer: 8388608, ReceiveBuffer: 8388608}
	if got != want {
		t.Errorf("UDPGenTrial = %+v\nwant %+v", got, want)
	}
	r.Received = 1001 // a duplicate: never negative loss
	if got := UDPGenTrial(s, r); got.Lost != 0 || got.LossPercent != 0 {
		t.Errorf("more received than sent: lost %d (%v%%)", got.Lost, got.LossPercent)
	}
}

// A buffer the kernel granted below what was asked is recorded as granted
// and named in the note, side by side; a report from before the buffers
// were read back has no figures and no note.
func TestUDPGenTrialShortBuffers(t *testing.T) {
	short := func(report, field string, granted string) []byte {
		return []byte(strings.Replace(report, `"`+field+`":8388608`, `"`+field+`":`+granted, 1))
	}
	s, r, err := ParseUDPGen(short(udpgenSender, "send_buffer_granted_bytes", "425984"), []byte(udpgenReceiver))
	if err != nil {
		t.Fatal(err)
	}
	got := UDPGenTrial(s, r)
	if got.SendBuffer != 425984 || got.ReceiveBuffer != 8388608 {
		t.Errorf("buffers: send %d receive %d, want 425984 and 8388608", got.SendBuffer, got.ReceiveBuffer)
	}
	if !strings.Contains(got.BufferNote, "sender's send buffer 425984 bytes, below the 8388608 asked") ||
		!strings.Contains(got.BufferNote, "net.core.wmem_max") || strings.Contains(got.BufferNote, "receive") {
		t.Errorf("note %q: want the sender's short send buffer named, and only it", got.BufferNote)
	}

	s, r, err = ParseUDPGen([]byte(udpgenSender), short(udpgenReceiver, "receive_buffer_granted_bytes", "8388607"))
	if err != nil {
		t.Fatal(err)
	}
	if got := UDPGenTrial(s, r); !strings.Contains(got.BufferNote, "receiver's receive buffer 8388607 bytes") ||
		!strings.Contains(got.BufferNote, "net.core.rmem_max") || strings.Contains(got.BufferNote, "sender") {
		t.Errorf("note %q: want the receiver's short receive buffer named, and only it", got.BufferNote)
	}

	old := `{"sent":10,"bytes":220,"seconds_s":1,"offered_bits_per_second_bps":0,"send_errors":0}`
	s, r, err = ParseUDPGen([]byte(old), []byte(`{"received":10,"bytes":220}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := UDPGenTrial(s, r); got.SendBuffer != 0 || got.ReceiveBuffer != 0 || got.BufferNote != "" {
		t.Errorf("report without buffer sizes: send %d receive %d note %q, want none", got.SendBuffer, got.ReceiveBuffer, got.BufferNote)
	}
}

// A sender that could not size its buffer reports the error, and the
// parser returns it as the tool's.
func TestParseUDPGenToolError(t *testing.T) {
	sender := `{"sent":0,"bytes":0,"seconds_s":0,"offered_bits_per_second_bps":0,"send_errors":0,"send_buffer_requested_bytes":4194304,"send_buffer_granted_bytes":0,"error":"udpgen send: set the send buffer to 4194304 bytes: operation not permitted"}`
	_, _, err := ParseUDPGen([]byte(sender), []byte(udpgenReceiver))
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "udpgen send" || !strings.Contains(te.Message, "send buffer") {
		t.Errorf("got %v, want the sender's error as a ToolError", err)
	}
}
