package rr

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMainUsage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		want      int
		wantError string // in the JSON report on stdout; "" for none
	}{
		{"no subcommand", nil, exitUsage, ""},
		{"unknown subcommand", []string{"ping"}, exitUsage, ""},
		{"help", []string{"help"}, exitOK, ""},
		{"client help", []string{"client", "-h"}, exitOK, ""},
		{"client without address", []string{"client", "--port", "1"}, exitUsage, "--addr is required"},
		{"client bad address", []string{"client", "--addr", "198.18.0.256"}, exitUsage, "--addr"},
		{"client bad port", []string{"client", "--addr", "198.18.0.2", "--port", "70000"}, exitUsage, "--port 70000 outside"},
		{"client bad flag", []string{"client", "--addr", "198.18.0.2", "--bogus"}, exitUsage, "flag provided but not defined"},
		{"client zero request", []string{"client", "--addr", "198.18.0.2", "--request", "0"}, exitUsage, "must be positive"},
		{"client stray argument", []string{"client", "--addr", "198.18.0.2", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"server bad address", []string{"server", "--addr", "nowhere"}, exitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(tc.args, &stdout, &stderr); got != tc.want {
				t.Errorf("Main(%q) = %d, want %d; stderr: %s", tc.args, got, tc.want, &stderr)
			}
			if tc.wantError == "" {
				if strings.Contains(stdout.String(), `"error"`) {
					t.Errorf("stdout has an error report: %s", &stdout)
				}
				return
			}
			var r Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("stdout is not a report: %v: %q", err, &stdout)
			}
			if r.Tool != Tool || !strings.Contains(r.Error, tc.wantError) || !strings.Contains(stderr.String(), tc.wantError) {
				t.Errorf("report %+v, stderr %q: want error %q in both", r, &stderr, tc.wantError)
			}
		})
	}
}

// notifyWriter is a stderr that closes seen once a write contains want.
type notifyWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestMainServerClient(t *testing.T) {
	ns := newTestNS(t)
	srvErr := &notifyWriter{want: "listening on", seen: make(chan struct{})}
	status := make(chan int, 1)
	ns.start(func() {
		status <- Main([]string{"server", "--addr", "2001:2::1", "--port", "12866", "--once"}, &bytes.Buffer{}, srvErr)
	})
	select {
	case <-srvErr.seen:
	case s := <-status:
		t.Fatalf("server exited with %d: %s", s, srvErr)
	case <-time.After(5 * time.Second):
		t.Fatalf("server not listening after 5 s: %s", srvErr)
	}
	if got := srvErr.String(); got != "rr server: listening on [2001:2::1]:12866\n" {
		t.Errorf("server stderr %q", got)
	}

	var stdout, stderr bytes.Buffer
	var code int
	ns.do(t, func() {
		code = Main([]string{"client", "--addr", "2001:2::1", "--duration", "200ms", "--warmup", "0",
			"--request", "14", "--response", "14", "--samples"}, &stdout, &stderr)
	})
	if code != exitOK || stderr.Len() > 0 {
		t.Fatalf("client exited with %d: %s", code, &stderr)
	}
	if n := bytes.Count(stdout.Bytes(), []byte("\n")); n != 1 {
		t.Errorf("report is %d lines, want one", n)
	}
	var r Report
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("client report: %v", err)
	}
	checkReport(t, r, Config{Duration: 200 * time.Millisecond})
	if r.Warmup != 0 || r.WarmupTransactions != 0 || r.RequestSize != 14 || int64(len(r.SamplesNS)) != r.Transactions {
		t.Errorf("report does not follow the flags: %+v", r)
	}
	select {
	case s := <-status:
		if s != exitOK {
			t.Errorf("one-shot server exited with %d: %s", s, srvErr)
		}
	case <-time.After(2 * time.Second):
		t.Error("one-shot server still running 2 s after its client closed")
	}

	// With the server gone the client fails with a report that says why.
	stdout.Reset()
	stderr.Reset()
	ns.do(t, func() { code = Main([]string{"client", "--addr", "2001:2::1", "--duration", "1s"}, &stdout, &stderr) })
	var failed map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &failed); err != nil {
		t.Fatalf("failed client's stdout: %v: %q", err, &stdout)
	}
	want := map[string]any{"tool": Tool, "version": Version,
		"error": "rr client: connect [2001:2::1]:12866: connection refused"}
	if code != exitFail || !maps.Equal(failed, want) {
		t.Errorf("exit %d, report %v; want %d, %v", code, failed, exitFail, want)
	}
}
