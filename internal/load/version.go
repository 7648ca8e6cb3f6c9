package load

import (
	"regexp"
	"strings"
)

var versionRes = map[string]*regexp.Regexp{
	// "iperf 3.12 (cJSON 1.7.15)"
	"iperf3": regexp.MustCompile(`(?m)^iperf (\d\S*)`),
	// "sockperf, version 3.7-no.git"
	"sockperf": regexp.MustCompile(`(?m)^sockperf, version (\d\S*)`),
	// "Netperf version 2.7.0" (netperf -V)
	"netperf": regexp.MustCompile(`(?m)^Netperf version (\d\S*)`),
}

// ToolVersion returns the version a load tool printed when asked for it
// (iperf3 --version, sockperf --version, netperf -V), e.g. "3.12" or
// "3.7-no.git". It returns "" for an unknown tool or unrecognised output.
func ToolVersion(name string, out []byte) string {
	re, ok := versionRes[name]
	if !ok {
		return ""
	}
	m := re.FindSubmatch(out)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(string(m[1]))
}
