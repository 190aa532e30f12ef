package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
)

// Doors benchmark settings: how many requests go at once (the issue's
// load), and how many go one after another for the single-request figure.
const (
	doorsSearches      = 1000
	doorsAsks          = 200
	doorsSingleSearch  = 20
	doorsSingleAsk     = 5
	doorsNotes         = 400
	doorsProviderFirst = 100 * time.Millisecond
	doorsProviderToken = 5 * time.Millisecond
)

// BenchmarkDoors loads the HTTP gateway the way the issue did, through
// the built binary: 'exocortex up --no-models' over a few hundred Russian
// and English notes (lexical retrieval: the plumbing, not a model's cost),
// with the scripted language-model provider answering at a hosted model's
// pace, then
//
//   - through up's own gateway, and
//   - through a separate 'exocortex worker --stage gateway' on up's NATS,
//
// 1,000 searches at once (POST /v1/search) and 200 streamed questions at
// once (POST /v1/ask, server-sent events), each beside the same request
// sent alone. Every request must complete: a failure or a missing done
// event fails the benchmark. It reports p50 and p95 of each (ms) and the
// wall time of each burst. EXOCORTEX_BENCH_SEARCHES and
// EXOCORTEX_BENCH_ASKS change the burst sizes, EXOCORTEX_BENCH_PROVIDER_MS
// the provider's time to its first token (default 100; a search waits for
// it too, translating the question into the notes' other language);
// EXOCORTEX_BENCH_BINARY runs another build (an older one, to compare).
//
//	go test -run '^$' -bench Doors -benchtime 1x -timeout 20m ./cmd/exocortex/
func BenchmarkDoors(b *testing.B) {
	searches, asks := benchEnvInt(b, "EXOCORTEX_BENCH_SEARCHES", doorsSearches), benchEnvInt(b, "EXOCORTEX_BENCH_ASKS", doorsAsks)
	bin := binary
	if v := os.Getenv("EXOCORTEX_BENCH_BINARY"); v != "" {
		bin = v
	}
	data, vault := b.TempDir(), b.TempDir()
	writeDoorsNotes(b, vault, doorsNotes)
	if out, err := benchExo(bin, nil, "ingest", vault, "--data", data, "--no-models", "--quiet").CombinedOutput(); err != nil {
		b.Fatalf("ingest: %v\n%s", err, out)
	}
	srv := llmtest.NewScripted(b, llmtest.ScriptOptions{})
	srv.Always(llmtest.Delay(time.Duration(benchEnvInt(b, "EXOCORTEX_BENCH_PROVIDER_MS", int(doorsProviderFirst/time.Millisecond))) * time.Millisecond))
	srv.SetTokenDelay(doorsProviderToken)
	llmEnv := []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m"}

	upAddr := benchStart(b, benchExo(bin, llmEnv, "up", "--data", data, "--listen", "127.0.0.1:-1", "--no-models",
		"--http", "127.0.0.1:0", "--log-level", "error"))
	natsURL, err := os.ReadFile(filepath.Join(data, "nats.url"))
	if err != nil {
		b.Fatal(err)
	}
	gwAddr := benchStart(b, benchExo(bin, nil, "worker", "--stage", "gateway", "--nats", strings.TrimSpace(string(natsURL)),
		"--data", data, "--http", "127.0.0.1:0", "--log-level", "error"))

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(searches, asks), MaxConnsPerHost: max(searches, asks)}}
	var table strings.Builder
	fmt.Fprintf(&table, "%-14s %-13s %6s %9s %9s %9s %9s %9s\n", "door", "request", "n", "alone p50", "p50", "p95", "max", "wall")
	for it := 0; it < b.N; it++ {
		for _, door := range []struct{ name, addr string }{{"up", upAddr}, {"gateway-worker", gwAddr}} {
			d := &doorRun{b: b, client: client, base: "http://" + door.addr}
			d.run(fmt.Sprintf("warm %d", it), 5, false, 1) // the first requests open connections and caches
			alone := d.run("search alone", doorsSingleSearch, false, 1)
			burst := d.run("search burst", searches, false, searches)
			row(&table, b, door.name, "search", alone, burst)
			alone = d.run("ask alone", doorsSingleAsk, true, 1)
			burst = d.run("ask burst", asks, true, asks)
			row(&table, b, door.name, "ask", alone, burst)
			first := doorTimes{took: burst.first, wall: burst.wall}
			row(&table, b, door.name, "ask 1st token", doorTimes{took: alone.first}, first)
		}
	}
	b.StopTimer()
	b.Logf("%d searches and %d streamed questions at once, each door (ms):\n%s", searches, asks, table.String())
}

// row writes a line of the table and reports its figures.
func row(w io.Writer, b *testing.B, door, what string, alone, burst doorTimes) {
	fmt.Fprintf(w, "%-14s %-13s %6d %9.0f %9.0f %9.0f %9.0f %9.0f\n", door, what, len(burst.took),
		pctMS(alone.took, 50), pctMS(burst.took, 50), pctMS(burst.took, 95), pctMS(burst.took, 100), ms(burst.wall))
	name := door + "-" + strings.ReplaceAll(what, " ", "-")
	b.ReportMetric(pctMS(alone.took, 50), name+"-alone-p50-ms")
	b.ReportMetric(pctMS(burst.took, 50), name+"-p50-ms")
	b.ReportMetric(pctMS(burst.took, 95), name+"-p95-ms")
}

// doorRun sends requests to one gateway.
type doorRun struct {
	b      *testing.B
	client *http.Client
	base   string
	n      int // requests sent, for distinct questions
}

// doorTimes are the latencies of the requests of a run (from sending to
// the response, or to the done event of a stream), and of their first
// token.
type doorTimes struct {
	took, first []time.Duration
	wall        time.Duration
}

// run sends n requests, at most conc at once, and fails the benchmark
// unless every one completes.
func (d *doorRun) run(what string, n int, ask bool, conc int) doorTimes {
	var (
		mu   sync.Mutex
		out  doorTimes
		errs []string
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, conc)
	start := time.Now()
	for range n {
		d.n++
		i := d.n
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			took, first, err := d.one(i, ask)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			out.took = append(out.took, took)
			if ask {
				out.first = append(out.first, first)
			}
		}()
	}
	wg.Wait()
	out.wall = time.Since(start)
	if len(errs) > 0 {
		slices.Sort(errs)
		d.b.Fatalf("%s at %s: %d of %d failed in %s; e.g. %s", what, d.base, len(errs), n, out.wall.Round(time.Millisecond),
			strings.Join(errs[:min(3, len(errs))], " | "))
	}
	return out
}

// doorsQuestions are asked in turn, in Russian and English, each with a
// number of its own (no answer comes from a cache).
var doorsQuestions = []string{
	"Что вороны используют, чтобы доставать еду? (%d)",
	"What do crows use to get food? (%d)",
	"Как ухаживать за томатами в теплице? (%d)",
	"How deep should tomatoes be watered? (%d)",
}

func (d *doorRun) one(i int, ask bool) (took, first time.Duration, err error) {
	q := fmt.Sprintf(doorsQuestions[i%len(doorsQuestions)], i)
	path, body := "/v1/search", fmt.Sprintf(`{"query":%q,"k":10}`, q)
	if ask {
		path, body = "/v1/ask", fmt.Sprintf(`{"question":%q}`, q)
	}
	start := time.Now()
	resp, err := d.client.Post(d.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return 0, 0, fmt.Errorf("%s %d: %s", path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if !ask {
		raw, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Contains(raw, []byte(`"results"`)) {
			return 0, 0, fmt.Errorf("%s: %v %.200s", path, err, raw)
		}
		return time.Since(start), 0, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			switch event {
			case "token":
				if first == 0 {
					first = time.Since(start)
				}
			case "done":
				return time.Since(start), first, nil
			case "error":
				return 0, 0, fmt.Errorf("%s: error event %s", path, line)
			}
		}
	}
	return 0, 0, fmt.Errorf("%s: the stream ended without a done event (%v)", path, sc.Err())
}

func pctMS(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return ms(s[min(len(s)-1, int(p/100*float64(len(s))))])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// benchExo is a command of bin with env added (EXOCORTEX_DATA and
// EXOCORTEX_NATS cleared first).
func benchExo(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS="), env...)
	return cmd
}

// benchStart starts a serving command, stops it when the benchmark ends,
// and returns its gateway's address once it is there.
func benchStart(b *testing.B, cmd *exec.Cmd) string {
	b.Helper()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if m := httpLine.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("%s: no gateway address in: %s", strings.Join(cmd.Args, " "), stderr.String())
	return ""
}

// writeDoorsNotes writes n Markdown notes, Russian and English in turn,
// about crows, tomatoes and other things, so a search has real postings
// to read.
func writeDoorsNotes(b *testing.B, dir string, n int) {
	b.Helper()
	topics := []string{
		"# Вороны %d\n\nВороны используют палочки и крючки, чтобы доставать еду из щелей. Заметка %d о птицах и их орудиях.\n\n## Наблюдения\n\nВ парке вороны бросали орехи на дорогу, чтобы машины их раскололи.\n",
		"# Crows %d\n\nCrows use sticks and hooks to get food out of cracks. Note %d on birds and their tools.\n\n## Observations\n\nIn the park, crows dropped nuts on the road for cars to crack.\n",
		"# Томаты %d\n\nТоматы в теплице поливают глубоко и редко, утром. Заметка %d об огороде.\n\n## Вредители\n\nТля прячется под листьями.\n",
		"# Tomatoes %d\n\nTomatoes need full sun and deep, rare watering in the morning. Note %d on the garden.\n\n## Pests\n\nAphids hide under the leaves.\n",
	}
	for i := range n {
		text := fmt.Sprintf(topics[i%len(topics)], i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%04d.md", i)), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
