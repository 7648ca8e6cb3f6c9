package kubetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// proxy is an HTTP CONNECT proxy on the machine's loopback that dials the
// cluster's addresses from inside the control namespace. client-go's
// WebSocket executor (exec, attach, port-forward over WebSocket) ignores
// rest.Config.Dial but honours rest.Config.Proxy, so RestConfig sends
// everything through this proxy.
type proxy struct {
	ln   net.Listener
	srv  *http.Server
	url  *url.URL
	wg   sync.WaitGroup
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// underlay is the network the proxy connects to: the apiserver and the
// kubelets.
var underlay = netip.MustParsePrefix("198.19.200.0/24")

func startProxy(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &proxy{ln: ln, dial: dial, url: &url.URL{Scheme: "http", Host: ln.Addr().String()}}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	ap, err := netip.ParseAddrPort(r.Host)
	if err != nil || !underlay.Contains(ap.Addr()) {
		http.Error(w, "not a cluster address: "+r.Host, http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	upstream, err := p.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		upstream.Close()
		return
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		if n := buf.Reader.Buffered(); n > 0 {
			data, _ := buf.Reader.Peek(n)
			_, _ = upstream.Write(data)
		}
		_, _ = io.Copy(upstream, conn)
		if tc, ok := upstream.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
		upstream.Close()
	}()
}

// close stops the proxy and its connections.
func (p *proxy) close() {
	if p == nil {
		return
	}
	_ = p.srv.Close()
	p.ln.Close()
}
