package load

import "testing"

func TestToolVersion(t *testing.T) {
	for _, tc := range []struct {
		tool string
		out  []byte
		want string
	}{
		{"iperf3", readTestdata(t, "iperf3_version.txt"), "3.12"},
		{"sockperf", readTestdata(t, "sockperf_version.txt"), "3.7-no.git"},
		{"netperf", []byte("Netperf version 2.7.0\n"), "2.7.0"}, // from the manual, not captured
		{"iperf3", []byte("bash: iperf3: command not found\n"), ""},
		{"sockperf", readTestdata(t, "iperf3_version.txt"), ""},
		{"ping", []byte("ping from iputils 20240905\n"), ""},
	} {
		if got := ToolVersion(tc.tool, tc.out); got != tc.want {
			t.Errorf("ToolVersion(%q, %.30q) = %q, want %q", tc.tool, tc.out, got, tc.want)
		}
	}
}
