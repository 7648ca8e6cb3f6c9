package rr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Client defaults and limits.
const (
	DefaultPort    = 12866
	DefaultWarmup  = 200 * time.Millisecond
	DefaultTimeout = 5 * time.Second
	// DefaultMaxSamples caps the samples of one run (160 MB of int64).
	DefaultMaxSamples = 20_000_000
	// minRTT sizes the sample buffer: Duration/minRTT samples. No TCP round
	// trip through the kernel is this fast; if one is, the run stops early
	// with Report.Capped set.
	minRTT = 2 * time.Microsecond
)

// Config describes one client run.
type Config struct {
	Server netip.AddrPort // required
	// Duration is the measured time after the warm-up; it must be positive.
	Duration time.Duration
	// Warmup is the time of unrecorded transactions before the measured
	// ones: 0 is DefaultWarmup, a negative value none.
	Warmup time.Duration
	// RequestSize and ResponseSize are in bytes, 1..MaxMessageSize; 0 is 1.
	RequestSize, ResponseSize int
	// Timeout bounds the connect and the wait for each response: 0 is
	// DefaultTimeout.
	Timeout time.Duration
	// MaxSamples caps the transactions recorded; 0 is the smaller of
	// DefaultMaxSamples and one per 2 µs of Duration. When the cap is hit
	// the run stops early and Report.Capped says so.
	MaxSamples int
	// KeepSamples puts every round-trip time in Report.SamplesNS.
	KeepSamples bool
	// Congestion is the TCP congestion control of the connection
	// (TCP_CONGESTION); "" leaves the namespace's default. Report.Congestion
	// says what the connection used.
	Congestion string
}

// withDefaults returns c with its zero values replaced, or an error.
func (c Config) withDefaults() (Config, error) {
	if !c.Server.Addr().IsValid() || c.Server.Addr().IsUnspecified() || c.Server.Port() == 0 {
		return c, fmt.Errorf("server %q is not a host address and port", c.Server)
	}
	if c.Duration <= 0 {
		return c, fmt.Errorf("duration %s is not positive", c.Duration)
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = DefaultWarmup
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.RequestSize == 0 {
		c.RequestSize = 1
	}
	if c.ResponseSize == 0 {
		c.ResponseSize = 1
	}
	if err := checkSizes(c.RequestSize, c.ResponseSize); err != nil {
		return c, err
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < time.Millisecond {
		return c, fmt.Errorf("timeout %s is below 1ms", c.Timeout)
	}
	if c.MaxSamples < 0 {
		return c, fmt.Errorf("max samples %d is negative", c.MaxSamples)
	}
	if c.MaxSamples == 0 {
		c.MaxSamples = int(min(DefaultMaxSamples, c.Duration/minRTT+1))
	}
	return c, nil
}

// Run connects to the server and measures. It returns an error if the
// connection fails, the server closes it or stops answering within
// Timeout, or ctx ends before the run does; a partial run yields no
// report. Run locks its goroutine to the OS thread while measuring.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Report{}, fmt.Errorf("rr client: %w", err)
	}
	samples := make([]int64, cfg.MaxSamples)
	// Fault the pages in now rather than once per 512 samples mid-run.
	pageWords := os.Getpagesize() / 8
	for i := 0; i < len(samples); i += pageWords {
		samples[i] = 1
	}
	req := make([]byte, cfg.RequestSize)
	for i := range req {
		req[i] = 'q'
	}
	resp := make([]byte, cfg.ResponseSize)
	// Collect the garbage of setup now; nothing is allocated while
	// measuring, so no collection starts then.
	runtime.GC()

	c, err := dial(ctx, cfg)
	if err != nil {
		return Report{}, fmt.Errorf("rr client: %w", err)
	}
	defer c.close()
	stop := context.AfterFunc(ctx, c.shutdown)
	defer stop()

	cc, err := congestion(c.fd)
	if err != nil {
		return Report{}, fmt.Errorf("rr client: %w", err)
	}
	runtime.LockOSThread()
	m, err := measure(c.fd, req, resp, cfg.Warmup, cfg.Duration, samples)
	runtime.UnlockOSThread()
	if err != nil && ctx.Err() != nil {
		return Report{}, fmt.Errorf("rr client: %s: %w", cfg.Server, ctx.Err())
	}
	if errors.Is(err, errTimeout) {
		return Report{}, fmt.Errorf("rr client: %s: %w (timeout %s)", cfg.Server, err, cfg.Timeout)
	}
	if err != nil {
		return Report{}, fmt.Errorf("rr client: %s: %w", cfg.Server, err)
	}
	r := newReport(cfg, m, samples[:m.n])
	r.Congestion = cc
	return r, nil
}

// conn is the client's socket; shutdown may run concurrently with the
// measurement (from ctx) and must not touch a closed, reused descriptor.
type conn struct {
	mu     sync.Mutex
	fd     int
	closed bool
}

func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		unix.Close(c.fd)
	}
}

// dial connects to the server and does the handshake.
func dial(ctx context.Context, cfg Config) (*conn, error) {
	sa, family, err := sockaddr(cfg.Server)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	c := &conn{fd: fd}
	stop := context.AfterFunc(ctx, c.shutdown)
	defer stop()
	if err := setNoDelay(fd); err != nil {
		c.close()
		return nil, err
	}
	if err := setTimeout(fd, cfg.Timeout); err != nil {
		c.close()
		return nil, err
	}
	if err := setCongestion(fd, cfg.Congestion); err != nil {
		c.close()
		return nil, err
	}
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		c.close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect %s: %w", cfg.Server, ctx.Err())
		}
		if err == unix.EINPROGRESS || err == unix.EAGAIN {
			err = fmt.Errorf("no answer within %s", cfg.Timeout)
		}
		return nil, fmt.Errorf("connect %s: %w", cfg.Server, err)
	}
	if err := handshake(fd, cfg); err != nil {
		c.close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Server, ctx.Err())
		}
		return nil, fmt.Errorf("%s: %w", cfg.Server, err)
	}
	return c, nil
}

func handshake(fd int, cfg Config) error {
	if err := writeFull(fd, encodeHello(cfg.RequestSize, cfg.ResponseSize)); err != nil {
		return fmt.Errorf("send hello: %w", err)
	}
	ack := make([]byte, len(helloOK))
	err := readFull(fd, ack)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, unix.ECONNRESET) {
		return errors.New("server closed the connection during the handshake (not a tunbench rr server of protocol " + helloMagic + "?)")
	}
	if err != nil {
		return fmt.Errorf("read hello: %w", err)
	}
	if string(ack) != helloOK {
		return fmt.Errorf("server answered the hello with %q, want %q: not a tunbench rr server", ack, helloOK)
	}
	return nil
}

// measurement is what measure saw. Times are offsets from its start.
type measurement struct {
	n          int // samples recorded
	warmupTx   int64
	start, end time.Duration // first request, last response
	capped     bool
}

// measure runs transactions on fd: unrecorded ones for warmup, then
// recorded ones until dur has passed or samples is full. It allocates
// nothing unless it fails.
func measure(fd int, req, resp []byte, warmup, dur time.Duration, samples []int64) (measurement, error) {
	var m measurement
	// time.Since on a Time with a monotonic reading reads only the
	// monotonic clock (one vDSO call).
	base := time.Now()
	for time.Since(base) < warmup {
		if err := transact(fd, req, resp); err != nil {
			return m, fmt.Errorf("warm-up transaction %d: %w", m.warmupTx+1, err)
		}
		m.warmupTx++
	}
	m.start = time.Since(base)
	end := m.start + dur
	for {
		t0 := time.Since(base)
		if err := transact(fd, req, resp); err != nil {
			return m, fmt.Errorf("transaction %d: %w", m.warmupTx+int64(m.n)+1, err)
		}
		t1 := time.Since(base)
		samples[m.n] = int64(t1 - t0)
		m.n++
		m.end = t1
		if t1 >= end {
			return m, nil
		}
		if m.n == len(samples) {
			m.capped = true
			return m, nil
		}
	}
}

// transact sends one request and reads one response.
func transact(fd int, req, resp []byte) error {
	if err := writeFull(fd, req); err != nil {
		return fmt.Errorf("send request: %w", err)
	}
	err := readFull(fd, resp)
	switch {
	case err == nil:
		return nil
	case err == io.EOF, err == io.ErrUnexpectedEOF, err == unix.ECONNRESET:
		return fmt.Errorf("server closed the connection: %w", err)
	case err == errTimeout:
		return fmt.Errorf("no response: %w", err)
	}
	return fmt.Errorf("read response: %w", err)
}
