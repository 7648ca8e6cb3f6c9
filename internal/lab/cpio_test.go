package lab

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/testenv"
)

// cpioEntry is one decoded newc entry.
type cpioEntry struct {
	Name         string
	Mode         uint32
	RMaj, RMin   uint32
	Data         string
	Ino, NameLen uint32
}

// readCPIO decodes a newc archive up to its trailer, checking magic,
// alignment and the trailer itself.
func readCPIO(b []byte) ([]cpioEntry, error) {
	var out []cpioEntry
	off := 0
	for {
		if off%4 != 0 {
			return nil, fmt.Errorf("entry at %d is not 4-byte aligned", off)
		}
		if len(b)-off < cpioHdrLen || string(b[off:off+6]) != cpioMagic {
			return nil, fmt.Errorf("no newc header at %d", off)
		}
		var f [13]uint32
		for i := range f {
			s := string(b[off+6+8*i : off+14+8*i])
			v, err := strconv.ParseUint(s, 16, 32)
			if err != nil {
				return nil, fmt.Errorf("field %d at %d: %w", i, off, err)
			}
			f[i] = uint32(v)
		}
		nameStart := off + cpioHdrLen
		nameEnd := nameStart + int(f[11])
		if b[nameEnd-1] != 0 {
			return nil, fmt.Errorf("name at %d is not NUL-terminated", nameStart)
		}
		name := string(b[nameStart : nameEnd-1])
		dataStart := nameEnd + (4-nameEnd%4)%4
		dataEnd := dataStart + int(f[6])
		if name == cpioTrailer {
			if dataEnd != len(b) {
				return nil, fmt.Errorf("%d bytes after the trailer", len(b)-dataEnd)
			}
			return out, nil
		}
		out = append(out, cpioEntry{Name: name, Mode: f[1], RMaj: f[9], RMin: f[10], Data: string(b[dataStart:dataEnd]), Ino: f[0], NameLen: f[11]})
		off = dataEnd + (4-dataEnd%4)%4
	}
}

func sampleCPIO(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	c := newCPIOWriter(&buf)
	c.dir("/bin", 0o755)
	c.file("bin/busybox", 0o755, []byte("#!/bin/true\n"))
	c.symlink("bin/sh", "busybox")
	c.dir("dev", 0o755)
	c.charDev("dev/console", 0o600, 5, 1)
	c.file("init", 0o755, []byte("odd length"))
	c.file("empty", 0o644, nil)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCPIORoundTrip(t *testing.T) {
	got, err := readCPIO(sampleCPIO(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []cpioEntry{
		{Name: "bin", Mode: 0o40755, Ino: 1, NameLen: 4},
		{Name: "bin/busybox", Mode: 0o100755, Data: "#!/bin/true\n", Ino: 2, NameLen: 12},
		{Name: "bin/sh", Mode: 0o120777, Data: "busybox", Ino: 3, NameLen: 7},
		{Name: "dev", Mode: 0o40755, Ino: 4, NameLen: 4},
		{Name: "dev/console", Mode: 0o20600, RMaj: 5, RMin: 1, Ino: 5, NameLen: 12},
		{Name: "init", Mode: 0o100755, Data: "odd length", Ino: 6, NameLen: 5},
		{Name: "empty", Mode: 0o100644, Ino: 7, NameLen: 6},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
}

// TestCPIOBusybox lists the archive with an independent reader.
func TestCPIOBusybox(t *testing.T) {
	if err := checkStaticBusybox(BusyboxPath); err != nil {
		testenv.SkipMissing(t, "no independent cpio reader: %v", err)
	}
	cmd := exec.Command(BusyboxPath, "cpio", "-t")
	cmd.Stdin = bytes.NewReader(sampleCPIO(t))
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v", cmd.Args, err)
	}
	want := []string{"bin", "bin/busybox", "bin/sh", "dev", "dev/console", "init", "empty"}
	if d := cmp.Diff(want, strings.Fields(string(out))); d != "" {
		t.Errorf("busybox cpio -t (-want +got):\n%s", d)
	}
}

func TestCPIORejectsBadNamesAndSticks(t *testing.T) {
	var buf bytes.Buffer
	c := newCPIOWriter(&buf)
	if err := c.file("/", 0o644, nil); err == nil {
		t.Error("empty name accepted")
	}
	if err := c.dir("ok", 0o755); err == nil {
		t.Error("writer did not keep its first error")
	}
	if err := c.close(); err == nil {
		t.Error("close after an error succeeded")
	}
}
