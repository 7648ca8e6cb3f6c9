package sshhost

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
