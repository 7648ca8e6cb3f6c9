package nic

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netns"
)

// FeatureError reports a feature that did not take the requested value.
type FeatureError struct {
	Dev     string
	Feature string // as `ethtool -k` names it
	Want    bool
	// Fixed is true when the device cannot change the feature at all
	// ("[fixed]" in `ethtool -k`); otherwise the kernel or driver refused
	// the value, typically because another feature it depends on is off.
	Fixed bool
}

func (e *FeatureError) Error() string {
	if e.Fixed {
		return fmt.Sprintf("feature %s is fixed %s on dev %s", e.Feature, onOff(!e.Want), e.Dev)
	}
	return fmt.Sprintf("feature %s on dev %s stayed %s (requested %s)", e.Feature, e.Dev, onOff(!e.Want), onOff(e.Want))
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Features returns the active state of every feature of dev in ns, keyed
// as `ethtool -k dev` prints them (see the package doc), true for "on".
func Features(ns netns.NsHandle, dev string) (map[string]bool, error) {
	c, err := dial(ns)
	if err != nil {
		return nil, err
	}
	defer c.close()
	return c.features(dev)
}

func (c *conn) features(dev string) (map[string]bool, error) {
	s, err := c.state(dev)
	if err != nil {
		return nil, err
	}
	return c.view.render(s.active), nil
}

// SetFeatures sets features of dev in ns, like `ethtool -K dev NAME on|off
// ...`. Names are those of Features, kernel feature names, or ethtool's
// legacy short names ("tso", "gso", "gro", "lro", "sg", "tx", "rx", ...);
// an aggregate or legacy name stands for all its member features. It then
// re-reads the device and returns the *FeatureError of every feature that
// is not in the requested state, joined with errors.Join.
func SetFeatures(ns netns.NsHandle, dev string, want map[string]bool) error {
	if len(want) == 0 {
		return nil
	}
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.close()
	bits, err := c.view.resolve(want)
	if err != nil {
		return fmt.Errorf("set features of %s: %w", dev, err)
	}
	return c.setVerified(dev, bits)
}

// offloadTSO matches the kernel features behind `ethtool -K dev tso X`.
const offloadTSO = "tx-tcp*-segmentation"

// offloadRequired must take the requested value for SetOffloads to succeed;
// the other members of the TSO family are skipped where the device fixes
// them (tx-tcp-ecn-segmentation is fixed off on many NICs).
var offloadRequired = []string{"tx-tcp-segmentation", "tx-generic-segmentation", "rx-gro"}

// SetOffloads switches TSO, GSO and GRO of dev in ns on or off, the switch
// of `ethtool -K dev tso off gso off gro off`. It sets tx-tcp-segmentation,
// tx-generic-segmentation (generic-segmentation-offload) and rx-gro
// (generic-receive-offload), and every other tx-tcp*-segmentation feature
// the device can change. It fails with a *FeatureError if one of the three
// did not take the value.
func SetOffloads(ns netns.NsHandle, dev string, on bool) error {
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.close()
	s, err := c.state(dev)
	if err != nil {
		return err
	}
	bits := map[int]bool{}
	for i, name := range c.view.kernel {
		if name != "" && patternMatch(name, offloadTSO) && !s.fixed(i) {
			bits[i] = on
		}
		for _, r := range offloadRequired {
			if name == r {
				bits[i] = on
			}
		}
	}
	if len(bits) == 0 {
		return fmt.Errorf("set offloads of %s: kernel names none of %v", dev, offloadRequired)
	}
	return c.setVerified(dev, bits)
}

// setVerified sets bits on dev, re-reads the device and reports every bit
// whose active state differs from the request.
func (c *conn) setVerified(dev string, bits map[int]bool) error {
	if err := c.set(dev, bits); err != nil {
		return err
	}
	s, err := c.state(dev)
	if err != nil {
		return err
	}
	var errs []error
	for i := range c.view.kernel {
		want, ok := bits[i]
		if !ok || s.active.isSet(i) == want {
			continue
		}
		name := c.view.display[i]
		if name == "" {
			name = c.view.kernel[i]
		}
		errs = append(errs, &FeatureError{Dev: dev, Feature: name, Want: want, Fixed: s.fixed(i)})
	}
	if len(errs) > 0 {
		return fmt.Errorf("set features of %s: %w", dev, errors.Join(errs...))
	}
	return nil
}

// RestoreFeatures puts dev in ns back to want, a map Features returned
// earlier: every feature whose active state differs is set to its
// recorded value in one request (aggregate lines, derived from their
// members, are skipped), and the device is re-read. It returns the names
// of the features it changed, and a *FeatureError (joined) for each that
// did not go back.
func RestoreFeatures(ns netns.NsHandle, dev string, want map[string]bool) ([]string, error) {
	c, err := dial(ns)
	if err != nil {
		return nil, err
	}
	defer c.close()
	s, err := c.state(dev)
	if err != nil {
		return nil, err
	}
	bits := map[int]bool{}
	var changed []string
	for i, name := range c.view.display {
		on, ok := want[name]
		if name == "" || !ok || s.active.isSet(i) == on {
			continue
		}
		bits[i] = on
		changed = append(changed, name)
	}
	if len(bits) == 0 {
		return nil, nil
	}
	return changed, c.setVerified(dev, bits)
}
