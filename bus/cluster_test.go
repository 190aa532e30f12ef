package bus_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
)

func TestBeyondLoopbackTellsWhetherAURLListLeavesThisMachine(t *testing.T) {
	for _, tc := range []struct {
		name, urls string
		want       bool
	}{
		{"one loopback IPv4 URL stays on this machine", "nats://127.0.0.1:4222", false},
		{"localhost and ::1 stay on this machine", "tls://localhost:4222, nats://[::1]:4222", false},
		{"a URL without a scheme on loopback stays", "127.0.0.1:4222", false},
		{"a node name leaves it", "tls://nats-1:4222", true},
		{"one remote node among loopback ones leaves it", "nats://127.0.0.1:4222,tls://10.0.0.5:4222", true},
		{"a name that merely starts with localhost leaves it", "nats://localhost.example:4222", true},
		{"a URL that does not parse counts as remote", "nats://[bad", true},
		{"кириллическое имя узла — другая машина", "tls://узел-1:4222", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bus.BeyondLoopback(tc.urls); got != tc.want {
				t.Errorf("BeyondLoopback(%q) = %v, want %v", tc.urls, got, tc.want)
			}
		})
	}
}

// nonLoopbackIP is an address of this machine other than loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no IPv4 address beyond loopback")
	return ""
}

func TestAClientRefusesAPlainTextServerBeyondLoopbackBeforeSendingItsPassword(t *testing.T) {
	clearNATSEnv(t)
	ip := nonLoopbackIP(t)
	// A server without TLS beyond loopback: it greets as nats-server does
	// and keeps whatever the client sends.
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			got <- ""
			return
		}
		defer conn.Close()
		fmt.Fprintf(conn, "INFO {\"server_id\":\"plain\",\"version\":\"2.15.2\",\"proto\":1,\"headers\":true,\"auth_required\":true,\"max_payload\":1048576}\r\n")
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		raw, _ := io.ReadAll(conn)
		got <- string(raw)
	}()
	creds := bus.Credentials{User: "exo", Password: "notForPlainText"}
	_, err = bus.Open(context.Background(), bus.Options{URL: "nats://" + l.Addr().String(), Creds: creds})
	if !errors.Is(err, bus.ErrRemoteWithoutTLS) || !strings.Contains(err.Error(), "--tls-ca") {
		t.Errorf("a plain-text server at %s: %v, want ErrRemoteWithoutTLS naming --tls-ca", l.Addr(), err)
	}
	if sent := <-got; strings.Contains(sent, creds.Password) || strings.Contains(sent, "CONNECT") {
		t.Errorf("the client sent %q to a plain-text server beyond loopback", sent)
	}
}

func TestAClientStillTalksPlainTextToAServerOnLoopback(t *testing.T) {
	clearNATSEnv(t)
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	for _, u := range []string{s.ClientURL(), strings.Replace(s.ClientURL(), "127.0.0.1", "localhost", 1)} {
		b, err := bus.Open(context.Background(), bus.Options{URL: u})
		if err != nil {
			t.Fatalf("a plain-text server at %s: %v", u, err)
		}
		b.Close()
	}
}

func TestAClusterAdmitsOnlyNodesWithTheRouteCredentialsAndACertificateOfItsCA(t *testing.T) {
	clearNATSEnv(t)
	c := bustest.NewCluster(t, 3)

	// Clients: TLS with the cluster's CA and the password.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !strings.HasPrefix(c.URLs(), "tls://") {
		t.Errorf("the cluster's client URLs %s are not tls://", c.URLs())
	}
	b, err := bus.Open(ctx, bus.Options{URL: c.URLs(), Creds: c.Creds, TLS: c.TLS()})
	if err != nil {
		t.Fatalf("a client with the CA and the password: %v", err)
	}
	if _, err := b.JS.AccountInfo(ctx); err != nil {
		t.Errorf("JetStream over TLS on the cluster: %v", err)
	}
	b.Close()
	if b, err := bus.Open(ctx, bus.Options{URL: c.URLs(), Creds: c.Creds}); err == nil {
		b.Close()
		t.Error("a client that does not trust the cluster's CA connected")
	}
	if b, err := bus.Open(ctx, bus.Options{URL: c.URLs(), Creds: bus.Credentials{User: c.Creds.User, Password: "wrong"}, TLS: c.TLS()}); !errors.Is(err, bus.ErrNotAuthorized) {
		if b != nil {
			b.Close()
		}
		t.Errorf("a client with a wrong password: %v, want ErrNotAuthorized", err)
	}
	u, _ := url.Parse(strings.Split(c.URLs(), ",")[0])
	if reply := plainTextConnect(t, u.Host, c.Creds); strings.Contains(reply, "PONG") || strings.Contains(reply, "+OK") {
		t.Errorf("a plain-text client was answered %q", reply)
	}

	// Nodes: a certificate of the CA and the route password.
	other := bustest.NewCA(t, "another CA")
	strangerCert, strangerKey := other.Issue(t, "stranger", "127.0.0.1", "localhost")
	intruders := map[string]bustest.NodeOptions{
		"a node with the CA's certificate but no route password":      {Name: "nopass"},
		"a node with the CA's certificate and a wrong route password": {Name: "wrongpass", RouteUser: c.RouteUser, RoutePassword: "wrong"},
		"a node with the route password but another CA's certificate": {Name: "stranger", Cert: strangerCert, Key: strangerKey,
			RouteUser: c.RouteUser, RoutePassword: c.RoutePassword},
	}
	started := map[string]*server.Server{}
	for what, o := range intruders {
		s, err := c.Node(t, o)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		started[what] = s
	}
	// The control: a fourth node with both joins (so the test can see a
	// join); by then the others have tried their routes several times.
	member, err := c.Node(t, bustest.NodeOptions{Name: "n4", RouteUser: c.RouteUser, RoutePassword: c.RoutePassword})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(routePeers(t, member)) < len(c.Servers) {
		if time.Now().After(deadline) {
			t.Fatalf("a fourth node with the route password and a certificate of the CA has routes to %v, want all %d nodes", routePeers(t, member), len(c.Servers))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	for what, s := range started {
		if n := s.NumRoutes(); n != 0 {
			t.Errorf("%s has %d route connections to the cluster (to %v), want none", what, n, routePeers(t, s))
		}
	}
	for _, s := range c.Servers {
		if peers := routePeers(t, s); len(peers) != len(c.Servers) || !slices.Contains(peers, "n4") {
			t.Errorf("node %s has routes to %v, want its two peers and n4", s.Name(), peers)
		}
	}
}

// routePeers are the names of the servers s has routes to (a route pool
// has several connections to each).
func routePeers(t *testing.T, s *server.Server) []string {
	t.Helper()
	rz, err := s.Routez(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rz.Routes {
		if !slices.Contains(names, r.RemoteName) {
			names = append(names, r.RemoteName)
		}
	}
	slices.Sort(names)
	return names
}

// plainTextConnect talks to a NATS server without TLS: it reads the
// greeting and sends CONNECT with creds and a PING in plain text. It
// returns what the server answered before it closed the connection (or 3 s
// passed).
func plainTextConnect(t *testing.T, hostport string, creds bus.Credentials) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", hostport, 3*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", hostport, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("greeting of %s: %v", hostport, err)
	}
	if !strings.Contains(info, `"tls_required":true`) {
		t.Errorf("the greeting of %s does not require TLS: %s", hostport, info)
	}
	fmt.Fprintf(conn, "CONNECT {\"user\":%q,\"pass\":%q,\"verbose\":true}\r\nPING\r\n", creds.User, creds.Password)
	var reply strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		reply.Write(buf[:n])
		if err != nil {
			return reply.String()
		}
	}
}
