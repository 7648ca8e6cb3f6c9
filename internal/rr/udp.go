package rr

// The UDP request/response probes of the connect and recover tests: an
// echo server ("tunbench rr echo"), a probe that sends a request every
// interval until the first answer ("tunbench rr probe", connect), and a
// stream of requests at a fixed interval, optionally taking a device down
// and up in the middle ("tunbench rr stream", recover). UDP, not TCP: a
// lost TCP segment is resent on TCP's own backoff (200 ms, 400 ms, ...),
// which would measure TCP rather than the tunnel; a UDP request is sent
// on schedule whatever happened to the one before.
//
// A request is 32 bytes: the magic "TBU1", an 8-byte big-endian sequence
// number and padding; the server sends it back as it came.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// UDP probe defaults.
const (
	// DefaultEchoPort is the UDP port of the echo server (the TCP rr
	// port's number: TCP and UDP ports do not collide).
	DefaultEchoPort = DefaultPort
	// DefaultProbeInterval is the time between two requests of a probe or
	// a stream: the resolution of connect and recover.
	DefaultProbeInterval = 10 * time.Millisecond
	udpMagic             = "TBU1"
	udpSize              = 32
)

// EchoServer answers every UDP request with the request itself.
type EchoServer struct {
	conn *net.UDPConn
}

// ListenEcho opens the echo server's socket; an invalid address listens
// on every IPv4 and IPv6 address, so it can be started before the
// addresses it will answer on exist.
func ListenEcho(addr netip.AddrPort) (*EchoServer, error) {
	var la *net.UDPAddr
	if addr.Addr().IsValid() {
		la = net.UDPAddrFromAddrPort(addr)
	} else {
		la = &net.UDPAddr{Port: int(addr.Port())}
	}
	c, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, fmt.Errorf("rr echo: listen on %s: %w", la, err)
	}
	return &EchoServer{conn: c}, nil
}

// Addr is the address the server listens on.
func (s *EchoServer) Addr() net.Addr { return s.conn.LocalAddr() }

// Serve answers requests until Close.
func (s *EchoServer) Serve() error {
	buf := make([]byte, 2048)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("rr echo: read: %w", err)
		}
		if n < 12 || string(buf[:4]) != udpMagic {
			continue
		}
		// A send that fails (no route yet, the link down) is a lost
		// answer, which the client counts.
		_, _ = s.conn.WriteToUDPAddrPort(buf[:n], from)
	}
}

// Close stops Serve.
func (s *EchoServer) Close() error { return s.conn.Close() }

// udpClient is the client side of the probes: a socket that sends
// numbered requests and a reader that records when each answer came.
type udpClient struct {
	conn   *net.UDPConn
	server netip.AddrPort
	base   time.Time
	buf    [udpSize]byte

	mu       sync.Mutex
	sentAt   []time.Duration // by sequence number, since base
	answerAt []time.Duration // by sequence number; -1: none yet
	answers  chan time.Duration
}

func newUDPClient(server netip.AddrPort) (*udpClient, error) {
	if !server.Addr().IsValid() || server.Port() == 0 {
		return nil, fmt.Errorf("server %q is not a host address and port", server)
	}
	network := "udp4"
	if server.Addr().Unmap().Is6() {
		network = "udp6"
	}
	c, err := net.ListenUDP(network, nil)
	if err != nil {
		return nil, fmt.Errorf("open a UDP socket: %w", err)
	}
	u := &udpClient{conn: c, server: netip.AddrPortFrom(server.Addr().Unmap(), server.Port()), base: time.Now(),
		answers: make(chan time.Duration, 1)}
	copy(u.buf[:], udpMagic)
	go u.read()
	return u, nil
}

// since is the time since the client started.
func (u *udpClient) since() time.Duration { return time.Since(u.base) }

// send sends the next request. A failed send (no route, the device down)
// counts as sent and unanswered: it is a request the tunnel lost.
func (u *udpClient) send() {
	u.mu.Lock()
	seq := len(u.sentAt)
	u.sentAt = append(u.sentAt, u.since())
	u.answerAt = append(u.answerAt, -1)
	u.mu.Unlock()
	binary.BigEndian.PutUint64(u.buf[4:12], uint64(seq))
	_, _ = u.conn.WriteToUDPAddrPort(u.buf[:], u.server)
}

func (u *udpClient) read() {
	var buf [2048]byte
	for {
		n, _, err := u.conn.ReadFromUDPAddrPort(buf[:])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		at := u.since()
		if n < 12 || string(buf[:4]) != udpMagic {
			continue
		}
		seq := binary.BigEndian.Uint64(buf[4:12])
		u.mu.Lock()
		first := false
		if seq < uint64(len(u.answerAt)) && u.answerAt[seq] < 0 {
			u.answerAt[seq] = at
			first = true
		}
		u.mu.Unlock()
		if first {
			select {
			case u.answers <- at:
			default:
			}
		}
	}
}

func (u *udpClient) close() { u.conn.Close() }

// ProbeConfig describes a connect probe.
type ProbeConfig struct {
	Server netip.AddrPort
	// Interval is the time between requests (0: DefaultProbeInterval);
	// Timeout how long to try before giving up (0: 60 s).
	Interval, Timeout time.Duration
}

// ProbeReport is what a probe found, printed as JSON by "tunbench rr
// probe". FirstAnswer is the time from the probe's start to the first
// answer; Sent the requests sent until then.
type ProbeReport struct {
	Tool        string  `json:"tool"`
	Version     string  `json:"version"`
	Error       string  `json:"error,omitempty"`
	Server      string  `json:"server,omitempty"`
	Interval    float64 `json:"interval_s"`
	Sent        int64   `json:"sent"`
	FirstAnswer float64 `json:"first_answer_s"`
	// RTT is the round trip of the request first answered.
	RTT float64 `json:"rtt_us"`
}

// Probe sends a request every interval until one is answered.
func Probe(ctx context.Context, cfg ProbeConfig) (ProbeReport, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultProbeInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	r := ProbeReport{Tool: Tool, Version: Version, Server: cfg.Server.String(), Interval: cfg.Interval.Seconds()}
	u, err := newUDPClient(cfg.Server)
	if err != nil {
		return r, fmt.Errorf("rr probe: %w", err)
	}
	defer u.close()
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	deadline := time.NewTimer(cfg.Timeout)
	defer deadline.Stop()
	u.send()
	for {
		select {
		case at := <-u.answers:
			u.mu.Lock()
			defer u.mu.Unlock()
			r.Sent = int64(len(u.sentAt))
			r.FirstAnswer = at.Seconds()
			for i, a := range u.answerAt {
				if a >= 0 {
					r.RTT = float64(a-u.sentAt[i]) / float64(time.Microsecond)
					break
				}
			}
			return r, nil
		case <-tick.C:
			u.send()
		case <-deadline.C:
			u.mu.Lock()
			r.Sent = int64(len(u.sentAt))
			u.mu.Unlock()
			return r, fmt.Errorf("rr probe: no answer from %s within %s", cfg.Server, cfg.Timeout)
		case <-ctx.Done():
			return r, fmt.Errorf("rr probe: %w", ctx.Err())
		}
	}
}

// Flapper takes a device down and puts it back up.
type Flapper interface {
	// Down takes the device down; Up puts it back up, and with it what
	// going down removed, and says what it put back.
	Down() error
	Up() ([]string, error)
}

// StreamConfig describes a request stream.
type StreamConfig struct {
	Server   netip.AddrPort
	Interval time.Duration // 0: DefaultProbeInterval
	// Lead is how long the stream runs before Flap takes the device down
	// (0: 1 s); Down how long it stays down. Without a Flapper the stream
	// runs for Lead + Down + Tail.
	Lead, Down time.Duration
	Flap       Flapper
	// Wait bounds the time from the device up to the first answer (0:
	// 30 s); Tail is how long the stream goes on after it (0: 500 ms).
	Wait, Tail time.Duration
}

// StreamReport is what a stream saw, printed as JSON by "tunbench rr
// stream". Lost requests are those sent and never answered (a straggler
// has until the end of the stream, at least Tail after its send).
// Outage is the longest time between two answers; with a flap, Recovery
// is the time from the device being up again (with its addresses and
// routes) to the first answer after it, and Down the time the device was
// down for certain (from taking it down to starting to put it up).
type StreamReport struct {
	Tool      string   `json:"tool"`
	Version   string   `json:"version"`
	Error     string   `json:"error,omitempty"`
	Server    string   `json:"server,omitempty"`
	Interval  float64  `json:"interval_s"`
	Flapped   bool     `json:"flapped"`
	Down      float64  `json:"down_s,omitempty"`
	Sent      int64    `json:"sent"`
	Answered  int64    `json:"answered"`
	Lost      int64    `json:"lost"`
	Recovered bool     `json:"recovered"`
	Recovery  float64  `json:"recovery_s"`
	Outage    float64  `json:"outage_s"`
	Restored  []string `json:"restored,omitempty"`
}

// Stream runs a request stream, with a flap in the middle when cfg.Flap
// is set. The device is always put back up, also when ctx ends.
func Stream(ctx context.Context, cfg StreamConfig) (StreamReport, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultProbeInterval
	}
	if cfg.Lead <= 0 {
		cfg.Lead = time.Second
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.Tail <= 0 {
		cfg.Tail = 500 * time.Millisecond
	}
	r := StreamReport{Tool: Tool, Version: Version, Server: cfg.Server.String(), Interval: cfg.Interval.Seconds(), Flapped: cfg.Flap != nil}
	u, err := newUDPClient(cfg.Server)
	if err != nil {
		return r, fmt.Errorf("rr stream: %w", err)
	}
	defer u.close()
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	// run sends on schedule until d has passed or stop says so.
	run := func(d time.Duration, stop func() bool) error {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			if stop != nil && stop() {
				return nil
			}
			select {
			case <-tick.C:
				u.send()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	u.send()
	if err := run(cfg.Lead, nil); err != nil {
		return r, fmt.Errorf("rr stream: %w", err)
	}
	var upAt time.Duration = -1
	if cfg.Flap != nil {
		if err := cfg.Flap.Down(); err != nil {
			restored, uerr := cfg.Flap.Up()
			r.Restored = restored
			return r, errors.Join(fmt.Errorf("rr stream: take the device down: %w", err), uerr)
		}
		// Down is the time the device was down for certain: from Down's
		// return to Up's call. Up puts its addresses and routes back too,
		// which on a loaded machine took 0.3 s, and answers may come
		// before it returns.
		downAt := u.since()
		err := run(cfg.Down, nil)
		upCall := u.since()
		restored, uerr := cfg.Flap.Up()
		upAt = u.since()
		r.Down = (upCall - downAt).Seconds()
		r.Restored = restored
		if err = errors.Join(err, uerr); err != nil {
			return r, fmt.Errorf("rr stream: %w", err)
		}
		recovered := func() bool {
			u.mu.Lock()
			defer u.mu.Unlock()
			for _, a := range u.answerAt {
				if a >= upAt {
					return true
				}
			}
			return false
		}
		if err := run(cfg.Wait, recovered); err != nil {
			return r, fmt.Errorf("rr stream: %w", err)
		}
	} else if err := run(cfg.Down, nil); err != nil {
		return r, fmt.Errorf("rr stream: %w", err)
	}
	if err := run(cfg.Tail, nil); err != nil {
		return r, fmt.Errorf("rr stream: %w", err)
	}
	// Stragglers: answers to the last requests.
	select {
	case <-time.After(max(cfg.Interval, 50*time.Millisecond)):
	case <-ctx.Done():
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	summarizeStream(&r, u.sentAt, u.answerAt, upAt)
	return r, nil
}

// summarizeStream counts the answers, finds the longest gap between two
// answers and, when the device came up at upAt (≥ 0), the time from then
// to the first answer.
func summarizeStream(r *StreamReport, sentAt, answerAt []time.Duration, upAt time.Duration) {
	r.Sent = int64(len(sentAt))
	var times []time.Duration
	for _, a := range answerAt {
		if a >= 0 {
			times = append(times, a)
		}
	}
	r.Answered = int64(len(times))
	r.Lost = r.Sent - r.Answered
	// Answers arrive in receive order, not sequence order.
	slices.Sort(times)
	var longest time.Duration
	for i := 1; i < len(times); i++ {
		longest = max(longest, times[i]-times[i-1])
	}
	r.Outage = longest.Seconds()
	if upAt < 0 {
		r.Recovered = r.Answered > 0
		return
	}
	for _, t := range times {
		if t >= upAt {
			r.Recovered = true
			r.Recovery = (t - upAt).Seconds()
			return
		}
	}
}
