package method

import (
	"net/netip"
	"testing"
)

// TestParseSockets reads the four kinds of /proc/net lines: a TCP
// listener, a TCP connection (left out), an unconnected UDP socket and a
// connected one (left out), in IPv4 and IPv6.
func TestParseSockets(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 020012C6:04AA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 020012C6:04AA 010012C6:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
`
	udp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 00000000000000000000000000000000:CA6C 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3 2 0000000000000000 0
  2: 00000220000000000000000002000000:1194 00000220000000000000000001000000:1194 01 00000000:00000000 00:00000000 00000000     0        0 4 2 0000000000000000 0
`
	got, err := ParseSockets([]byte(tcp), "tcp")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].String() != "tcp 198.18.0.2:1194" {
		t.Errorf("tcp: got %v, want [tcp 198.18.0.2:1194]", got)
	}
	got, err = ParseSockets([]byte(udp6), "udp")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].String() != "udp [::]:51820" {
		t.Errorf("udp6: got %v, want [udp [::]:51820]", got)
	}
	if _, err := ParseSockets([]byte("h\n 0: zz:1 00000000:0000 07\n"), "udp"); err == nil {
		t.Error("a bad address parsed")
	}
}

// TestListenMatches: a socket on the wildcard address is not one declared
// on the underlay address, and port 0 declares any port.
func TestListenMatches(t *testing.T) {
	under, over := netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.19.0.2")
	s := func(a string) Socket { return Socket{Proto: "udp", Local: netip.MustParseAddrPort(a)} }
	for _, tc := range []struct {
		l    Listen
		s    Socket
		want bool
	}{
		{Listen{Proto: "udp", Port: 1194, Addr: ListenUnderlay}, s("198.18.0.2:1194"), true},
		{Listen{Proto: "udp", Port: 1194, Addr: ListenUnderlay}, s("0.0.0.0:1194"), false},
		{Listen{Proto: "udp", Port: 1194, Addr: ListenUnderlay}, s("198.18.0.2:1195"), false},
		{Listen{Proto: "tcp", Port: 1194, Addr: ListenUnderlay}, s("198.18.0.2:1194"), false},
		{Listen{Proto: "udp", Addr: ListenUnderlay}, s("198.18.0.2:40000"), true},
		{Listen{Proto: "udp", Port: 7, Addr: ListenOverlay}, s("198.19.0.2:7"), true},
		{Listen{Proto: "udp", Port: 7, Addr: ListenOverlay}, s("198.18.0.2:7"), false},
		{Listen{Proto: "udp", Addr: ListenLoopback}, s("127.0.0.1:9"), true},
		{Listen{Proto: "udp", Port: 51820, Addr: ListenWildcard}, s("[::]:51820"), true},
		{Listen{Proto: "udp", Port: 51820, Addr: ListenWildcard}, s("198.18.0.2:51820"), false},
	} {
		if got := tc.l.Matches(tc.s, under, over); got != tc.want {
			t.Errorf("%+v matches %v: %v, want %v", tc.l, tc.s, got, tc.want)
		}
	}
}
