package lab

import (
	"fmt"
	"io"
	"strings"
	"syscall"
)

// cpioWriter writes the "newc" (SVR4, no CRC) cpio format the kernel
// unpacks as an initramfs. Entries carry uid/gid 0 and mtime 0, so the same
// input gives the same bytes. Parents must be written before their
// children. The first error sticks: later calls return it.
type cpioWriter struct {
	w   io.Writer
	ino uint32
	err error
}

const (
	cpioMagic   = "070701"
	cpioHdrLen  = 110
	cpioTrailer = "TRAILER!!!"
)

func newCPIOWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: w} }

// dir adds a directory.
func (c *cpioWriter) dir(name string, perm uint32) error {
	return c.entry(name, syscall.S_IFDIR|perm, 2, 0, 0, nil)
}

// file adds a regular file.
func (c *cpioWriter) file(name string, perm uint32, data []byte) error {
	return c.entry(name, syscall.S_IFREG|perm, 1, 0, 0, data)
}

// symlink adds a symbolic link to target.
func (c *cpioWriter) symlink(name, target string) error {
	return c.entry(name, syscall.S_IFLNK|0o777, 1, 0, 0, []byte(target))
}

// charDev adds a character device node.
func (c *cpioWriter) charDev(name string, perm, major, minor uint32) error {
	return c.entry(name, syscall.S_IFCHR|perm, 1, major, minor, nil)
}

// close writes the trailer. It does not close the underlying writer.
func (c *cpioWriter) close() error {
	if c.err != nil {
		return c.err
	}
	c.err = c.write(cpioTrailer, 0, 1, 0, 0, nil)
	return c.err
}

func (c *cpioWriter) entry(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	if c.err != nil {
		return c.err
	}
	name = strings.TrimPrefix(name, "/")
	if name == "" || name == cpioTrailer || strings.Contains(name, "\x00") {
		c.err = fmt.Errorf("cpio: invalid entry name %q", name)
		return c.err
	}
	c.ino++
	c.err = c.write(name, mode, nlink, rmajor, rminor, data)
	return c.err
}

func (c *cpioWriter) write(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	ino := c.ino
	if name == cpioTrailer {
		ino = 0
	}
	fields := []uint32{
		ino, mode, 0, 0, nlink, 0, // ino, mode, uid, gid, nlink, mtime
		uint32(len(data)), 0, 0, rmajor, rminor, // filesize, devmajor, devminor, rdevmajor, rdevminor
		uint32(len(name) + 1), 0, // namesize including NUL, check
	}
	var b strings.Builder
	b.WriteString(cpioMagic)
	for _, f := range fields {
		fmt.Fprintf(&b, "%08x", f)
	}
	b.WriteString(name)
	b.WriteByte(0)
	b.WriteString(pad4(cpioHdrLen + len(name) + 1))
	if _, err := io.WriteString(c.w, b.String()); err != nil {
		return fmt.Errorf("cpio: %s: %w", name, err)
	}
	if _, err := c.w.Write(data); err != nil {
		return fmt.Errorf("cpio: %s: %w", name, err)
	}
	if _, err := io.WriteString(c.w, pad4(len(data))); err != nil {
		return fmt.Errorf("cpio: %s: %w", name, err)
	}
	return nil
}

// pad4 is the NUL padding that brings n up to a multiple of four.
func pad4(n int) string {
	return strings.Repeat("\x00", (4-n%4)%4)
}
