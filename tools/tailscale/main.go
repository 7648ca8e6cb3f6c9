// Command tunbench-tscontrol is the Tailscale control server the
// tunbench "tailscale" method starts for one run: Tailscale's own test
// control server (tailscale.com/tstest/integration/testcontrol) with an
// in-process DERP relay (tailscale.com/derp/derpserver, over TLS with a
// self-signed certificate the nodes are told to accept) and a STUN
// listener, all on one address, so that nothing of the run leaves the
// machines it runs on.
//
// Usage:
//
//	tunbench-tscontrol -listen ADDR -dir DIR -node NAME=PREFIX -node NAME=PREFIX
//
// DIR holds the run's auth key in the file "authkey" (0600): only nodes
// presenting it may register. Each -node gives the overlay address the
// node whose hostname is NAME gets (the test server's own 100.64.0.0/10
// addresses are replaced, in the node's own view and in its peers', so
// that the overlay uses the addresses the caller chose). Once its three
// listeners are up it writes DIR/ready.json with the control URL, the
// DERP (TCP) and STUN (UDP) ports. It runs until SIGTERM or SIGINT,
// closes everything and exits 0. It logs to stderr, never the auth key
// or node keys.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"tailscale.com/derp/derpserver"
	"tailscale.com/net/stun"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/key"
)

// Ready is the content of DIR/ready.json.
type Ready struct {
	Control  string `json:"control"`   // base URL of the control server
	DERPPort int    `json:"derp_port"` // TLS
	STUNPort int    `json:"stun_port"`
}

type nodeFlags map[string]netip.Prefix

func (n nodeFlags) String() string { return fmt.Sprint(map[string]netip.Prefix(n)) }

func (n nodeFlags) Set(v string) error {
	name, p, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=PREFIX, got %q", v)
	}
	pfx, err := netip.ParsePrefix(p)
	if err != nil {
		return err
	}
	n[name] = pfx
	return nil
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	listen := flag.String("listen", "", "address to listen on (control, DERP and STUN)")
	dir := flag.String("dir", "", "directory holding authkey; ready.json is written there")
	nodes := nodeFlags{}
	flag.Var(nodes, "node", "NAME=PREFIX: the overlay address of the node with hostname NAME (repeatable)")
	flag.Parse()
	if err := run(*listen, *dir, nodes); err != nil {
		log.Fatalf("tunbench-tscontrol: %v", err)
	}
}

func run(listen, dir string, nodes nodeFlags) error {
	addr, err := netip.ParseAddr(listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	if dir == "" || len(nodes) == 0 {
		return errors.New("-dir and -node are required")
	}
	authKey, err := os.ReadFile(filepath.Join(dir, "authkey"))
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(authKey))) < 16 {
		return errors.New("authkey: too short")
	}

	// The run's CA and the servers' certificate for addr: the nodes
	// trust the CA (SSL_CERT_FILE), so that the control server is
	// reached over HTTPS at addr's own port, never at port 443, and the
	// DERP server likewise.
	caPEM, cert, err := certificate(addr)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), caPEM, 0o644); err != nil {
		return err
	}

	// STUN.
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return err
	}
	defer pc.Close()
	go serveSTUN(pc)

	// DERP over TLS.
	d := derpserver.New(key.NewNode(), log.Printf)
	defer d.Close()
	derpMux := http.NewServeMux()
	derpMux.Handle("/derp", derpserver.Handler(d))
	derpMux.HandleFunc("/derp/probe", derpserver.ProbeHandler)
	derpMux.HandleFunc("/derp/latency-check", derpserver.ProbeHandler)
	derpMux.HandleFunc("/generate_204", derpserver.ServeNoContent)
	dln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return err
	}
	derpSrv := serveTLS(dln, derpMux, cert)
	defer derpSrv.Close()
	derpPort := dln.Addr().(*net.TCPAddr).Port
	stunPort := pc.LocalAddr().(*net.UDPAddr).Port

	dn := &tailcfg.DERPNode{
		Name: "1a", RegionID: 1, HostName: addr.String(),
		STUNPort: stunPort, DERPPort: derpPort, InsecureForTests: true, STUNTestIP: addr.String(),
	}
	if addr.Is4() {
		dn.IPv4, dn.IPv6 = addr.String(), "none"
	} else {
		dn.IPv4, dn.IPv6 = "none", addr.String()
	}
	derpMap := &tailcfg.DERPMap{
		OmitDefaultRegions: true,
		Regions: map[int]*tailcfg.DERPRegion{1: {
			RegionID: 1, RegionCode: "tunbench", RegionName: "tunbench", Nodes: []*tailcfg.DERPNode{dn},
		}},
	}

	// Control.
	cln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		return err
	}
	ctrlURL := "https://" + cln.Addr().String()
	ctrl := &testcontrol.Server{
		Logf:             log.Printf,
		DERPMap:          derpMap,
		RequireAuthKey:   strings.TrimSpace(string(authKey)),
		ExplicitBaseURL:  ctrlURL,
		AllNodesSameUser: true,
		AllOnline:        true,
	}
	m := &mapper{s: ctrl, addrs: nodes, family: addr, changed: make(chan struct{})}
	ctrl.AltMapStream = m.stream
	ctrlSrv := serveTLS(cln, known(ctrl), cert)
	ready, err := json.Marshal(Ready{Control: ctrlURL, DERPPort: derpPort, STUNPort: stunPort})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "ready.json.tmp")
	if err := os.WriteFile(tmp, append(ready, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "ready.json")); err != nil {
		return err
	}
	log.Printf("control %s, DERP https://%s, STUN %s", ctrlURL, dln.Addr(), pc.LocalAddr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	log.Printf("%v: shutting down", s)
	_ = ctrlSrv.Close()
	_ = derpSrv.Close()
	return nil
}

// serveTLS serves h on ln over TLS with cert, HTTP/1.1 only (the
// control protocol and DERP upgrade the connection), until closed.
func serveTLS(ln net.Listener, h http.Handler, cert tls.Certificate) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ErrorLog:          log.Default(),
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("serve %s: %v", ln.Addr(), err)
		}
	}()
	return srv
}

// certificate makes a CA for this run, valid two days, and a server
// certificate for addr signed by it. It returns the CA's certificate
// (PEM) and the server's key pair; the CA's key is dropped.
func certificate(addr netip.Addr) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tunbench-tscontrol CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(48 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: addr.String()},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(48 * time.Hour),
		IPAddresses:  []net.IP{addr.AsSlice()},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}, nil
}

// known passes the paths the test control server serves to it and
// answers 404 to any other: the server panics on requests it does not
// know.
func known(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/key", p == "/ts2021", p == "/generate_204",
			strings.HasPrefix(p, "/machine/"), strings.HasPrefix(p, "/c2n/"):
			h.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// serveSTUN answers STUN binding requests on pc until it is closed.
func serveSTUN(pc *net.UDPConn) {
	buf := make([]byte, 64<<10)
	for {
		n, src, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		pkt := buf[:n]
		if !stun.Is(pkt) {
			continue
		}
		txid, err := stun.ParseBindingRequest(pkt)
		if err != nil {
			continue
		}
		src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
		if _, err := pc.WriteToUDPAddrPort(stun.Response(txid, src), src); err != nil {
			log.Printf("STUN reply to %v: %v", src, err)
		}
	}
}

// mapper serves the map stream in place of the test control server's
// own (Server.AltMapStream), doing what it does (record each node's
// endpoints, disco key and home DERP from its non-streaming updates,
// send every streaming client a new map on any change, keep-alives in
// between) but with the overlay addresses of -node in place of the
// server's 100.64.0.0/10 ones.
type mapper struct {
	s     *testcontrol.Server
	addrs nodeFlags
	// family is the listen address's: the only family of the nodes'
	// endpoints passed on.
	family netip.Addr

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

func (m *mapper) notify() {
	m.mu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

func (m *mapper) current() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// endpoints keeps the endpoints of m's family that are not overlay
// addresses: the direct path is between the underlay addresses of the
// run's family, never through the other family or the tunnel itself.
func (m *mapper) endpoints(eps []netip.AddrPort) []netip.AddrPort {
	var out []netip.AddrPort
	for _, ep := range eps {
		a := ep.Addr().Unmap()
		if a.Is4() != m.family.Is4() {
			continue
		}
		overlay := false
		for _, p := range m.addrs {
			overlay = overlay || p.Contains(a)
		}
		if !overlay {
			out = append(out, ep)
		}
	}
	return out
}

// readdress gives n the overlay address of its hostname, if -node names
// it.
func (m *mapper) readdress(n *tailcfg.Node) {
	if n == nil || !n.Hostinfo.Valid() {
		return
	}
	p, ok := m.addrs[n.Hostinfo.Hostname()]
	if !ok {
		return
	}
	n.Addresses = []netip.Prefix{p}
	n.AllowedIPs = []netip.Prefix{p}
}

const keepAlive = 30 * time.Second

func (m *mapper) stream(ctx context.Context, w testcontrol.MapStreamWriter, req *tailcfg.MapRequest) {
	node := m.s.Node(req.NodeKey)
	if node == nil {
		return
	}
	// As testcontrol's own serveMap: a streaming request of a modern
	// client (capability version 68 and later, which never sets the
	// deprecated ReadOnly) is read-only; the others carry the node's state.
	if !req.Stream || req.Version < 68 {
		node.Endpoints = m.endpoints(req.Endpoints)
		node.DiscoKey = req.DiscoKey
		node.Cap = req.Version
		if req.Hostinfo != nil {
			hi := req.Hostinfo.View()
			node.Hostinfo = hi
			if ni := hi.NetInfo(); ni.Valid() && ni.PreferredDERP() != 0 {
				node.HomeDERP = ni.PreferredDERP()
			}
		}
		m.s.UpdateNode(node)
		m.notify()
	}
	for {
		changed := m.current()
		res, err := m.s.MapResponse(req)
		if err != nil || res == nil {
			return
		}
		m.readdress(res.Node)
		for _, p := range res.Peers {
			m.readdress(p)
		}
		if err := w.SendMapMessage(res); err != nil {
			return
		}
		if !req.Stream {
			return
		}
	wait:
		for {
			t := time.NewTimer(keepAlive)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-changed:
				t.Stop()
				break wait
			case <-t.C:
				if err := w.SendMapMessage(&tailcfg.MapResponse{KeepAlive: true}); err != nil {
					return
				}
			}
		}
	}
}
