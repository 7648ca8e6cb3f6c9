package remotehost

import (
	"strings"
	"testing"
)

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "''"},
		{"plain", "plain"},
		{"/usr/sbin/ip", "/usr/sbin/ip"},
		{"198.18.0.1/24", "198.18.0.1/24"},
		{"-P", "-P"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$HOME", "'$HOME'"},
		{"a=b", "'a=b'"},
		{"~root", "'~root'"},
		{"*", "'*'"},
		{"x\ny", "'x\ny'"},
		{"üñí", "'üñí'"},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestQuoteArgvRefuses(t *testing.T) {
	if _, err := QuoteArgv(nil); err == nil || !strings.Contains(err.Error(), "empty argv") {
		t.Errorf("QuoteArgv(nil) = %v, want an empty argv error", err)
	}
	if _, err := QuoteArgv([]string{"echo", "a\x00b"}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("QuoteArgv with a NUL byte = %v, want a NUL error", err)
	}
}

func TestHeaderWriter(t *testing.T) {
	var out strings.Builder
	hw := &headerWriter{w: &out, pid: make(chan int, 1)}
	for _, p := range []string{"12", "34\nfirst ", "line\n", "second\n"} {
		if n, err := hw.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got := <-hw.pid; got != 1234 || hw.bad {
		t.Errorf("pid %d (bad %v), want 1234", got, hw.bad)
	}
	if out.String() != "first line\nsecond\n" {
		t.Errorf("output %q, want the lines after the pid", out.String())
	}

	out.Reset()
	hw = &headerWriter{w: &out, pid: make(chan int, 1)}
	hw.Write([]byte("Welcome to pyenv\n5678\n"))
	if !hw.bad || len(hw.pid) != 0 {
		t.Errorf("a first line that is no pid: bad %v, pids %d; want bad and none", hw.bad, len(hw.pid))
	}
}
