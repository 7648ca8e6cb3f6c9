package lab

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Under software emulation, a bzImage spends about half of the boot
// decompressing itself (xz with the x86 BCJ filter, slow under TCG) after
// SeaBIOS has run the real-mode setup code. qemu can instead load the
// uncompressed vmlinux ELF directly and enter it through its PVH entry point
// (CONFIG_PVH, set in Debian's kernels), skipping both: about 8 s instead of
// 16 s to the guest command here. So Run boots the vmlinux when it can get
// one and the bzImage otherwise; both boot the same kernel.

// errNoPVH marks a kernel the lab cannot boot through PVH (unknown
// compression, no xz tool, no PVH note); Run then boots the bzImage.
var errNoPVH = errors.New("no PVH-bootable vmlinux")

// Boot protocol fields that locate the compressed kernel (protocol >= 2.08).
const (
	hdrSetupSectsOffset = 0x1f1
	hdrPayloadOffset    = 0x248
	hdrPayloadLength    = 0x24c
	hdrPayloadProtocol  = 0x208
	xenElfnotePhys32    = 18 // XEN_ELFNOTE_PHYS32_ENTRY: the PVH entry point
)

// pvhImage returns the path of an uncompressed, PVH-bootable vmlinux for
// the bzImage at image, cached in cacheDir under the bzImage's SHA-256. It
// returns an error wrapping errNoPVH when the kernel cannot be booted so.
func pvhImage(ctx context.Context, r runner, image, cacheDir string) (string, error) {
	raw, err := os.ReadFile(image)
	if err != nil {
		return "", fmt.Errorf("kernel %s: %w", image, err)
	}
	sum := sha256.Sum256(raw)
	out := filepath.Join(cacheDir, hex.EncodeToString(sum[:16])+".vmlinux")
	if err := checkPVH(out); err == nil {
		return out, nil
	}
	payload, err := bzImagePayload(raw)
	if err != nil {
		return "", fmt.Errorf("kernel %s: %w", image, err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("kernel %s: vmlinux cache: %w", image, err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".vmlinux-")
	if err != nil {
		return "", fmt.Errorf("kernel %s: vmlinux cache: %w", image, err)
	}
	defer os.RemoveAll(tmp)
	elfPath := filepath.Join(tmp, "vmlinux")
	if err := decompressPayload(ctx, r, payload, elfPath); err != nil {
		return "", fmt.Errorf("kernel %s: %w", image, err)
	}
	if err := checkPVH(elfPath); err != nil {
		return "", fmt.Errorf("kernel %s: %w", image, err)
	}
	if err := os.Rename(elfPath, out); err != nil {
		return "", fmt.Errorf("kernel %s: vmlinux cache: %w", image, err)
	}
	return out, nil
}

// bzImagePayload returns the compressed kernel inside a bzImage.
func bzImagePayload(raw []byte) ([]byte, error) {
	if len(raw) < hdrPayloadLength+4 || string(raw[hdrMagicOffset:hdrMagicOffset+4]) != "HdrS" {
		return nil, ErrNotBzImage
	}
	if binary.LittleEndian.Uint16(raw[hdrVersionOffset:]) < hdrPayloadProtocol {
		return nil, fmt.Errorf("%w: boot protocol older than 2.08 has no payload fields", errNoPVH)
	}
	setup := int(raw[hdrSetupSectsOffset])
	if setup == 0 {
		setup = 4
	}
	start := (setup+1)*512 + int(binary.LittleEndian.Uint32(raw[hdrPayloadOffset:]))
	end := start + int(binary.LittleEndian.Uint32(raw[hdrPayloadLength:]))
	if start >= end || end > len(raw) {
		return nil, fmt.Errorf("%w: payload [%d, %d) outside the %d-byte image", ErrNotBzImage, start, end, len(raw))
	}
	return raw[start:end], nil
}

// payloadTools decompress the kernel formats Debian uses. xz payloads use
// the x86 BCJ filter, which no Go xz package decodes, so both go through
// the command-line tools.
var payloadTools = []struct {
	magic, tool, pkg, ext string
}{
	{"\xfd7zXZ\x00", "xz", "xz-utils", ".xz"},    // Debian 12's 6.1
	{"\x28\xb5\x2f\xfd", "zstd", "zstd", ".zst"}, // Debian's 6.12
}

// decompressPayload writes the decompressed kernel to dst. A bzImage
// payload ends with the kernel's size (4 bytes, little-endian), which the
// result must match. gzip is decoded in Go; xz and zstd by their tools.
func decompressPayload(ctx context.Context, r runner, payload []byte, dst string) error {
	if len(payload) < 8 {
		return fmt.Errorf("%w: payload of %d bytes", ErrNotBzImage, len(payload))
	}
	size := int64(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
	stream := payload[:len(payload)-4]
	if err := decompressStream(ctx, r, stream, dst); err != nil {
		return err
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return err
	}
	if fi.Size() != size {
		return fmt.Errorf("decompressed kernel has %d bytes, the bzImage says %d", fi.Size(), size)
	}
	return nil
}

func decompressStream(ctx context.Context, r runner, stream []byte, dst string) error {
	if bytes.HasPrefix(stream, []byte("\x1f\x8b")) {
		zr, err := gzip.NewReader(bytes.NewReader(stream))
		if err != nil {
			return fmt.Errorf("gzip payload: %w", err)
		}
		f, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, zr); err != nil {
			f.Close()
			return fmt.Errorf("gzip payload: %w", err)
		}
		return f.Close()
	}
	for _, t := range payloadTools {
		if !bytes.HasPrefix(stream, []byte(t.magic)) {
			continue
		}
		if _, err := lookPathSbin(t.tool); err != nil {
			return fmt.Errorf("%w: kernel compressed with %s and %v: apt-get install -y --no-install-recommends %s", errNoPVH, t.tool, err, t.pkg)
		}
		if err := os.WriteFile(dst+t.ext, stream, 0o644); err != nil {
			return err
		}
		_, err := r.run(ctx, "", t.tool, "--decompress", "--quiet", dst+t.ext)
		return err
	}
	n := min(len(stream), 4)
	return fmt.Errorf("%w: unsupported kernel compression (payload starts % x)", errNoPVH, stream[:n])
}

// checkPVH fails unless path is an ELF file with a PVH entry note.
func checkPVH(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			return fmt.Errorf("vmlinux notes: %w", err)
		}
		if hasXenNote(notes, xenElfnotePhys32, f.ByteOrder) {
			return nil
		}
	}
	return fmt.Errorf("%w: vmlinux has no PVH entry note (kernel built without CONFIG_PVH)", errNoPVH)
}

// hasXenNote scans an ELF note segment for a "Xen" note of type typ.
func hasXenNote(b []byte, typ uint32, bo binary.ByteOrder) bool {
	align4 := func(n uint32) uint32 { return (n + 3) &^ 3 }
	for len(b) >= 12 {
		namesz, descsz, t := bo.Uint32(b[0:]), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		nlen, dlen := align4(namesz), align4(descsz)
		if uint64(nlen)+uint64(dlen) > uint64(len(b)) {
			return false
		}
		if t == typ && string(bytes.TrimRight(b[:namesz], "\x00")) == "Xen" {
			return true
		}
		b = b[nlen+dlen:]
	}
	return false
}
