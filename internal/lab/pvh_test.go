package lab

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestBzImagePayload(t *testing.T) {
	payload := []byte("\xfd7zXZ\x00compressed kernel")
	got, err := bzImagePayload(fakeBzImage("6.1.0-56-amd64", payload))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("payload = %q, want %q", got, payload)
	}
	bad := fakeBzImage("6.1.0-56-amd64", payload)
	binary.LittleEndian.PutUint32(bad[hdrPayloadLength:], 1<<20)
	if _, err := bzImagePayload(bad); !errors.Is(err, ErrNotBzImage) {
		t.Errorf("payload past the end: err = %v", err)
	}
}

func TestDecompressPayload(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("\x7fELF kernel"))
	zw.Close()
	gz.WriteString("\x0b\x00\x00\x00") // the size bzImages append

	dst := filepath.Join(t.TempDir(), "vmlinux")
	if err := decompressPayload(context.Background(), execRunner{}, gz.Bytes(), dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "\x7fELF kernel" {
		t.Errorf("decompressed %q", got)
	}
	err := decompressPayload(context.Background(), execRunner{}, []byte("\x04\x22\x4d\x18lz4\x00\x00\x00\x00"), dst)
	if !errors.Is(err, errNoPVH) {
		t.Errorf("lz4 payload: err = %v, want errNoPVH", err)
	}
	wrongSize := append(bytes.Clone(gz.Bytes()[:gz.Len()-4]), 9, 0, 0, 0)
	if err := decompressPayload(context.Background(), execRunner{}, wrongSize, dst); err == nil {
		t.Error("size mismatch accepted")
	}
}

func TestHasXenNote(t *testing.T) {
	note := func(name string, typ uint32, desc []byte) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, []uint32{uint32(len(name) + 1), uint32(len(desc)), typ})
		b.WriteString(name + "\x00")
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		b.Write(desc)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	notes := append(note("GNU", 3, make([]byte, 20)), note("Xen", 6, []byte("linux\x00"))...)
	if hasXenNote(notes, xenElfnotePhys32, binary.LittleEndian) {
		t.Error("found a PVH note where there is none")
	}
	notes = append(notes, note("Xen", xenElfnotePhys32, []byte{0, 0, 0, 1})...)
	if !hasXenNote(notes, xenElfnotePhys32, binary.LittleEndian) {
		t.Error("missed the PVH note")
	}
	if hasXenNote(notes[:len(notes)-3], xenElfnotePhys32, binary.LittleEndian) {
		t.Error("accepted a truncated note")
	}
}
