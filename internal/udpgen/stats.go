package udpgen

import (
	"encoding/binary"
	"math"
)

// HeaderSize is the smallest payload the generator sends: magic (4),
// sequence number (8), send time in Unix nanoseconds (8).
const HeaderSize = 20

// Magic numbers of data and end-of-test datagrams.
const (
	magicData uint32 = 0x74627564 // "tbud"
	magicEnd  uint32 = 0x74627565 // "tbue"
)

// putHeader writes the header into b, which must be at least HeaderSize long.
func putHeader(b []byte, magic uint32, seq uint64, sentNs int64) {
	binary.BigEndian.PutUint32(b[0:4], magic)
	binary.BigEndian.PutUint64(b[4:12], seq)
	binary.BigEndian.PutUint64(b[12:20], uint64(sentNs))
}

// parseHeader reads a header; ok is false for a datagram that is not ours.
func parseHeader(b []byte) (magic uint32, seq uint64, sentNs int64, ok bool) {
	if len(b) < HeaderSize {
		return 0, 0, 0, false
	}
	magic = binary.BigEndian.Uint32(b[0:4])
	if magic != magicData && magic != magicEnd {
		return 0, 0, 0, false
	}
	return magic, binary.BigEndian.Uint64(b[4:12]), int64(binary.BigEndian.Uint64(b[12:20])), true
}

// Histogram resolution: 1 µs buckets up to fineLimit, then 100 µs buckets
// up to coarseLimit; slower packets land in the last bucket (Max is exact).
const (
	fineBuckets   = 65536  // 0 .. 65.535 ms by 1 µs
	coarseBuckets = 100000 // 65.536 ms .. ~10 s by 100 µs
)

// Stats accumulates the receiver's view of one test. The zero value is
// ready to use. Not safe for concurrent use.
type Stats struct {
	Received, Bytes uint64
	// OutOfOrder counts datagrams that arrived after one with a higher
	// sequence number.
	OutOfOrder uint64
	maxSeq     uint64
	anySeq     bool

	// RFC 3550 interarrival jitter, in nanoseconds.
	jitter      float64
	lastTransit int64

	minDelay, maxDelay int64
	// delaySum is the sum of every datagram's transit time, ns (for the
	// mean).
	delaySum        float64
	fine            []uint64
	coarse          []uint64
	firstNs, lastNs int64
}

// Add accounts one datagram of size payload bytes with sequence number seq,
// sent at sentNs and received at recvNs (Unix nanoseconds).
func (s *Stats) Add(seq uint64, sentNs, recvNs int64, size int) {
	if s.fine == nil {
		s.fine = make([]uint64, fineBuckets)
		s.coarse = make([]uint64, coarseBuckets)
	}
	transit := recvNs - sentNs
	if s.Received > 0 {
		d := float64(transit - s.lastTransit)
		s.jitter += (math.Abs(d) - s.jitter) / 16
	} else {
		s.firstNs, s.minDelay, s.maxDelay = recvNs, transit, transit
	}
	s.lastTransit = transit
	s.lastNs = recvNs
	s.Received++
	s.Bytes += uint64(size)
	if s.anySeq && seq < s.maxSeq {
		s.OutOfOrder++
	}
	if !s.anySeq || seq > s.maxSeq {
		s.maxSeq, s.anySeq = seq, true
	}
	s.minDelay, s.maxDelay = min(s.minDelay, transit), max(s.maxDelay, transit)
	s.delaySum += float64(transit)
	us := max(transit, 0) / 1000
	switch {
	case us < fineBuckets:
		s.fine[us]++
	default:
		i := (us - fineBuckets) / 100
		s.coarse[min(i, coarseBuckets-1)]++
	}
}

// quantile returns the delay in µs below which fraction q of the packets
// lie, at the histogram's resolution (the lower edge of the bucket).
func (s *Stats) quantile(q float64) float64 {
	if s.Received == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.Received)))
	rank = max(rank, 1)
	var n uint64
	for i, c := range s.fine {
		n += c
		if n >= rank {
			return float64(i)
		}
	}
	for i, c := range s.coarse {
		n += c
		if n >= rank {
			return float64(fineBuckets + 100*i)
		}
	}
	return float64(s.maxDelay) / 1000
}

// Report summarises the test.
func (s *Stats) Report() ReceiverReport {
	r := ReceiverReport{Received: s.Received, Bytes: s.Bytes, OutOfOrder: s.OutOfOrder}
	if s.Received == 0 {
		return r
	}
	r.Seconds = float64(s.lastNs-s.firstNs) / 1e9
	r.DelayMinUs = float64(s.minDelay) / 1000
	r.DelayMaxUs = float64(s.maxDelay) / 1000
	r.DelayMeanUs = s.delaySum / float64(s.Received) / 1000
	r.DelayP50Us = s.quantile(0.50)
	r.DelayP99Us = s.quantile(0.99)
	r.JitterUs = s.jitter / 1000
	return r
}

// ReceiverReport is what "tunbench udpgen recv" prints as JSON.
type ReceiverReport struct {
	Received   uint64 `json:"received"`
	Bytes      uint64 `json:"bytes"`
	OutOfOrder uint64 `json:"out_of_order"`
	// Seconds is from the first to the last datagram received.
	Seconds    float64 `json:"seconds_s"`
	DelayMinUs float64 `json:"delay_min_us"`
	DelayP50Us float64 `json:"delay_p50_us"`
	DelayP99Us float64 `json:"delay_p99_us"`
	DelayMaxUs float64 `json:"delay_max_us"`
	// DelayMeanUs is the mean one-way delay, exact (not from the
	// histogram).
	DelayMeanUs float64 `json:"delay_mean_us"`
	// JitterUs is RFC 3550's interarrival jitter at the end of the test.
	JitterUs float64 `json:"jitter_us"`
	// EndSeen is true when the sender's end-of-test marker arrived.
	EndSeen bool `json:"end_seen"`
	// ReceiveBufferRequested is the receive buffer asked for
	// (BufferBytes); ReceiveBufferGranted the size the kernel granted,
	// read back with SO_RCVBUF (doubled: 2 × requested when granted in
	// full; see ShortBuffer).
	ReceiveBufferRequested int    `json:"receive_buffer_requested_bytes"`
	ReceiveBufferGranted   int    `json:"receive_buffer_granted_bytes"`
	Error                  string `json:"error,omitempty"`
}

// SenderReport is what "tunbench udpgen send" prints as JSON.
type SenderReport struct {
	Sent    uint64  `json:"sent"`
	Bytes   uint64  `json:"bytes"`
	Seconds float64 `json:"seconds_s"`
	// OfferedBitsPerSecond is the payload rate asked for; 0 is unlimited.
	OfferedBitsPerSecond float64 `json:"offered_bits_per_second_bps"`
	// SendErrors counts writes the kernel refused (ENOBUFS, ECONNREFUSED).
	SendErrors uint64 `json:"send_errors"`
	// SendBufferRequested is the send buffer asked for (BufferBytes);
	// SendBufferGranted the size the kernel granted, read back with
	// SO_SNDBUF (doubled: 2 × requested when granted in full; see
	// ShortBuffer).
	SendBufferRequested int    `json:"send_buffer_requested_bytes"`
	SendBufferGranted   int    `json:"send_buffer_granted_bytes"`
	Error               string `json:"error,omitempty"`
}
