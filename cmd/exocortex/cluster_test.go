package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite"

	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/models/ort"
)

// syncBuffer is a process's output, read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a child process of a test; it is stopped (SIGTERM, then SIGKILL
// after 15 s) when the test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer // stdout and stderr
	stdout *syncBuffer
	done   chan struct{}
	err    error
}

func startProc(t *testing.T, name string, env []string, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(path, args...), out: &syncBuffer{}, stdout: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS="), env...)
	p.cmd.Stdout, p.cmd.Stderr = io.MultiWriter(p.stdout, p.out), p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(15 * time.Second)
		if d := os.Getenv("EXOCORTEX_TEST_LOGS"); d != "" {
			_ = os.WriteFile(filepath.Join(d, strings.ReplaceAll(name, " ", "_")+".log"), []byte(p.out.String()), 0o644)
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits, killing the process after grace.
func (p *proc) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill is kill -9.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// natsNode is one nats-server of a test cluster, started from
// ops/cluster/nats.conf with its own environment.
type natsNode struct {
	name string
	env  []string
	p    *proc
}

// clusterConf is the cluster configuration that ops/ ships.
var clusterConf = filepath.Join("..", "..", "ops", "cluster", "nats.conf")

func (n *natsNode) start(t *testing.T, server, what string) {
	t.Helper()
	n.p = startProc(t, "nats-server "+n.name+what, n.env, server, "-c", clusterConf)
}

// buildNATSServer builds nats-server from the module this project depends
// on (so its version is go.mod's) into the user's cache directory, once.
func buildNATSServer(t *testing.T) string {
	t.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	bin := filepath.Join(dir, "exocortex-test", "nats-server-"+moduleVersion(t, "github.com/nats-io/nats-server/v2"))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	tmp := bin + fmt.Sprintf(".%d", os.Getpid())
	if out, err := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// moduleVersion is the version of a module in go.mod.
func moduleVersion(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// natsCluster is three nats-server nodes started from ops/cluster/nats.conf
// on free ports of 127.0.0.1, locked as the file locks them: clients over
// TLS (node certificates signed by a CA made here) with a user and password,
// routes over mutual TLS with the route user and password, monitoring on
// loopback.
type natsCluster struct {
	server                   string // the nats-server binary
	nodes                    []*natsNode
	urls                     string // the client URLs, tls://127.0.0.1:PORT, comma-separated
	ca                       *bustest.CA
	user, password           string
	routeUser, routePassword string
	routePorts               []int
	monitors                 map[string]int // node name -> monitoring port
	dir                      string
}

// natsNodeOptions say how a node of a natsCluster is started.
type natsNodeOptions struct {
	name string
	// cert and key: empty, one the cluster's CA signs; ca: empty, the
	// cluster's.
	cert, key, ca string
	// routeUser and routePassword go in the URLs of its routes (empty: no
	// credentials there); ownRoutePassword is what it asks of routes to it
	// (empty: the cluster's).
	routeUser, routePassword, ownRoutePassword string
	// routePort: 0 picks a free one.
	routePort int
}

// nodeEnv is the environment of a node of c: what nats-node.env.example
// sets on a real machine.
func (c *natsCluster) nodeEnv(t *testing.T, o natsNodeOptions) []string {
	t.Helper()
	if o.cert == "" {
		o.cert, o.key = c.ca.Issue(t, o.name, "127.0.0.1", "localhost")
	}
	if o.ca == "" {
		o.ca = c.ca.File
	}
	if o.ownRoutePassword == "" {
		o.ownRoutePassword = c.routePassword
	}
	ports := freePorts(t, 3)
	if o.routePort == 0 {
		o.routePort = ports[1]
	}
	c.monitors[o.name] = ports[2]
	env := []string{
		"NATS_NAME=" + o.name,
		fmt.Sprintf("NATS_LISTEN=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("NATS_CLUSTER_LISTEN=127.0.0.1:%d", o.routePort),
		fmt.Sprintf("NATS_MONITOR=127.0.0.1:%d", ports[2]),
		"NATS_STORE=" + filepath.Join(c.dir, o.name),
		"NATS_MAX_STORE=4GB",
		"NATS_TLS_CERT=" + o.cert,
		"NATS_TLS_KEY=" + o.key,
		"NATS_TLS_CA=" + o.ca,
		"NATS_ROUTE_USER=" + c.routeUser,
		"NATS_ROUTE_PASSWORD=" + o.ownRoutePassword,
		"EXOCORTEX_NATS_USER=" + c.user,
		"EXOCORTEX_NATS_PASSWORD=" + c.password,
	}
	for i, p := range c.routePorts {
		u := fmt.Sprintf("nats://127.0.0.1:%d", p)
		if o.routeUser != "" {
			u = fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", o.routeUser, o.routePassword, p)
		}
		env = append(env, fmt.Sprintf("NATS_ROUTE_%d=%s", i+1, u))
	}
	return env
}

// clientPort is the client port in a node's environment.
func clientPort(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NATS_LISTEN=127.0.0.1:"); ok {
			return v
		}
	}
	return ""
}

// startNATSCluster starts three nodes from ops/cluster/nats.conf (JetStream,
// TLS, cluster routes between them with mutual TLS and a route password, a
// client user and password) on free ports, with their stores in a
// temporary directory.
func startNATSCluster(t *testing.T, server, user, password string) *natsCluster {
	t.Helper()
	c := &natsCluster{server: server, ca: bustest.NewCA(t, "exocortex test cluster CA"), user: user, password: password,
		routeUser: "route", routePassword: "routeTestSecret0123", routePorts: freePorts(t, 3), monitors: map[string]int{}, dir: t.TempDir()}
	var urls []string
	for i := range 3 {
		n := &natsNode{name: fmt.Sprintf("n%d", i+1)}
		n.env = c.nodeEnv(t, natsNodeOptions{name: n.name, routeUser: c.routeUser, routePassword: c.routePassword, routePort: c.routePorts[i]})
		urls = append(urls, "tls://127.0.0.1:"+clientPort(n.env))
		c.nodes = append(c.nodes, n)
	}
	c.urls = strings.Join(urls, ",")
	for _, n := range c.nodes {
		n.start(t, server, "")
	}
	return c
}

// connect is a NATS client of the cluster, as the processes connect: TLS
// with the CA, the user and password.
func (c *natsCluster) connect(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(c.urls, nats.UserInfo(c.user, c.password), nats.RootCAs(c.ca.File),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitJetStream(t, js, c.nodes)
	return nc, js
}

// routePeers are the names of the servers a node has routes to, from its
// monitoring endpoint (nil when it does not answer).
func (c *natsCluster) routePeers(t *testing.T, name string) []string {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/routez", c.monitors[name]))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var rz struct {
		Routes []struct {
			RemoteName string `json:"remote_name"`
		} `json:"routes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
		t.Fatalf("routez of %s: %v", name, err)
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

// waitJetStream waits until the cluster answers JetStream requests with
// all three servers as peers: a meta leader is elected and a stream of
// three replicas can be placed (a meta leader alone may still see a peer
// offline, and refuse R3 with "no suitable peers for placement").
func waitJetStream(t *testing.T, js jetstream.JetStream, nodes []*natsNode) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.AccountInfo(ctx)
		if err == nil {
			_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "CLUSTER_READY", Subjects: []string{"cluster.ready"}, Replicas: 3})
			if err == nil {
				err = js.DeleteStream(ctx, "CLUSTER_READY")
			}
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var logs []string
			for _, n := range nodes {
				logs = append(logs, n.name+": "+n.p.out.String())
			}
			t.Fatalf("the NATS cluster has no JetStream after 60s: %v\n%s", err, strings.Join(logs, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeClusterCorpus writes n Markdown notes, English and Russian, of a few
// sections each.
func writeClusterCorpus(t *testing.T, dir string, n int) {
	t.Helper()
	en := []string{"bees", "honey", "garden", "tomatoes", "river", "mountain", "engine", "library", "window", "coffee", "market", "harbour"}
	ru := []string{"пчёлы", "мёд", "сад", "томаты", "река", "гора", "двигатель", "библиотека", "окно", "кофе", "рынок", "гавань"}
	for i := range n {
		var b strings.Builder
		words := en
		if i%3 == 0 {
			words = ru
		}
		fmt.Fprintf(&b, "# Note %d about %s\n\n", i, words[i%len(words)])
		for s := range 2 + i%4 {
			fmt.Fprintf(&b, "## Section %d.%d: %s\n\n", i, s, words[(i+s)%len(words)])
			for p := range 3 {
				for w := range 40 {
					b.WriteString(words[(i*7+s*5+p*3+w)%len(words)])
					b.WriteString(" ")
				}
				fmt.Fprintf(&b, "(note %d, part %d.%d).\n\n", i, s, p)
			}
		}
		write(t, filepath.Join(dir, fmt.Sprintf("folder%d", i%7), fmt.Sprintf("note-%03d.md", i)), b.String())
	}
}

// indexFingerprint is what an index holds, in a form two indexes can be
// compared by: every document with its hash and chunk list, every chunk
// with its document, place and hash, every vector's chunk and hash, and the
// row counts of the full-text index, blocks and graph edges.
type indexFingerprint struct {
	Docs    []string
	Chunks  []string
	Vectors []string
	Counts  map[string]int
}

func fingerprint(t *testing.T, dbPath string) indexFingerprint {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func(q string) []string { return sqlStrings(t, db, q) }
	fp := indexFingerprint{
		Docs:    rows(`SELECT doc_id || ' ' || hash || ' ' || chunk_count || ' ' || chunk_ids FROM documents ORDER BY doc_id`),
		Chunks:  rows(`SELECT chunk_id || ' ' || doc_id || ' ' || ordinal || ' ' || hash FROM chunks ORDER BY chunk_id`),
		Vectors: rows(`SELECT chunk_id || ' ' || hash || ' ' || model FROM chunk_vectors ORDER BY chunk_id`),
		Counts:  map[string]int{},
	}
	for _, table := range []string{"chunks_fts", "blocks", "edges", "deleted_docs"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		fp.Counts[table] = n
	}
	return fp
}

// diffLines names the lines only one side has.
func diffLines(what string, want, got []string) []string {
	in := func(xs []string) map[string]int {
		m := map[string]int{}
		for _, x := range xs {
			m[x]++
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for x, n := range w {
		if g[x] != n {
			out = append(out, fmt.Sprintf("%s %q: %d in the clean run, %d on the cluster", what, x, n, g[x]))
		}
	}
	for x, n := range g {
		if _, ok := w[x]; !ok {
			out = append(out, fmt.Sprintf("%s %q: not in the clean run, %d on the cluster", what, x, n))
		}
	}
	return out
}

type clusterIngestJSON struct {
	Files struct {
		Sent, Failed int
	} `json:"files"`
	DeadLettered []json.RawMessage `json:"dead_lettered"`
	Documents    int               `json:"documents"`
	Chunks       int               `json:"chunks"`
}

// TestClusterFailoverLosesAndDoublesNothing runs the ingest pipeline on a
// three-node NATS cluster (built from the nats-server module this project
// depends on, started from ops/cluster/nats.conf: TLS for clients, mutual
// TLS and a password for routes) with every stream, bucket and object store on three
// replicas: chunk, embed and index workers are separate processes given
// all three URLs; the node leading the ingest stream is killed with
// SIGKILL mid-ingest and started again. The index ends identical to a
// clean single-process run of the same corpus, with nothing dead-lettered.
func TestClusterFailoverLosesAndDoublesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster and five processes")
	}
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true})
	lib, err := ort.Find()
	if err != nil {
		t.Fatal(err)
	}
	server := buildNATSServer(t)
	corpus := t.TempDir()
	const notes = 300
	writeClusterCorpus(t, corpus, notes)
	base := []string{ort.EnvLib + "=" + lib, "EXOCORTEX_NATS_USER=", "EXOCORTEX_NATS_PASSWORD=", "EXOCORTEX_NATS_NKEY=", "EXOCORTEX_NATS_TLS_CA=", "EXOCORTEX_REPLICAS="}

	// The clean run: one process, embedded server.
	clean := t.TempDir()
	out, errOut, err := exoEnv(t, base, "ingest", corpus, "--data", clean, "--models", modelsDir, "--json", "--quiet")
	if err != nil {
		t.Fatalf("clean ingest: %v\n%s\n%s", err, out, errOut)
	}
	var cleanRep clusterIngestJSON
	if err := json.Unmarshal([]byte(out), &cleanRep); err != nil {
		t.Fatalf("clean ingest --json: %v\n%s", err, out)
	}
	want := fingerprint(t, filepath.Join(clean, "exocortex.db"))
	if cleanRep.Files.Sent != notes || len(want.Docs) != notes || len(want.Vectors) != len(want.Chunks) || len(want.Chunks) < notes {
		t.Fatalf("clean run: %+v, %d documents, %d chunks, %d vectors", cleanRep, len(want.Docs), len(want.Chunks), len(want.Vectors))
	}

	// The cluster, locked as ops/cluster/nats.conf locks it.
	const user, password = "exocortex", "clusterTestSecret0123"
	cluster := startNATSCluster(t, server, user, password)
	nodes, urls := cluster.nodes, cluster.urls
	_, js := cluster.connect(t)

	// As on several machines: every process has the credentials, the CA
	// and the replica count in its environment, and all three tls:// URLs.
	env := append(base, "EXOCORTEX_NATS_USER="+user, "EXOCORTEX_NATS_PASSWORD="+password,
		"EXOCORTEX_NATS_TLS_CA="+cluster.ca.File, "EXOCORTEX_REPLICAS=3")
	workerArgs := func(stage, data string) []string {
		return []string{"worker", "--stage", stage, "--nats", urls, "--data", data, "--models", modelsDir,
			"--replicas", "3", "--embeds-cache-mb", "64", "--log-level", "info"}
	}
	index := t.TempDir()
	var workers []*proc
	// One worker first, so that it creates the topology alone.
	chunkW := startProc(t, "chunk worker", env, binary, workerArgs("chunk", t.TempDir())...)
	workers = append(workers, chunkW)
	waitFor := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				var logs []string
				for _, w := range workers {
					logs = append(logs, w.name+": "+w.out.String())
				}
				t.Fatalf("%s: not after %s\n%s", what, timeout, strings.Join(logs, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the chunk worker creates the topology and starts", 90*time.Second, func() bool {
		return strings.Contains(chunkW.out.String(), "worker started") || !chunkW.running()
	})
	if !chunkW.running() {
		t.Fatalf("the chunk worker stopped: %v\n%s", chunkW.err, chunkW.out.String())
	}
	workers = append(workers,
		startProc(t, "embed worker", env, binary, workerArgs("embed", t.TempDir())...),
		startProc(t, "index worker", env, binary, workerArgs("index", index)...))

	// Every stream, bucket and object store has three replicas.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for info := range js.ListStreams(ctx).Info() {
		if info.Config.Replicas != 3 {
			t.Errorf("stream %s has %d replicas, want 3", info.Config.Name, info.Config.Replicas)
		}
	}
	ingestStream, err := js.Stream(ctx, "KB_INGEST")
	if err != nil {
		t.Fatal(err)
	}

	ingest := startProc(t, "ingest", env, binary, "ingest", corpus, "--nats", urls, "--data", index, "--json", "--quiet", "--log-level", "warn")
	// Mid-ingest: once the index stage has taken a quarter of the chunks,
	// the node leading KB_INGEST dies.
	indexDone := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, "KB_INGEST", "index")
		if err != nil {
			return 0
		}
		return c.CachedInfo().AckFloor.Consumer
	}
	waitFor("the index stage takes a quarter of the chunks", 120*time.Second, func() bool {
		return indexDone() >= uint64(len(want.Chunks)/4) || !ingest.running()
	})
	if !ingest.running() {
		t.Fatalf("ingest ended before the node could be killed: the corpus is too small\n%s", ingest.out.String())
	}
	info, err := ingestStream.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("KB_INGEST's cluster info: %v", err)
	}
	var victim *natsNode
	for _, n := range nodes {
		if n.name == info.Cluster.Leader {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("KB_INGEST's leader %q is none of the nodes", info.Cluster.Leader)
	}
	before := indexDone()
	victim.p.kill()
	t.Logf("killed %s (leader of KB_INGEST) with SIGKILL after the index stage acked %d messages", victim.name, before)
	time.Sleep(3 * time.Second)
	victim.start(t, server, " (restarted)")
	t.Logf("restarted %s", victim.name)

	select {
	case <-ingest.done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("ingest did not finish in 4 minutes after the failover\n%s", ingest.out.String())
	}
	if ingest.err != nil {
		t.Fatalf("ingest across the failover: %v\n%s", ingest.err, ingest.out.String())
	}
	var rep clusterIngestJSON
	if err := json.Unmarshal([]byte(ingest.stdout.String()), &rep); err != nil {
		t.Fatalf("ingest --json: %v\n%s", err, ingest.out.String())
	}
	if rep.Files.Sent != notes || len(rep.DeadLettered) != 0 {
		t.Errorf("ingest across the failover: %d sent (want %d), %d dead-lettered", rep.Files.Sent, notes, len(rep.DeadLettered))
	}
	for _, w := range workers {
		if !w.running() {
			t.Errorf("%s stopped during the failover: %v\n%s", w.name, w.err, w.out.String())
		}
	}
	if dl, errOut, err := exoEnv(t, env, "dlq", "list", "--nats", urls); err != nil || !strings.Contains(dl, "no dead letters") {
		t.Errorf("dlq list after the failover: %v\n%s%s", err, dl, errOut)
	}

	got := fingerprint(t, filepath.Join(index, "exocortex.db"))
	var diffs []string
	diffs = append(diffs, diffLines("document", want.Docs, got.Docs)...)
	diffs = append(diffs, diffLines("chunk", want.Chunks, got.Chunks)...)
	diffs = append(diffs, diffLines("vector", want.Vectors, got.Vectors)...)
	for table, n := range want.Counts {
		if got.Counts[table] != n {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows in the clean run, %d on the cluster", table, n, got.Counts[table]))
		}
	}
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
		}
		t.Errorf("the index after the failover differs from a clean run (%d documents, %d chunks, %d vectors there):\n%s",
			len(want.Docs), len(want.Chunks), len(want.Vectors), strings.Join(diffs, "\n"))
	}
	t.Logf("the cluster's index: %d documents, %d chunks, %d vectors; %v", len(got.Docs), len(got.Chunks), len(got.Vectors), got.Counts)
}

// TestClusterFromNATSConfAdmitsOnlyItsNodesAndClientsOverTLS starts the
// three nodes of ops/cluster/nats.conf and knocks on them: Exocortex with
// the CA and the password gets in over tls://; without the CA, with a wrong
// password, or in plain text it does not; a fourth node from the same file
// joins only with a certificate of the cluster's CA and the route password.
func TestClusterFromNATSConfAdmitsOnlyItsNodesAndClientsOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS cluster of three nodes and knocks with four more")
	}
	server := buildNATSServer(t)
	const user, password = "exocortex", "clusterTestSecret0123"
	c := startNATSCluster(t, server, user, password)
	c.connect(t)

	// Clients: the exocortex binary, as a worker on another machine.
	clean := []string{"EXOCORTEX_NATS_USER=", "EXOCORTEX_NATS_PASSWORD=", "EXOCORTEX_NATS_NKEY=", "EXOCORTEX_NATS_CREDS=", "EXOCORTEX_NATS_TLS_CA=", "EXOCORTEX_REPLICAS="}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string // in stdout on success, in stderr on failure
		ok   bool
	}{
		{"the CA and the password in the environment get in", []string{"EXOCORTEX_NATS_TLS_CA=" + c.ca.File, "EXOCORTEX_NATS_USER=" + user, "EXOCORTEX_NATS_PASSWORD=" + password},
			nil, "no dead letters", true},
		{"the CA by flag gets in", []string{"EXOCORTEX_NATS_USER=" + user, "EXOCORTEX_NATS_PASSWORD=" + password},
			[]string{"--tls-ca", c.ca.File}, "no dead letters", true},
		{"without the CA the nodes' certificates are not trusted", []string{"EXOCORTEX_NATS_USER=" + user, "EXOCORTEX_NATS_PASSWORD=" + password},
			nil, "certificate", false},
		{"a wrong password is turned away", []string{"EXOCORTEX_NATS_TLS_CA=" + c.ca.File, "EXOCORTEX_NATS_USER=" + user, "EXOCORTEX_NATS_PASSWORD=wrong"},
			nil, "credentials", false},
		{"no password is turned away", []string{"EXOCORTEX_NATS_TLS_CA=" + c.ca.File},
			nil, "credentials", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"dlq", "list", "--nats", c.urls, "--data", t.TempDir()}, tc.args...)
			out, errOut, err := exoEnv(t, append(slices.Clone(clean), tc.env...), args...)
			if tc.ok && (err != nil || !strings.Contains(out, tc.want)) {
				t.Errorf("exocortex %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
			}
			if !tc.ok && (err == nil || !strings.Contains(errOut, tc.want)) {
				t.Errorf("exocortex %s: %v, want a failure naming %q\n%s%s", strings.Join(args, " "), err, tc.want, out, errOut)
			}
		})
	}

	// A client in plain text: the node greets with tls_required and answers
	// a plain CONNECT with nothing but a closed connection.
	t.Run("a plain-text client gets no answer", func(t *testing.T) {
		hostport := strings.TrimPrefix(strings.Split(c.urls, ",")[0], "tls://")
		conn, err := net.DialTimeout("tcp", hostport, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, _ := conn.Read(buf)
		if info := string(buf[:n]); !strings.HasPrefix(info, "INFO ") || !strings.Contains(info, `"tls_required":true`) {
			t.Errorf("the greeting does not require TLS: %q", info)
		}
		fmt.Fprintf(conn, "CONNECT {\"user\":%q,\"pass\":%q,\"verbose\":true}\r\nPING\r\n", user, password)
		var reply []byte
		for {
			n, err := conn.Read(buf)
			reply = append(reply, buf[:n]...)
			if err != nil {
				break
			}
		}
		if strings.Contains(string(reply), "PONG") || strings.Contains(string(reply), "+OK") {
			t.Errorf("a plain-text client was answered %q", reply)
		}
	})

	// Nodes: three that must not join, and one that must (which shows the
	// test would see a join); by the time it has joined, the others have
	// tried their routes several times.
	other := bustest.NewCA(t, "another CA")
	strangerCert, strangerKey := other.Issue(t, "stranger", "127.0.0.1", "localhost")
	intruders := map[string]natsNodeOptions{
		"x-nopass":    {name: "x-nopass", ownRoutePassword: "itsOwnSecret0"},
		"x-wrongpass": {name: "x-wrongpass", routeUser: c.routeUser, routePassword: "wrongSecret0", ownRoutePassword: "wrongSecret0"},
		"x-stranger": {name: "x-stranger", cert: strangerCert, key: strangerKey, ca: other.File,
			routeUser: c.routeUser, routePassword: c.routePassword},
	}
	what := map[string]string{
		"x-nopass":    "a node with a certificate of the CA and no route password",
		"x-wrongpass": "a node with a certificate of the CA and a wrong route password",
		"x-stranger":  "a node with the route password and another CA's certificate",
	}
	for name, o := range intruders {
		n := &natsNode{name: name, env: c.nodeEnv(t, o)}
		n.start(t, server, "")
	}
	member := &natsNode{name: "n4", env: c.nodeEnv(t, natsNodeOptions{name: "n4", routeUser: c.routeUser, routePassword: c.routePassword})}
	member.start(t, server, "")
	deadline := time.Now().Add(30 * time.Second)
	for len(c.routePeers(t, "n4")) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("a fourth node with the route password and a certificate of the CA has routes to %v after 30s, want n1, n2, n3\n%s",
				c.routePeers(t, "n4"), member.p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	for name := range intruders {
		if peers := c.routePeers(t, name); len(peers) != 0 {
			t.Errorf("%s has routes to %v, want none", what[name], peers)
		}
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if peers := c.routePeers(t, n); !slices.Equal(peers, without([]string{"n1", "n2", "n3", "n4"}, n)) {
			t.Errorf("node %s has routes to %v, want its two peers and n4", n, peers)
		}
	}
}

// without is names less one.
func without(names []string, name string) []string {
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}
