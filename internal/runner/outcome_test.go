package runner

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestIperf3Outcome: a client gone before its CPU could be tracked is
// described by how it ended, from iperf3's real output
// (internal/load/testdata): refused, or complete.
func TestIperf3Outcome(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("../load/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	exit1 := errors.New("exit status 1")
	for _, tc := range []struct {
		name    string
		out     []byte
		waitErr error
		want    string
	}{
		{"refused", read("iperf3_refused.json"), exit1, "exit status 1, "},
		{"complete", read("iperf3_tcp4_omit.json"), nil, "with a complete result, so the tracking came after the test's end"},
		{"complete but failed", read("iperf3_tcp4_omit.json"), exit1, "exit status 1 with a complete result"},
	} {
		got := iperf3Outcome(tc.out, tc.waitErr, "some stderr")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to contain %q", tc.name, got, tc.want)
		}
	}
	if got := iperf3Outcome(read("iperf3_refused.json"), exit1, ""); !strings.Contains(strings.ToLower(got), "connect") {
		t.Errorf("refused: %q does not carry iperf3's own error", got)
	}
}
