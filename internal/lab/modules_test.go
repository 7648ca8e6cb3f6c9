package lab

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ulikunitz/xz"
)

// A modules.dep in the shape of Debian 6.1's, for the modules stage 1 needs.
const sampleModulesDep = `kernel/fs/overlayfs/overlay.ko.xz:
kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/fscache/fscache.ko.xz kernel/fs/netfs/netfs.ko.xz
kernel/fs/fscache/fscache.ko.xz: kernel/fs/netfs/netfs.ko.xz
kernel/fs/netfs/netfs.ko.xz:
kernel/net/9p/9pnet.ko.xz:
kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/drivers/virtio/virtio.ko.xz kernel/drivers/virtio/virtio_ring.ko.xz
kernel/drivers/virtio/virtio.ko.xz:
kernel/drivers/virtio/virtio_ring.ko.xz:
kernel/drivers/virtio/virtio_pci.ko.xz: kernel/drivers/virtio/virtio_pci_legacy_dev.ko.xz kernel/drivers/virtio/virtio_pci_modern_dev.ko.xz kernel/drivers/virtio/virtio.ko.xz kernel/drivers/virtio/virtio_ring.ko.xz
kernel/drivers/virtio/virtio_pci_legacy_dev.ko.xz:
kernel/drivers/virtio/virtio_pci_modern_dev.ko.xz:
kernel/drivers/net/dummy-thing.ko.xz:
`

func TestLoadOrder(t *testing.T) {
	idx, err := parseModulesDep(strings.NewReader(sampleModulesDep), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.loadOrder(bootModules)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/drivers/virtio/virtio_pci_legacy_dev.ko.xz",
		"kernel/drivers/virtio/virtio_pci_modern_dev.ko.xz",
		"kernel/drivers/virtio/virtio.ko.xz",
		"kernel/drivers/virtio/virtio_ring.ko.xz",
		"kernel/drivers/virtio/virtio_pci.ko.xz",
		"kernel/net/9p/9pnet.ko.xz",
		"kernel/net/9p/9pnet_virtio.ko.xz",
		"kernel/fs/netfs/netfs.ko.xz",
		"kernel/fs/fscache/fscache.ko.xz",
		"kernel/fs/9p/9p.ko.xz",
		"kernel/fs/overlayfs/overlay.ko.xz",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("load order (-want +got):\n%s", d)
	}
	if got, err := idx.loadOrder([]string{"dummy_thing"}); err != nil || len(got) != 1 {
		t.Errorf("dashes and underscores: %v, %v", got, err)
	}
}

func TestLoadOrderBuiltinAndMissing(t *testing.T) {
	// 6.12 builds virtio_pci and the virtio core in.
	dep := "kernel/fs/overlayfs/overlay.ko.xz:\nkernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz\nkernel/net/9p/9pnet.ko.xz:\nkernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz\n"
	builtin := "kernel/drivers/virtio/virtio.ko\nkernel/drivers/virtio/virtio_pci.ko\n"
	idx, err := parseModulesDep(strings.NewReader(dep), strings.NewReader(builtin))
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.loadOrder(bootModules)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kernel/net/9p/9pnet.ko.xz", "kernel/net/9p/9pnet_virtio.ko.xz", "kernel/fs/9p/9p.ko.xz", "kernel/fs/overlayfs/overlay.ko.xz"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("load order (-want +got):\n%s", d)
	}
	if _, err := idx.loadOrder([]string{"geneve"}); err == nil || !strings.Contains(err.Error(), "neither in modules.dep nor built in") {
		t.Errorf("missing module: err = %v", err)
	}
}

func TestLoadOrderCycle(t *testing.T) {
	idx, err := parseModulesDep(strings.NewReader("a.ko: b.ko\nb.ko: a.ko\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.loadOrder([]string{"a"}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: err = %v", err)
	}
	if _, err := parseModulesDep(strings.NewReader("no colon here\n"), nil); err == nil {
		t.Error("malformed modules.dep accepted")
	}
}

func TestReadModuleDecompresses(t *testing.T) {
	elfObj := append([]byte("\x7fELF"), bytes.Repeat([]byte("module"), 1000)...)
	var xzBuf, gzBuf bytes.Buffer
	xw, err := xz.NewWriter(&xzBuf)
	if err != nil {
		t.Fatal(err)
	}
	xw.Write(elfObj)
	if err := xw.Close(); err != nil {
		t.Fatal(err)
	}
	gw := gzip.NewWriter(&gzBuf)
	gw.Write(elfObj)
	gw.Close()

	dir := t.TempDir()
	for name, data := range map[string][]byte{"a.ko": elfObj, "b.ko.xz": xzBuf.Bytes(), "c.ko.gz": gzBuf.Bytes()} {
		got, err := readModule(writeFile(t, dir, name, data))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !bytes.Equal(got, elfObj) {
			t.Errorf("%s: decompressed %d bytes, want the %d-byte object", name, len(got), len(elfObj))
		}
	}
	if _, err := readModule(writeFile(t, dir, "d.ko.zst", []byte("x"))); err == nil || !strings.Contains(err.Error(), "unsupported compression") {
		t.Errorf(".ko.zst: err = %v", err)
	}
	if _, err := readModule(writeFile(t, dir, "e.ko", []byte("not elf"))); err == nil {
		t.Error("non-ELF module accepted")
	}
}
