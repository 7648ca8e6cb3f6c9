package lab

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// fakeBzImage builds the smallest file with a Linux boot protocol header
// whose kernel_version string starts with version, and whose payload (at
// setup sector 1 + 0) is payload.
func fakeBzImage(version string, payload []byte) []byte {
	const setupSects = 1
	b := make([]byte, (setupSects+1)*512)
	b[hdrSetupSectsOffset] = setupSects
	copy(b[hdrMagicOffset:], "HdrS")
	binary.LittleEndian.PutUint16(b[hdrVersionOffset:], 0x020f)
	const verAt = 0x300
	binary.LittleEndian.PutUint16(b[hdrKernelVerOffset:], verAt-hdrKernelVerBase)
	copy(b[verAt:], version+" (builder@example) #1 SMP Debian\x00")
	binary.LittleEndian.PutUint32(b[hdrPayloadOffset:], 0)
	binary.LittleEndian.PutUint32(b[hdrPayloadLength:], uint32(len(payload)))
	return append(b, payload...)
}

// writeFile writes data to dir/name, creating parents, and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
