package bustest

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/exocortex/exocortex/bus"
)

// Cluster is a NATS cluster of JetStream servers run in-process, locked
// the way ops/cluster/nats.conf locks a real one: clients speak TLS only
// (a certificate signed by the cluster's CA) and send a user and password;
// routes speak mutual TLS (each node shows a certificate the CA signed)
// and send the route user and password.
type Cluster struct {
	Servers []*server.Server
	// CA signed every node's certificate: clients trust it, and a node
	// joins with a certificate it signed.
	CA *CA
	// Creds are what a client sends.
	Creds bus.Credentials
	// RouteUser and RoutePassword are what a node sends on its routes.
	RouteUser, RoutePassword string
	// routes are the nodes' route URLs, without credentials.
	routes []*url.URL
}

// TLS is what a client of the cluster trusts.
func (c *Cluster) TLS() bus.TLSFiles { return bus.TLSFiles{CA: c.CA.File} }

// URLs is every server's client URL, comma-separated (as nats.Connect and
// the CLI's --nats take them).
func (c *Cluster) URLs() string {
	var urls []string
	for _, s := range c.Servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}

// NodeOptions are how one node of a Cluster is started (see Cluster.Node).
type NodeOptions struct {
	Name string
	// Cert and Key are the node's certificate (for clients and routes);
	// empty: one the cluster's CA signs for 127.0.0.1 and localhost.
	Cert, Key string
	// RouteUser and RoutePassword are sent on the routes it makes and
	// asked of the routes it takes.
	RouteUser, RoutePassword string
	// RoutePort is its route port; 0 picks a free one.
	RoutePort int
}

// NewCluster starts n JetStream servers in this process, joined by cluster
// routes on free ports, with their stores in temporary directories, and
// waits until JetStream has a meta leader. The servers stop when the test
// ends. Clients connect over TLS with c.TLS() and c.Creds.
func NewCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := FreePorts(t, n)
	c := &Cluster{
		CA:        NewCA(t, "exocortex test cluster CA"),
		Creds:     bus.Credentials{User: "exocortex", Password: "clientSecret" + fmt.Sprint(time.Now().UnixNano())},
		RouteUser: "route", RoutePassword: "routeSecret" + fmt.Sprint(time.Now().UnixNano()),
	}
	for _, p := range ports {
		c.routes = append(c.routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	for i := range n {
		s, err := c.Node(t, NodeOptions{Name: fmt.Sprintf("n%d", i+1), RouteUser: c.RouteUser, RoutePassword: c.RoutePassword, RoutePort: ports[i]})
		if err != nil {
			t.Fatalf("cluster server %d: %v", i+1, err)
		}
		c.Servers = append(c.Servers, s)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Servers {
		for !s.ReadyForConnections(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("cluster server %s not ready after 30s", s.Name())
			}
		}
	}
	// A meta leader, and every server known to it as an online JetStream
	// peer with stats: what placing a replicated stream needs (before that,
	// placement fails with "no suitable peers ... peer offline", seen on a
	// loaded machine).
	for {
		peers := 0
		for _, s := range c.Servers {
			if s.JetStreamIsLeader() {
				peers = len(s.JetStreamClusterPeers())
			}
		}
		if peers == len(c.Servers) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster has %d of %d JetStream peers online at its meta leader after 30s", peers, len(c.Servers))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Node starts one more server with the cluster's routes (o says with
// which certificate and route credentials): NewCluster's nodes, or a node
// that tries to join. It stops when the test ends. It does not wait for
// the node to be ready.
func (c *Cluster) Node(t testing.TB, o NodeOptions) (*server.Server, error) {
	t.Helper()
	if o.Cert == "" {
		o.Cert, o.Key = c.CA.Issue(t, o.Name, "127.0.0.1", "localhost")
	}
	if o.RoutePort == 0 {
		o.RoutePort = FreePorts(t, 1)[0]
	}
	// Clients: TLS, no client certificate (they send a password).
	clientTLS, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.Cert, KeyFile: o.Key})
	if err != nil {
		return nil, fmt.Errorf("node %s client TLS: %w", o.Name, err)
	}
	// Routes: mutual TLS with the cluster's CA, as nats-server makes a
	// cluster { tls {} } block (a node both takes and makes routes).
	routeTLS, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.Cert, KeyFile: o.Key, CaFile: c.CA.File, Verify: true})
	if err != nil {
		return nil, fmt.Errorf("node %s route TLS: %w", o.Name, err)
	}
	routeTLS.ClientAuth = tls.RequireAndVerifyClientCert
	routeTLS.RootCAs = routeTLS.ClientCAs
	var routes []*url.URL
	for _, r := range c.routes {
		r := *r
		if o.RouteUser != "" {
			r.User = url.UserPassword(o.RouteUser, o.RoutePassword)
		}
		routes = append(routes, &r)
	}
	opts := &server.Options{
		ServerName: o.Name,
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   filepath.Join(t.TempDir(), o.Name),
		TLSConfig:  clientTLS,
		TLSTimeout: 5,
		Users:      []*server.User{{Username: c.Creds.User, Password: c.Creds.Password}},
		Cluster: server.ClusterOpts{Name: "exotest", Host: "127.0.0.1", Port: o.RoutePort,
			Username: o.RouteUser, Password: o.RoutePassword, TLSConfig: routeTLS, TLSTimeout: 5},
		Routes: routes,
		NoSigs: true,
		NoLog:  true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s, nil
}

// FreePorts returns n TCP ports free on 127.0.0.1 right now (for listens
// that must be known before the servers start, such as cluster routes).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}
