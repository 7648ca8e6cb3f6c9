package rr

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// serveOnce starts a one-shot server on addr (port 0) in ns and returns its
// address and the channel Serve's error arrives on.
func serveOnce(t *testing.T, ns *testNS, addr netip.Addr) (netip.AddrPort, <-chan error) {
	t.Helper()
	var s *Server
	var err error
	ns.do(t, func() { s, err = Listen(netip.AddrPortFrom(addr, 0)) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	served := make(chan error, 1)
	ns.start(func() { served <- s.Serve(true) })
	return s.Addr(), served
}

// run runs the client in ns.
func run(t *testing.T, ns *testNS, ctx context.Context, cfg Config) (Report, error) {
	t.Helper()
	var r Report
	var err error
	ns.do(t, func() { r, err = Run(ctx, cfg) })
	return r, err
}

// checkReport checks the relations every report of a good run satisfies.
func checkReport(t *testing.T, r Report, cfg Config) {
	t.Helper()
	if r.Tool != Tool || r.Version != Version || r.Error != "" {
		t.Errorf("tool %q version %q error %q", r.Tool, r.Version, r.Error)
	}
	// The run ends with the first response after Duration: the last
	// transaction (at most Max long) started before Duration had passed.
	if r.Transactions < 2 || r.Duration < cfg.Duration.Seconds() || r.Duration-r.Max/1e6 > cfg.Duration.Seconds()+1e-3 {
		t.Errorf("%d transactions in %g s (longest %g µs), want several in %s", r.Transactions, r.Duration, r.Max, cfg.Duration)
	}
	if !(r.Min > 0 && r.Min <= r.P50 && r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.Max) {
		t.Errorf("RTTs out of order: min %g p50 %g p90 %g p99 %g max %g", r.Min, r.P50, r.P90, r.P99, r.Max)
	}
	if r.Mean < r.Min || r.Mean > r.Max {
		t.Errorf("mean %g outside [%g, %g]", r.Mean, r.Min, r.Max)
	}
	if len(r.CDF) != len(CDFFractions) || r.CDF[0].RTT != r.Min || r.CDF[len(r.CDF)-1].RTT != r.Max {
		t.Errorf("CDF has %d points, from %v to %v", len(r.CDF), r.CDF[0], r.CDF[len(r.CDF)-1])
	}
	// The RTTs are disjoint intervals of the measured time.
	busy := r.Mean * float64(r.Transactions) / 1e6
	if busy > r.Duration*(1+1e-6) {
		t.Errorf("mean RTT x transactions = %g s, measured time %g s", busy, r.Duration)
	}
	if r.Capped {
		t.Errorf("capped after %d transactions", r.Transactions)
	}
}

func TestRun(t *testing.T) {
	ns := newTestNS(t)
	for _, tc := range []struct {
		name      string
		addr      netip.Addr
		req, resp int
	}{
		{"ipv4", testV4, 0, 0},
		{"ipv6", testV6, 0, 0},
		// A response larger than one segment arrives in several reads.
		{"large response", testV4, 100, 200_000},
		{"large request", testV6, 200_000, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, served := serveOnce(t, ns, tc.addr)
			cfg := Config{Server: addr, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
				RequestSize: tc.req, ResponseSize: tc.resp, Timeout: 2 * time.Second}
			r, err := run(t, ns, context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r, cfg)
			wantReq, wantResp := max(tc.req, 1), max(tc.resp, 1)
			if r.RequestSize != wantReq || r.ResponseSize != wantResp || r.Server != addr.String() {
				t.Errorf("report of %s, %d/%d bytes, want %s, %d/%d", r.Server, r.RequestSize, r.ResponseSize, addr, wantReq, wantResp)
			}
			if r.WarmupTransactions == 0 || r.Warmup != 0.05 {
				t.Errorf("warm-up of %g s did %d transactions", r.Warmup, r.WarmupTransactions)
			}
			if r.SamplesNS != nil {
				t.Errorf("%d samples without KeepSamples", len(r.SamplesNS))
			}
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("one-shot server: %v", err)
				}
			case <-time.After(2 * time.Second):
				t.Error("one-shot server still running 2 s after its client closed")
			}
		})
	}
}

func TestRunKeepSamplesAndCap(t *testing.T) {
	ns := newTestNS(t)
	addr, _ := serveOnce(t, ns, testV4)
	cfg := Config{Server: addr, Duration: 10 * time.Second, Warmup: -1, MaxSamples: 50, KeepSamples: true}
	r, err := run(t, ns, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Capped || r.Transactions != 50 || len(r.SamplesNS) != 50 || r.Duration > 1 {
		t.Fatalf("capped %v after %d transactions, %d samples, %g s; want capped after 50", r.Capped, r.Transactions, len(r.SamplesNS), r.Duration)
	}
	if r.WarmupTransactions != 0 || r.Warmup != 0 {
		t.Errorf("negative Warmup: %d warm-up transactions in %g s, want none", r.WarmupTransactions, r.Warmup)
	}
	var sum int64
	for _, ns := range r.SamplesNS {
		sum += ns
	}
	if got := float64(sum) / 50 / 1e3; got-r.Mean > 0.001 || r.Mean-got > 0.001 {
		t.Errorf("mean of samples_ns %g µs, report says %g", got, r.Mean)
	}
}

func TestRunErrors(t *testing.T) {
	ns := newTestNS(t)
	closed := netip.AddrPortFrom(testV4, 1) // nothing listens on port 1

	t.Run("refused", func(t *testing.T) {
		_, err := run(t, ns, context.Background(), Config{Server: closed, Duration: time.Second})
		if err == nil || !strings.Contains(err.Error(), "connect 198.18.0.1:1: connection refused") {
			t.Errorf("err = %v, want a refused connection", err)
		}
	})

	t.Run("server gone", func(t *testing.T) {
		var s *Server
		var err error
		ns.do(t, func() { s, err = Listen(netip.AddrPortFrom(testV6, 0)) })
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		ns.start(func() { served <- s.Serve(false) })
		go func() { // close once the client is being served
			for {
				s.mu.Lock()
				serving := s.conn >= 0
				s.mu.Unlock()
				if serving {
					time.Sleep(50 * time.Millisecond)
					s.Close()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		start := time.Now()
		_, err = run(t, ns, context.Background(), Config{Server: s.Addr(), Duration: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "server closed the connection") {
			t.Errorf("err = %v, want the server's close", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("client noticed the server's close after %s", d)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve after Close: %v, want ErrServerClosed", err)
		}
	})

	t.Run("canceled", func(t *testing.T) {
		addr, _ := serveOnce(t, ns, testV4)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := run(t, ns, ctx, Config{Server: addr, Duration: 10 * time.Second})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the context's", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Run returned %s after its context ended", d)
		}
	})

	// fake starts a TCP server in ns that answers the first client with
	// fn and returns its address.
	fake := func(t *testing.T, fn func(net.Conn)) netip.AddrPort {
		var ln net.Listener
		var err error
		ns.do(t, func() { ln, err = net.Listen("tcp", netip.AddrPortFrom(testV4, 0).String()) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			fn(c)
		}()
		return netip.MustParseAddrPort(ln.Addr().String())
	}

	t.Run("silent server", func(t *testing.T) {
		stop := make(chan struct{})
		defer close(stop)
		addr := fake(t, func(c net.Conn) {
			hello := make([]byte, helloSize)
			if _, err := io.ReadFull(c, hello); err == nil {
				c.Write([]byte(helloOK))
			}
			<-stop // then never answer
		})
		_, err := run(t, ns, context.Background(), Config{Server: addr, Duration: 10 * time.Second, Timeout: 100 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "no response: timed out (timeout 100ms)") {
			t.Errorf("err = %v, want a timeout", err)
		}
	})

	t.Run("not an rr server", func(t *testing.T) {
		addr := fake(t, func(c net.Conn) { c.Write([]byte("SSH-2.0-OpenSSH\r\n")) })
		_, err := run(t, ns, context.Background(), Config{Server: addr, Duration: time.Second})
		if err == nil || !strings.Contains(err.Error(), `answered the hello with "SSH-"`) {
			t.Errorf("err = %v, want a wrong hello", err)
		}
	})

	t.Run("not an rr client", func(t *testing.T) {
		addr, served := serveOnce(t, ns, testV4)
		ns.do(t, func() {
			c, err := net.Dial("tcp", addr.String())
			if err != nil {
				t.Error(err)
				return
			}
			c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
			c.Close()
		})
		if err := <-served; err == nil || !strings.Contains(err.Error(), "bad hello") {
			t.Errorf("Serve: %v, want a bad hello", err)
		}
	})
}

func TestConfigDefaults(t *testing.T) {
	server := netip.AddrPortFrom(testV4, DefaultPort)
	got, err := Config{Server: server, Duration: 3 * time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Server: server, Duration: 3 * time.Second, Warmup: DefaultWarmup,
		RequestSize: 1, ResponseSize: 1, Timeout: DefaultTimeout, MaxSamples: 1_500_001}
	if got != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if got, _ := (Config{Server: server, Duration: time.Hour}).withDefaults(); got.MaxSamples != DefaultMaxSamples {
		t.Errorf("MaxSamples of an hour = %d, want the cap %d", got.MaxSamples, DefaultMaxSamples)
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no server", Config{Duration: time.Second}, "not a host address"},
		{"unspecified", Config{Server: netip.MustParseAddrPort("[::]:1"), Duration: time.Second}, "not a host address"},
		{"no port", Config{Server: netip.AddrPortFrom(testV4, 0), Duration: time.Second}, "not a host address"},
		{"no duration", Config{Server: server}, "duration 0s is not positive"},
		{"request too big", Config{Server: server, Duration: time.Second, RequestSize: MaxMessageSize + 1}, "request size 1048577 outside"},
		{"negative response", Config{Server: server, Duration: time.Second, ResponseSize: -1}, "response size -1 outside"},
		{"tiny timeout", Config{Server: server, Duration: time.Second, Timeout: time.Microsecond}, "below 1ms"},
		{"negative cap", Config{Server: server, Duration: time.Second, MaxSamples: -1}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	samples := make([]int64, 100)
	for i := range samples {
		samples[len(samples)-1-i] = int64(i+1) * 1000 // 100..1 µs, unsorted
	}
	var r Report
	summarize(&r, samples)
	// Linear interpolation (stats.Quantile): p50 of 1..100 is 50.5.
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"min", r.Min, 1}, {"max", r.Max, 100}, {"mean", r.Mean, 50.5},
		{"stddev", r.StdDev, 29.011}, {"p50", r.P50, 50.5}, {"p90", r.P90, 90.1},
		{"p99", r.P99, 99.01}, {"p99.9", r.CDF[len(r.CDF)-4].RTT, 99.901},
	} {
		if d := f.got - f.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if samples[0] != 100_000 {
		t.Error("summarize modified its input")
	}
	var empty Report
	summarize(&empty, nil)
	if empty.CDF != nil || empty.Max != 0 {
		t.Errorf("summary of no samples: %+v", empty)
	}
}

func TestHello(t *testing.T) {
	req, resp, err := decodeHello(encodeHello(1, MaxMessageSize))
	if err != nil || req != 1 || resp != MaxMessageSize {
		t.Errorf("round trip: %d, %d, %v", req, resp, err)
	}
	for _, b := range [][]byte{[]byte("TBR2\x00\x00\x00\x01\x00\x00\x00\x01"), encodeHello(0, 1), []byte("TBR1")} {
		if _, _, err := decodeHello(b); err == nil {
			t.Errorf("decodeHello(%q) accepted it", b)
		}
	}
}
