package sample

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// FS reads files of /proc by names relative to its root: "stat",
// "1234/stat". The returned bytes are valid only until the next ReadFile
// on the same FS, so callers parse them first. A missing file (an exited
// process) gives an error matching fs.ErrNotExist or unix.ESRCH.
// Implementations need not be safe for concurrent use.
type FS interface {
	ReadFile(name string) ([]byte, error)
}

// ProcFS is the real /proc. It reads each file with open, read and close
// into one buffer it reuses, so a read does not allocate. It is not safe
// for concurrent use: give each Sampler its own. The zero value reads
// /proc.
type ProcFS struct {
	// Root is the proc mount; empty means "/proc".
	Root string
	buf  []byte
}

// ReadFile reads root/name whole. See FS for how long the result is valid.
func (p *ProcFS) ReadFile(name string) ([]byte, error) {
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	path := root + "/" + name
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if p.buf == nil {
		p.buf = make([]byte, 8192)
	}
	n := 0
	for {
		if n == len(p.buf) {
			p.buf = append(p.buf, make([]byte, len(p.buf))...)
		}
		m, err := unix.Read(fd, p.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return p.buf[:n], nil
		}
		n += m
	}
}
