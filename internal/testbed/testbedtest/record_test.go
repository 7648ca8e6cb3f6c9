package testbedtest_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
)

// opUnanswered is an op no test answers.
var opUnanswered = testbed.NewOp("testbedtest.unanswered", func(context.Context, *testbed.Endpoint, string) (struct{}, error) {
	return struct{}{}, nil
})

// TestRecorder drives a recording endpoint through netlink, files and
// commands and checks the lines it records and the state it answers
// lookups from.
func TestRecorder(t *testing.T) {
	t.Parallel()
	ep, r := testbedtest.NewRecordingEndpoint("a", "veth0")
	if ep.Local() || ep.Addr4 != localns.UnderlayA4 || ep.Dir != testbedtest.RecordDir {
		t.Fatalf("endpoint local %v, addr %s, dir %s", ep.Local(), ep.Addr4, ep.Dir)
	}
	if _, err := ep.NL.LinkByName("tb-x"); !testbed.IsLinkNotFound(err) {
		t.Fatalf("LinkByName of a missing link: %v, want link not found", err)
	}
	under, err := ep.NL.LinkByName("veth0")
	if err != nil {
		t.Fatal(err)
	}
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "tb-vx"}, VxlanId: 7, VtepDevIndex: under.Attrs().Index, Port: 4789, TTL: 64,
		SrcAddr: net.ParseIP("198.18.0.1"), Group: net.ParseIP("198.18.0.2")}
	if err := ep.NL.LinkAdd(vx); err != nil {
		t.Fatal(err)
	}
	if err := ep.NL.LinkAdd(vx); err == nil {
		t.Error("a second LinkAdd of tb-vx succeeded")
	}
	link, err := ep.NL.LinkByName("tb-vx")
	if err != nil {
		t.Fatalf("LinkByName of an added link: %v", err)
	}
	_, dst, _ := net.ParseCIDR("198.19.0.0/24")
	if err := ep.NL.RouteAdd(&netlink.Route{Dst: dst, LinkIndex: link.Attrs().Index, MTU: 1400}); err != nil {
		t.Fatal(err)
	}
	routes, err := ep.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: dst}, netlink.RT_FILTER_DST)
	if err != nil || len(routes) != 1 {
		t.Fatalf("routes to %s: %v, %v", dst, routes, err)
	}
	key := bytes.Repeat([]byte{0xab}, 36)
	sa := &netlink.XfrmState{Src: net.ParseIP("198.18.0.1"), Dst: net.ParseIP("198.18.0.2"), Proto: netlink.XFRM_PROTO_ESP,
		Mode: netlink.XFRM_MODE_TUNNEL, Spi: 0x100, Aead: &netlink.XfrmStateAlgo{Name: "rfc4106(gcm(aes))", Key: key, ICVLen: 128}}
	if err := ep.NL.XfrmStateAdd(sa); err != nil {
		t.Fatal(err)
	}
	if err := ep.WriteFile("/run/tunbench/rec/x.key", []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ep.ReadFile("/run/tunbench/rec/x.key"); err != nil || string(got) != "secret" {
		t.Errorf("ReadFile of a written file: %q, %v", got, err)
	}
	if err := ep.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ep.RemoveAll("/run/tunbench/rec"); err != nil {
		t.Fatal(err)
	}
	if _, err := ep.ReadFile("/run/tunbench/rec/x.key"); err == nil {
		t.Error("ReadFile of a removed file succeeded")
	}
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		if argv[0] == "daemon" {
			return testbedtest.Answer{Runs: true, OnStop: func() { r.Forget("tb-vx") }}
		}
		return testbedtest.Answer{Output: "v1\n"}
	})
	out, err := ep.Run(context.Background(), "sh", "-c", "echo 'it' $0", "x")
	if err != nil || string(out) != "v1\n" {
		t.Errorf("Run: %q, %v", out, err)
	}
	d := ep.Command(context.Background(), "daemon", "-f")
	if err := ep.Start(d); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("daemon exited before it was signalled: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := d.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	if _, err := ep.NL.LinkByName("tb-vx"); !testbed.IsLinkNotFound(err) {
		t.Errorf("the daemon's OnStop did not forget tb-vx: %v", err)
	}
	_, err = opUnanswered.Call(context.Background(), ep, "x")
	if err == nil || !strings.Contains(err.Error(), "testbedtest.unanswered") {
		t.Errorf("unanswered op: %v, want an error naming it", err)
	}
	want := []string{
		"ip link add tb-vx type vxlan id 7 local 198.18.0.1 remote 198.18.0.2 dstport 4789 dev veth0 ttl 64 nolearning",
		"ip route add 198.19.0.0/24 dev tb-vx mtu 1400",
		"ip xfrm state add src 198.18.0.1 dst 198.18.0.2 proto esp spi 0x100 mode tunnel aead rfc4106(gcm(aes)) <key> 128",
		"write /run/tunbench/rec/x.key (0600)",
		"sysctl -w net.ipv4.ip_forward=1",
		"rm -rf /run/tunbench/rec",
		`exec sh -c 'echo '\''it'\'' $0' x`,
		"exec daemon -f &  # pid 1002",
		"kill -TERM 1002",
	}
	if diff := cmp.Diff(want, r.Lines()); diff != "" {
		t.Errorf("recorded lines (-want +got):\n%s", diff)
	}
	if len(r.Lines()) != 0 {
		t.Error("Lines did not forget the lines it returned")
	}
}
