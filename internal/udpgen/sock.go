package udpgen

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func sockaddr(a netip.Addr, port int) (unix.Sockaddr, int) {
	a = a.Unmap()
	if a.Is4() {
		return &unix.SockaddrInet4{Port: port, Addr: a.As4()}, unix.AF_INET
	}
	return &unix.SockaddrInet6{Port: port, Addr: a.As16()}, unix.AF_INET6
}

// BufferBytes is the socket buffer each side of the generator asks for,
// as iperf3 -w 4M: SO_SNDBUFFORCE on the sender and SO_RCVBUFFORCE on the
// receiver, which may exceed net.core.wmem_max and rmem_max but need
// CAP_NET_ADMIN; without it SO_SNDBUF and SO_RCVBUF, which those limits
// cap. The kernel doubles the size it accepts (for its own bookkeeping)
// and reports the doubled figure, so a buffer granted in full reads back
// as 2 × BufferBytes.
const BufferBytes = 4 << 20

// sizeBuffer asks for want bytes of send (or receive) buffer on fd and
// returns the size the kernel granted, read back as the kernel reports it.
func sizeBuffer(fd int, send bool, want int) (int, error) {
	force, plain, name := unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, "receive"
	if send {
		force, plain, name = unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, "send"
	}
	if ferr := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, want); ferr != nil {
		// Not allowed beyond the sysctl limit: as much as it allows.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, want); err != nil {
			return 0, fmt.Errorf("set the %s buffer to %d bytes: %w", name, want, errors.Join(ferr, err))
		}
	}
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
	if err != nil {
		return 0, fmt.Errorf("read back the %s buffer: %w", name, err)
	}
	return got, nil
}

// ShortBuffer says how a socket buffer fell short of what was asked: side
// is "send" or "receive", requested the size set (BufferBytes) and granted
// the size read back (doubled by the kernel). It returns "" when the
// buffer was granted in full, and when requested is 0 (a report from
// before the sizes were recorded).
func ShortBuffer(side string, requested, granted int) string {
	if requested <= 0 || granted >= 2*requested {
		return ""
	}
	limit := "net.core.wmem_max"
	if side == "receive" {
		limit = "net.core.rmem_max"
	}
	return fmt.Sprintf("%s buffer %d bytes, below the %d asked (%d, doubled by the kernel): without CAP_NET_ADMIN %s caps it",
		side, granted, 2*requested, requested, limit)
}

// SendConfig is one sender run.
type SendConfig struct {
	Addr netip.Addr
	Port int
	// Size is the UDP payload in bytes, at least HeaderSize.
	Size int
	// Rate is the offered payload rate in bits per second; 0 is as fast as
	// the socket takes them.
	Rate     float64
	Duration time.Duration
}

// Send runs the sender: a blocking connected socket, datagrams written in
// batches of up to 32 by sendmmsg(2) (all of a batch carry the same send
// time, taken just before the call), paced in bursts of at most 1 ms of
// packets when a rate is given. At the end it sends five end-of-test markers.
func Send(ctx context.Context, c SendConfig) (SenderReport, error) {
	rep := SenderReport{OfferedBitsPerSecond: c.Rate}
	if c.Size < HeaderSize || c.Size > 65507 {
		return rep, fmt.Errorf("udpgen send: size %d outside %d..65507", c.Size, HeaderSize)
	}
	sa, af := sockaddr(c.Addr, c.Port)
	fd, err := unix.Socket(af, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return rep, fmt.Errorf("udpgen send: socket: %w", err)
	}
	defer unix.Close(fd)
	rep.SendBufferRequested = BufferBytes
	if rep.SendBufferGranted, err = sizeBuffer(fd, true, BufferBytes); err != nil {
		return rep, fmt.Errorf("udpgen send: %w", err)
	}
	if err := unix.Connect(fd, sa); err != nil {
		return rep, fmt.Errorf("udpgen send: connect %s port %d: %w", c.Addr, c.Port, err)
	}
	b := newBatch(batchSize, c.Size)
	pps := 0.0
	burst := uint64(batchSize)
	if c.Rate > 0 {
		pps = c.Rate / float64(8*c.Size)
		burst = uint64(max(1, min(batchSize, pps/1000)))
	}
	start := time.Now()
	end := start.Add(c.Duration)
	var seq uint64
	for {
		now := time.Now()
		if !now.Before(end) || ctx.Err() != nil {
			break
		}
		n := burst
		if pps > 0 {
			due := uint64(now.Sub(start).Seconds() * pps)
			if seq >= due {
				wait := time.Duration(float64(seq+1-due) / pps * 1e9)
				time.Sleep(min(wait, time.Millisecond))
				continue
			}
			n = min(n, due-seq)
		}
		ts := now.UnixNano()
		for i := range n {
			putHeader(b.bufs[i], magicData, seq+i, ts)
		}
		sent, err := b.send(fd, int(n))
		if err != nil {
			if !errors.Is(err, unix.EINTR) {
				rep.SendErrors++
			}
			continue
		}
		seq += uint64(sent)
		rep.Bytes += uint64(sent * c.Size)
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Sent = seq
	for range 5 {
		putHeader(b.bufs[0], magicEnd, seq, time.Now().UnixNano())
		_, _ = unix.Write(fd, b.bufs[0])
		time.Sleep(5 * time.Millisecond)
	}
	return rep, nil
}

// RecvConfig is one receiver run.
type RecvConfig struct {
	Bind netip.Addr
	Port int
	// Timeout bounds the whole run; the receiver normally ends 200 ms
	// after the sender's end marker.
	Timeout time.Duration
	// Ready, if set, is called once the socket is bound.
	Ready func()
}

// Receive runs the receiver until the end marker (plus 200 ms for late,
// reordered datagrams), the timeout or ctx ends it.
func Receive(ctx context.Context, c RecvConfig) (ReceiverReport, error) {
	sa, af := sockaddr(c.Bind, c.Port)
	fd, err := unix.Socket(af, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return ReceiverReport{}, fmt.Errorf("udpgen recv: socket: %w", err)
	}
	defer unix.Close(fd)
	var st Stats
	granted, err := sizeBuffer(fd, false, BufferBytes)
	report := func() ReceiverReport {
		r := st.Report()
		r.ReceiveBufferRequested, r.ReceiveBufferGranted = BufferBytes, granted
		return r
	}
	if err != nil {
		return report(), fmt.Errorf("udpgen recv: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return ReceiverReport{}, fmt.Errorf("udpgen recv: receive timeout: %w", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return ReceiverReport{}, fmt.Errorf("udpgen recv: bind %s port %d: %w", c.Bind, c.Port, err)
	}
	if c.Ready != nil {
		c.Ready()
	}
	b := newBatch(batchSize, 65536)
	deadline := time.Now().Add(c.Timeout)
	var endAt time.Time
	endSeen := false
	for {
		n, err := b.recv(fd)
		now := time.Now()
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				if ctx.Err() != nil || now.After(deadline) || endSeen && now.After(endAt) {
					break
				}
				continue
			}
			return report(), fmt.Errorf("udpgen recv: read: %w", err)
		}
		recvNs := now.UnixNano()
		for i := range n {
			magic, seq, sent, ok := parseHeader(b.bufs[i][:b.msgs[i].len])
			switch {
			case !ok:
			case magic == magicEnd:
				if !endSeen {
					endSeen, endAt = true, now.Add(200*time.Millisecond)
				}
			default:
				st.Add(seq, sent, recvNs, int(b.msgs[i].len))
			}
		}
		if endSeen && now.After(endAt) || now.After(deadline) {
			break
		}
	}
	r := report()
	r.EndSeen = endSeen
	return r, nil
}

// batchSize is how many datagrams one sendmmsg or recvmmsg call moves.
const batchSize = 32

// mmsghdr is struct mmsghdr of <sys/socket.h>.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// batch holds the buffers and headers of sendmmsg/recvmmsg.
type batch struct {
	bufs [][]byte
	iovs []unix.Iovec
	msgs []mmsghdr
}

func newBatch(n, size int) *batch {
	b := &batch{bufs: make([][]byte, n), iovs: make([]unix.Iovec, n), msgs: make([]mmsghdr, n)}
	for i := range n {
		b.bufs[i] = make([]byte, size)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.msgs[i].hdr.Iov = &b.iovs[i]
		b.msgs[i].hdr.SetIovlen(1)
	}
	return b
}

// send writes the first n buffers on connected socket fd with one
// sendmmsg(2) and returns how many went.
func (b *batch) send(fd, n int) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(n), 0, 0, 0)
	runtime.KeepAlive(b)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// recv reads up to len(bufs) datagrams with one recvmmsg(2), waiting (up
// to the socket's receive timeout) for the first only; msgs[i].len holds
// each one's size.
func (b *batch) recv(fd int) (int, error) {
	for i := range b.msgs {
		b.msgs[i].len = 0
	}
	r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(len(b.msgs)), unix.MSG_WAITFORONE, 0, 0)
	runtime.KeepAlive(b)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
