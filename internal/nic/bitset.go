package nic

import (
	"errors"
	"fmt"
	"sort"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ethSSFeatures is ETH_SS_FEATURES of enum ethtool_stringset: the string
// set that names the bits of the netdev feature bitsets.
const ethSSFeatures = 4

// bit is one entry of a verbose ethtool bitset.
type bit struct {
	index int // -1 when only named
	name  string
	value bool // ETHTOOL_A_BITSET_BIT_VALUE present
}

// bitset is a decoded verbose ethtool bitset (ETHTOOL_A_BITSET_*).
type bitset struct {
	size   int
	nomask bool // listed bits are the set bits, VALUE flags are absent
	bits   []bit
}

// isSet reports whether bit i is set. With a mask, the listed bits are the
// mask and the VALUE flag carries the value; without one, listing means set.
func (b bitset) isSet(i int) bool {
	for _, x := range b.bits {
		if x.index == i {
			return b.nomask || x.value
		}
	}
	return false
}

// featureState is one decoded ETHTOOL_MSG_FEATURES_GET reply.
type featureState struct {
	dev      string
	hw       bitset // changeable by the user
	wanted   bitset // requested by the user
	active   bitset // in effect
	nochange bitset // never changeable
}

// fixed reports what `ethtool -k` marks "[fixed]": a feature the device
// cannot change.
func (s featureState) fixed(i int) bool {
	return !s.hw.isSet(i) || s.nochange.isSet(i)
}

// decodeBitset decodes the attributes nested in a verbose bitset.
func decodeBitset(b []byte) (bitset, error) {
	var bs bitset
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return bs, err
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_BITSET_NOMASK:
			bs.nomask = true
		case unix.ETHTOOL_A_BITSET_SIZE:
			bs.size = int(ad.Uint32())
		case unix.ETHTOOL_A_BITSET_BITS:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() != unix.ETHTOOL_A_BITSET_BITS_BIT {
						continue
					}
					nad.Nested(func(bad *netlink.AttributeDecoder) error {
						x, err := decodeBit(bad)
						bs.bits = append(bs.bits, x)
						return err
					})
				}
				return nil
			})
		case unix.ETHTOOL_A_BITSET_VALUE, unix.ETHTOOL_A_BITSET_MASK:
			return bs, errors.New("compact bitset in reply to a verbose request")
		}
	}
	if err := ad.Err(); err != nil {
		return bs, err
	}
	return bs, nil
}

func decodeBit(ad *netlink.AttributeDecoder) (bit, error) {
	x := bit{index: -1}
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_BITSET_BIT_INDEX:
			x.index = int(ad.Uint32())
		case unix.ETHTOOL_A_BITSET_BIT_NAME:
			x.name = ad.String()
		case unix.ETHTOOL_A_BITSET_BIT_VALUE:
			x.value = true
		}
	}
	// Replies always carry the index; requests may name the bit instead.
	if x.index < 0 && x.name == "" && ad.Err() == nil {
		return x, errors.New("bitset bit without index or name")
	}
	return x, ad.Err()
}

// decodeFeatures decodes the attributes of an ETHTOOL_MSG_FEATURES_GET_REPLY.
func decodeFeatures(b []byte) (featureState, error) {
	var s featureState
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return s, fmt.Errorf("decode features reply: %w", err)
	}
	seen := 0
	for ad.Next() {
		var dst *bitset
		switch ad.Type() {
		case unix.ETHTOOL_A_FEATURES_HEADER:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() == unix.ETHTOOL_A_HEADER_DEV_NAME {
						s.dev = nad.String()
					}
				}
				return nil
			})
			continue
		case unix.ETHTOOL_A_FEATURES_HW:
			dst = &s.hw
		case unix.ETHTOOL_A_FEATURES_WANTED:
			dst = &s.wanted
		case unix.ETHTOOL_A_FEATURES_ACTIVE:
			dst = &s.active
		case unix.ETHTOOL_A_FEATURES_NOCHANGE:
			dst = &s.nochange
		default:
			continue
		}
		seen++
		ad.Do(func(b []byte) error {
			bs, err := decodeBitset(b)
			*dst = bs
			return err
		})
	}
	if err := ad.Err(); err != nil {
		return s, fmt.Errorf("decode features reply: %w", err)
	}
	if seen != 4 {
		return s, fmt.Errorf("decode features reply: %d of 4 bitsets present", seen)
	}
	return s, nil
}

// decodeFeatureNames decodes an ETHTOOL_MSG_STRSET_GET_REPLY holding the
// ETH_SS_FEATURES string set into names indexed by feature bit.
func decodeFeatureNames(b []byte) ([]string, error) {
	var (
		names []string
		found bool
	)
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("decode string set reply: %w", err)
	}
	for ad.Next() {
		if ad.Type() != unix.ETHTOOL_A_STRSET_STRINGSETS {
			continue
		}
		ad.Nested(func(sets *netlink.AttributeDecoder) error {
			for sets.Next() {
				if sets.Type() != unix.ETHTOOL_A_STRINGSETS_STRINGSET {
					continue
				}
				sets.Nested(func(set *netlink.AttributeDecoder) error {
					id, count, strs, err := decodeStringSet(set)
					if err == nil && id == ethSSFeatures {
						found = true
						names = make([]string, count)
						for i, s := range strs {
							if i >= count {
								return fmt.Errorf("string index %d beyond count %d", i, count)
							}
							names[i] = s
						}
					}
					return err
				})
			}
			return nil
		})
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("decode string set reply: %w", err)
	}
	if !found {
		return nil, errors.New("decode string set reply: no feature string set")
	}
	return names, nil
}

func decodeStringSet(ad *netlink.AttributeDecoder) (id, count int, strs map[int]string, err error) {
	strs = map[int]string{}
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_STRINGSET_ID:
			id = int(ad.Uint32())
		case unix.ETHTOOL_A_STRINGSET_COUNT:
			count = int(ad.Uint32())
		case unix.ETHTOOL_A_STRINGSET_STRINGS:
			ad.Nested(func(ss *netlink.AttributeDecoder) error {
				for ss.Next() {
					if ss.Type() != unix.ETHTOOL_A_STRINGS_STRING {
						continue
					}
					ss.Nested(func(s *netlink.AttributeDecoder) error {
						idx, val := -1, ""
						for s.Next() {
							switch s.Type() {
							case unix.ETHTOOL_A_STRING_INDEX:
								idx = int(s.Uint32())
							case unix.ETHTOOL_A_STRING_VALUE:
								val = s.String()
							}
						}
						if idx >= 0 {
							strs[idx] = val
						}
						return nil
					})
				}
				return nil
			})
		}
	}
	return id, count, strs, ad.Err()
}

// encodeHeader encodes an ETHTOOL_A_HEADER_* nest naming dev.
func encodeHeader(ae *netlink.AttributeEncoder, typ uint16, dev string, flags uint32) {
	ae.Nested(typ, func(nae *netlink.AttributeEncoder) error {
		nae.String(unix.ETHTOOL_A_HEADER_DEV_NAME, dev)
		if flags != 0 {
			nae.Uint32(unix.ETHTOOL_A_HEADER_FLAGS, flags)
		}
		return nil
	})
}

// encodeFeaturesGet encodes an ETHTOOL_MSG_FEATURES_GET request for dev.
// No ETHTOOL_FLAG_COMPACT_BITSETS: the reply is verbose and carries names.
func encodeFeaturesGet(dev string) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_FEATURES_HEADER, dev, 0)
	return ae.Encode()
}

// encodeFeatureNamesGet encodes an ETHTOOL_MSG_STRSET_GET request for the
// global (device independent) feature names. The header names no device
// but must be present: without it the kernel answers EINVAL.
func encodeFeatureNamesGet() ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(unix.ETHTOOL_A_STRSET_HEADER, func(*netlink.AttributeEncoder) error { return nil })
	ae.Nested(unix.ETHTOOL_A_STRSET_STRINGSETS, func(sets *netlink.AttributeEncoder) error {
		sets.Nested(unix.ETHTOOL_A_STRINGSETS_STRINGSET, func(set *netlink.AttributeEncoder) error {
			set.Uint32(unix.ETHTOOL_A_STRINGSET_ID, ethSSFeatures)
			return nil
		})
		return nil
	})
	return ae.Encode()
}

// encodeFeaturesSet encodes an ETHTOOL_MSG_FEATURES_SET request that sets
// the kernel-named features in want on dev: a verbose WANTED bitset with a
// mask (the listed bits), each bit named and carrying VALUE when on. Bits
// are sorted by name so the request is deterministic.
func encodeFeaturesSet(dev string, want map[string]bool) ([]byte, error) {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_FEATURES_HEADER, dev, unix.ETHTOOL_FLAG_OMIT_REPLY)
	ae.Nested(unix.ETHTOOL_A_FEATURES_WANTED, func(bs *netlink.AttributeEncoder) error {
		bs.Nested(unix.ETHTOOL_A_BITSET_BITS, func(bits *netlink.AttributeEncoder) error {
			for _, n := range names {
				bits.Nested(unix.ETHTOOL_A_BITSET_BITS_BIT, func(b *netlink.AttributeEncoder) error {
					b.String(unix.ETHTOOL_A_BITSET_BIT_NAME, n)
					if want[n] {
						b.Flag(unix.ETHTOOL_A_BITSET_BIT_VALUE, true)
					}
					return nil
				})
			}
			return nil
		})
		return nil
	})
	return ae.Encode()
}
