package remotehost

import (
	"os"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	// testdata/version.txt is the output of `go run ./cmd/tunbench version`.
	data, err := os.ReadFile("testdata/version.txt")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseVersion(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Fields(string(data))[1]; v != want || v == "" {
		t.Errorf("ParseVersion = %q, want %q", v, want)
	}
	if _, err := ParseVersion("bash: tunbench: command not found\n"); err == nil {
		t.Error("ParseVersion accepted a shell error")
	}
}

func TestMissingReport(t *testing.T) {
	got := MissingReport("s1", []Tool{{Program: "iperf3"}, {Program: "ethtool"}, {Program: "ip", Package: "iproute2"}, {Program: "bridge", Package: "iproute2"}})
	want := "host s1 lacks iperf3, ethtool, ip, bridge: apt-get install -y --no-install-recommends iperf3 ethtool iproute2"
	if got != want {
		t.Errorf("MissingReport =\n %s\nwant\n %s", got, want)
	}
	got = MissingReport("s2", []Tool{{Program: "iperf3"}, {Program: "wireguard-go", Install: "go install golang.zx2c4.com/wireguard@v0.0.20250522"}})
	want = "host s2 lacks iperf3, wireguard-go: apt-get install -y --no-install-recommends iperf3; go install golang.zx2c4.com/wireguard@v0.0.20250522"
	if got != want {
		t.Errorf("MissingReport with a go install =\n %s\nwant\n %s", got, want)
	}
	got = MissingReport("s3", []Tool{{Program: "wireguard-go", Install: "go install golang.zx2c4.com/wireguard@v0.0.20250522"}})
	want = "host s3 lacks wireguard-go: go install golang.zx2c4.com/wireguard@v0.0.20250522"
	if got != want {
		t.Errorf("MissingReport with only a go install =\n %s\nwant\n %s", got, want)
	}
	if got := MissingReport("s1", nil); got != "" {
		t.Errorf("MissingReport of nothing = %q, want empty", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string // substring of the error; "" for none
	}{
		{Config{Addr: "198.18.0.1"}, ""},
		{Config{Name: "eu", Addr: ""}, "host eu: addr is empty"},
		{Config{Addr: "root@h"}, "addr \"root@h\" is not an address or DNS name: give it without port, user or path"},
		{Config{Addr: "h:22/x"}, "not an address"},
		{Config{Addr: "h", Port: 70000}, "port 70000 is out of range: give 1-65535"},
		{Config{Addr: "h", User: "a b"}, "user \"a b\" is not a login name"},
		{Config{Addr: "h", IdentityFile: "/nonexistent/key"}, "identity_file"},
		{Config{Addr: "h", KnownHosts: "/"}, "known_hosts / is a directory"},
	} {
		err := tc.c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one holding %q", tc.c, err, tc.want)
		}
	}
}
