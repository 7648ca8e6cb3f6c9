package hostinfo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTestdata(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testdata/proc holds files copied from the development machine: a
// 2-vCPU AMD EPYC guest with 24 GiB.
func TestParseCPUInfo(t *testing.T) {
	got := ParseCPUInfo(readTestdata(t, "proc", "cpuinfo"))
	if diff := cmp.Diff(CPUInfo{Model: "AMD EPYC", Count: 2}, got); diff != "" {
		t.Errorf("ParseCPUInfo (-want +got):\n%s", diff)
	}
	if got := ParseCPUInfo(nil); got != (CPUInfo{}) {
		t.Errorf("ParseCPUInfo(nil) = %+v, want zero", got)
	}
}

func TestParseMemTotalMiB(t *testing.T) {
	got, err := ParseMemTotalMiB(readTestdata(t, "proc", "meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 24684096 / 1024; got != want { // MemTotal: 24684096 kB
		t.Errorf("MemTotal = %d MiB, want %d", got, want)
	}
	for _, bad := range []string{"", "MemFree: 1 kB\n", "MemTotal: lots kB\n", "MemTotal: 1024 MB\n"} {
		if _, err := ParseMemTotalMiB([]byte(bad)); err == nil {
			t.Errorf("ParseMemTotalMiB(%q) succeeded", bad)
		}
	}
}

func TestReadSysctls(t *testing.T) {
	got, err := readSysctls(filepath.Join("testdata", "proc"), append(Sysctls, "net.ipv4.no_such_sysctl"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"net.core.rmem_max":               "4194304",
		"net.core.wmem_max":               "4194304",
		"net.ipv4.tcp_congestion_control": "bbr",
		"net.core.default_qdisc":          "pfifo_fast",
		"net.ipv4.tcp_rmem":               "4096 131072 33554432",
		"net.ipv4.tcp_wmem":               "4096 16384 4194304",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readSysctls (-want +got):\n%s", diff)
	}
}
