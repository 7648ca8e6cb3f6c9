package openvpn

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// OpenVPNStatus is the content of an OpenVPN status file (--status FILE
// N): either a server's, in --status-version 2 (comma-separated) or 3
// (tab-separated) format, which lists the connected clients; or a
// client's, which holds only traffic counters ("OpenVPN STATISTICS").
type OpenVPNStatus struct {
	// Server is true for a server's client list.
	Server bool
	// Title is the server's TITLE line (version and build flags).
	Title string
	// Updated is when OpenVPN wrote the file.
	Updated time.Time
	// Clients are the connected clients (server only).
	Clients []OpenVPNClient
	// Global holds the server's GLOBAL_STATS, e.g. "dco_enabled": "0".
	Global map[string]string
	// Stats holds a client's counters by name, e.g. "TCP/UDP write
	// bytes" (see the OpenVPNStat* constants).
	Stats map[string]int64
}

// Names of a client's counters in OpenVPNStatus.Stats.
const (
	OpenVPNStatTunRead   = "TUN/TAP read bytes"
	OpenVPNStatTunWrite  = "TUN/TAP write bytes"
	OpenVPNStatLinkRead  = "TCP/UDP read bytes"
	OpenVPNStatLinkWrite = "TCP/UDP write bytes"
)

// OpenVPNClient is one CLIENT_LIST row of a server's status.
type OpenVPNClient struct {
	CommonName string
	// RealAddress is the client's underlay address as OpenVPN prints it
	// ("198.18.0.1:55655"; IPv6 addresses come without the port).
	RealAddress string
	// VirtualAddress and VirtualIPv6 are its overlay addresses (zero when
	// none).
	VirtualAddress, VirtualIPv6 netip.Addr
	BytesReceived, BytesSent    int64
	ConnectedSince              time.Time
	// PeerID is the peer id carried in every P_DATA_V2 packet.
	PeerID int
	// Cipher is the negotiated data channel cipher, e.g. "AES-256-GCM".
	Cipher string
}

// ParseOpenVPNStatus parses a status file. A file without its END line
// (read while OpenVPN rewrote it) is an error, as is status version 1.
// Errors name the line number.
func ParseOpenVPNStatus(data []byte) (*OpenVPNStatus, error) {
	text := strings.TrimRight(string(data), "\n")
	if text == "" {
		return nil, errors.New("openvpn status: empty")
	}
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r")
	}
	if lines[len(lines)-1] != "END" {
		return nil, errors.New("openvpn status: no END line (truncated)")
	}
	lines = lines[:len(lines)-1]
	if len(lines) == 0 {
		return nil, errors.New("openvpn status: nothing before the END line")
	}
	switch {
	case lines[0] == "OpenVPN STATISTICS":
		return parseOVPNStatistics(lines)
	case strings.HasPrefix(lines[0], "TITLE,"):
		return parseOVPNServerStatus(lines, ",")
	case strings.HasPrefix(lines[0], "TITLE\t"):
		return parseOVPNServerStatus(lines, "\t")
	case lines[0] == "OpenVPN CLIENT LIST":
		return nil, errors.New("openvpn status: version 1 is not supported (use --status-version 2)")
	}
	return nil, fmt.Errorf("openvpn status: line 1: unknown format %q", trimForError(lines[0]))
}

func trimForError(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// ovpnStatusTime is the layout of the human-readable times.
const ovpnStatusTime = "2006-01-02 15:04:05"

// parseOVPNStatistics parses a client's (or a peer-to-peer instance's)
// counters: "Updated,<local time>" then "<name>,<count>" lines.
func parseOVPNStatistics(lines []string) (*OpenVPNStatus, error) {
	st := &OpenVPNStatus{Stats: map[string]int64{}}
	for i, l := range lines[1:] {
		n := i + 2
		name, v, ok := strings.Cut(l, ",")
		if !ok {
			return nil, fmt.Errorf("openvpn status: line %d: no comma", n)
		}
		if name == "Updated" {
			t, err := time.ParseInLocation(ovpnStatusTime, v, time.Local)
			if err != nil {
				return nil, fmt.Errorf("openvpn status: line %d: bad time: %w", n, err)
			}
			st.Updated = t
			continue
		}
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("openvpn status: line %d: bad %s: %w", n, name, err)
		}
		st.Stats[name] = c
	}
	return st, nil
}

// parseOVPNServerStatus parses --status-version 2 (sep ",") or 3 (sep
// "\t"). Columns are found by their HEADER names, so that columns added
// by later releases do not break it.
func parseOVPNServerStatus(lines []string, sep string) (*OpenVPNStatus, error) {
	st := &OpenVPNStatus{Server: true, Global: map[string]string{}}
	var cols map[string]int
	for i, l := range lines {
		n := i + 1
		f := strings.Split(l, sep)
		switch f[0] {
		case "TITLE":
			st.Title = strings.Join(f[1:], sep)
		case "TIME":
			if len(f) < 3 {
				return nil, fmt.Errorf("openvpn status: line %d: TIME has %d fields, want 3", n, len(f))
			}
			sec, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("openvpn status: line %d: bad TIME time_t: %w", n, err)
			}
			st.Updated = time.Unix(sec, 0)
		case "HEADER":
			if len(f) > 1 && f[1] == "CLIENT_LIST" {
				cols = map[string]int{}
				for j, name := range f[2:] {
					cols[name] = j + 1
				}
				for _, need := range []string{"Common Name", "Bytes Received", "Bytes Sent"} {
					if _, ok := cols[need]; !ok {
						return nil, fmt.Errorf("openvpn status: line %d: CLIENT_LIST header lacks %q", n, need)
					}
				}
			}
		case "CLIENT_LIST":
			if cols == nil {
				return nil, fmt.Errorf("openvpn status: line %d: CLIENT_LIST before its HEADER", n)
			}
			c, err := parseOVPNClient(f, cols)
			if err != nil {
				return nil, fmt.Errorf("openvpn status: line %d: %w", n, err)
			}
			st.Clients = append(st.Clients, c)
		case "GLOBAL_STATS":
			if len(f) != 3 {
				return nil, fmt.Errorf("openvpn status: line %d: GLOBAL_STATS has %d fields, want 3", n, len(f))
			}
			st.Global[f[1]] = f[2]
		case "ROUTING_TABLE":
			// The client's virtual addresses are in CLIENT_LIST already.
		default:
			return nil, fmt.Errorf("openvpn status: line %d: unknown row type %q", n, trimForError(f[0]))
		}
	}
	return st, nil
}

// parseOVPNClient reads one CLIENT_LIST row; cols maps header names to
// field indexes.
func parseOVPNClient(f []string, cols map[string]int) (OpenVPNClient, error) {
	get := func(name string) string {
		if j, ok := cols[name]; ok && j < len(f) {
			return f[j]
		}
		return ""
	}
	if len(f) < len(cols)+1 {
		return OpenVPNClient{}, fmt.Errorf("CLIENT_LIST has %d fields, its header %d", len(f), len(cols)+1)
	}
	c := OpenVPNClient{CommonName: get("Common Name"), RealAddress: get("Real Address"), Cipher: get("Data Channel Cipher")}
	var err error
	bad := func(what string, err error) error { return fmt.Errorf("bad %s: %w", what, err) }
	if c.BytesReceived, err = strconv.ParseInt(get("Bytes Received"), 10, 64); err != nil {
		return c, bad("Bytes Received", err)
	}
	if c.BytesSent, err = strconv.ParseInt(get("Bytes Sent"), 10, 64); err != nil {
		return c, bad("Bytes Sent", err)
	}
	for _, a := range []struct {
		col string
		dst *netip.Addr
	}{{"Virtual Address", &c.VirtualAddress}, {"Virtual IPv6 Address", &c.VirtualIPv6}} {
		if v := get(a.col); v != "" {
			if *a.dst, err = netip.ParseAddr(v); err != nil {
				return c, bad(a.col, err)
			}
		}
	}
	if v := get("Connected Since (time_t)"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, bad("Connected Since (time_t)", err)
		}
		c.ConnectedSince = time.Unix(sec, 0)
	}
	if v := get("Peer ID"); v != "" {
		if c.PeerID, err = strconv.Atoi(v); err != nil {
			return c, bad("Peer ID", err)
		}
	}
	return c, nil
}
