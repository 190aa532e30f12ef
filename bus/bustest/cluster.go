package bustest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a NATS cluster of JetStream servers run in-process.
type Cluster struct {
	Servers []*server.Server
}

// URLs is every server's client URL, comma-separated (as nats.Connect and
// the CLI's --nats take them).
func (c *Cluster) URLs() string {
	var urls []string
	for _, s := range c.Servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}

// NewCluster starts n JetStream servers in this process, joined by cluster
// routes on free ports, with their stores in temporary directories, and
// waits until JetStream has a meta leader. The servers stop when the test
// ends.
func NewCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := FreePorts(t, n)
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	c := &Cluster{}
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   filepath.Join(t.TempDir(), fmt.Sprintf("n%d", i+1)),
			Cluster:    server.ClusterOpts{Name: "exotest", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
			NoSigs:     true,
			NoLog:      true,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("cluster server %d: %v", i+1, err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
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
