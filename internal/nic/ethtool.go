package nic

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ErrNotSupported marks a kernel without the ethtool netlink interface
// (before Linux 5.6, or built without CONFIG_ETHTOOL_NETLINK).
var ErrNotSupported = errors.New("ethtool netlink interface not supported by this kernel")

// timeout bounds every exchange with the kernel, so a lost reply cannot
// hang a benchmark run.
const timeout = 5 * time.Second

// kernelFacts are the same in every namespace for the life of the process:
// the ethtool family ID and the feature names compiled into the kernel.
type kernelFacts struct {
	family uint16
	view   view
}

var (
	factsMu sync.Mutex
	facts   *kernelFacts
)

// conn is an ethtool generic netlink socket bound to one namespace.
type conn struct {
	c *genetlink.Conn
	kernelFacts
}

// dial opens an ethtool netlink socket inside ns. The socket is created on
// a locked helper thread that enters ns, so it stays bound to ns while the
// caller's thread never moves. netns.None() means the calling thread's ns.
func dial(ns netns.NsHandle) (*conn, error) {
	cfg := &netlink.Config{Strict: true}
	if ns.IsOpen() {
		cfg.NetNS = int(ns)
	}
	c, err := genetlink.Dial(cfg)
	if err != nil {
		return nil, fmt.Errorf("open generic netlink socket in %s: %w", ns, err)
	}
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		c.Close()
		return nil, fmt.Errorf("set netlink deadline: %w", err)
	}
	k, err := loadFacts(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &conn{c: c, kernelFacts: k}, nil
}

func (c *conn) close() { c.c.Close() }

// loadFacts returns the cached kernel facts, asking the kernel on first use.
func loadFacts(c *genetlink.Conn) (kernelFacts, error) {
	factsMu.Lock()
	defer factsMu.Unlock()
	if facts != nil {
		return *facts, nil
	}
	fam, err := c.GetFamily(unix.ETHTOOL_GENL_NAME)
	if errors.Is(err, os.ErrNotExist) {
		return kernelFacts{}, fmt.Errorf("resolve generic netlink family %q: %w", unix.ETHTOOL_GENL_NAME, ErrNotSupported)
	}
	if err != nil {
		return kernelFacts{}, fmt.Errorf("resolve generic netlink family %q: %w", unix.ETHTOOL_GENL_NAME, err)
	}
	req, err := encodeFeatureNamesGet()
	if err != nil {
		return kernelFacts{}, fmt.Errorf("encode feature names request: %w", err)
	}
	msgs, err := execute(c, fam.ID, unix.ETHTOOL_MSG_STRSET_GET, req, netlink.Request)
	if err != nil {
		return kernelFacts{}, fmt.Errorf("read feature names: %w", err)
	}
	names, err := decodeFeatureNames(msgs[0].Data)
	if err != nil {
		return kernelFacts{}, err
	}
	facts = &kernelFacts{family: fam.ID, view: newView(names)}
	return *facts, nil
}

// execute sends one ethtool request and returns its replies; a request
// that expects replies fails if none came.
func execute(c *genetlink.Conn, family uint16, cmd uint8, data []byte, flags netlink.HeaderFlags) ([]genetlink.Message, error) {
	msg := genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: unix.ETHTOOL_GENL_VERSION},
		Data:   data,
	}
	msgs, err := c.Execute(msg, family, flags)
	if err != nil {
		return nil, err
	}
	if flags&netlink.Acknowledge == 0 && len(msgs) == 0 {
		return nil, fmt.Errorf("ethtool command %d: no reply", cmd)
	}
	return msgs, nil
}

// featuresReply returns the raw attributes of the FEATURES_GET reply for dev.
func (c *conn) featuresReply(dev string) ([]byte, error) {
	req, err := encodeFeaturesGet(dev)
	if err != nil {
		return nil, fmt.Errorf("encode features request for %s: %w", dev, err)
	}
	msgs, err := execute(c.c, c.family, unix.ETHTOOL_MSG_FEATURES_GET, req, netlink.Request)
	if err != nil {
		return nil, fmt.Errorf("read features of %s: %w", dev, err)
	}
	return msgs[0].Data, nil
}

// state reads and decodes the feature bitsets of dev.
func (c *conn) state(dev string) (featureState, error) {
	b, err := c.featuresReply(dev)
	if err != nil {
		return featureState{}, err
	}
	s, err := decodeFeatures(b)
	if err != nil {
		return s, fmt.Errorf("read features of %s: %w", dev, err)
	}
	return s, nil
}

// set asks the kernel to set the given feature bits of dev. It does not
// verify the outcome; see setVerified.
func (c *conn) set(dev string, bits map[int]bool) error {
	want := make(map[string]bool, len(bits))
	for i, on := range bits {
		want[c.view.kernel[i]] = on
	}
	req, err := encodeFeaturesSet(dev, want)
	if err != nil {
		return fmt.Errorf("encode features request for %s: %w", dev, err)
	}
	_, err = execute(c.c, c.family, unix.ETHTOOL_MSG_FEATURES_SET, req, netlink.Request|netlink.Acknowledge)
	if err != nil {
		return fmt.Errorf("set features of %s: %w", dev, err)
	}
	return nil
}
