package sample

import (
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
)

// LinkGetter finds a network device by name. *netlink.Handle implements
// it; a handle made with netlink.NewHandleAt reads another namespace.
type LinkGetter interface {
	LinkByName(name string) (netlink.Link, error)
}

// Counters are a device's cumulative statistics, as "ip -s link show"
// prints them.
type Counters struct {
	RxBytes, TxBytes     uint64
	RxPackets, TxPackets uint64
	RxDropped, TxDropped uint64
	RxErrors, TxErrors   uint64
}

// LinkCounters reads the counters of device name through h
// (ip -s link show dev NAME).
func LinkCounters(h LinkGetter, name string) (Counters, error) {
	l, err := h.LinkByName(name)
	if err != nil {
		return Counters{}, fmt.Errorf("read counters of %s: %w", name, err)
	}
	st := l.Attrs().Statistics
	if st == nil {
		return Counters{}, fmt.Errorf("read counters of %s: kernel returned no statistics", name)
	}
	return Counters{
		RxBytes: st.RxBytes, TxBytes: st.TxBytes,
		RxPackets: st.RxPackets, TxPackets: st.TxPackets,
		RxDropped: st.RxDropped, TxDropped: st.TxDropped,
		RxErrors: st.RxErrors, TxErrors: st.TxErrors,
	}, nil
}

// Rate returns receive and transmit rates in bits per second between two
// reads of the counters dt apart. A counter that went backwards (the device
// was recreated) or a non-positive dt gives 0.
func Rate(prev, cur Counters, dt time.Duration) (rxBps, txBps float64) {
	if dt <= 0 {
		return 0, 0
	}
	s := dt.Seconds()
	return 8 * float64(delta(prev.RxBytes, cur.RxBytes)) / s,
		8 * float64(delta(prev.TxBytes, cur.TxBytes)) / s
}
