package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/ort"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/registry"
	"github.com/exocortex/exocortex/workers/source"
)

type stageStatus struct {
	Stage        string `json:"stage"`
	Pending      uint64 `json:"pending"`
	AckPending   int    `json:"ack_pending"`
	Acked        int64  `json:"acked"`
	Retried      int64  `json:"retried"`
	DeadLettered uint64 `json:"dead_lettered"`
	// Serving says that a worker of the stage is attached (its consumer
	// has pull requests waiting), in up or in a worker process.
	Serving bool `json:"serving"`
}

type statusReport struct {
	Running bool `json:"running"`
	// Workers counts the stages a worker serves, wherever it runs: a
	// cluster of 'exocortex worker' processes without up shows here.
	Workers   int           `json:"workers"`
	NATS      string        `json:"nats,omitempty"`
	Stages    []stageStatus `json:"stages"`
	Documents int           `json:"documents"`
	Chunks    int           `json:"chunks"`
	Models    []modelStatus `json:"models"`
	// Embedded counts chunks with a vector of their current content from the
	// installed embedding model.
	Embedded int `json:"embedded"`
	// Search is the fullest retrieval mode the installed models allow.
	Search string `json:"search"`
	// Providers is the language-model providers' health as the running
	// answer stage last reported it (breaker state, recent errors, latency).
	Providers []llm.ProviderHealth `json:"providers,omitempty"`
	// Cache is the answer cache's size and hit rate (absent before the
	// answer stage first ran).
	Cache *answer.CacheStats `json:"answer_cache,omitempty"`
	// Sources are the sources' states as their roles last reported them,
	// each under its own key ("siyuan", "watch": see MarshalJSON).
	Sources []*source.Status `json:"-"`
	// Disk is the embedded JetStream store's disk as the running system's
	// guard sees it (absent with an external NATS server).
	Disk *bus.DiskState `json:"disk,omitempty"`
}

// MarshalJSON writes the report with each source's state under its key.
func (r statusReport) MarshalJSON() ([]byte, error) {
	type plain statusReport
	raw, err := json.Marshal(plain(r))
	if err != nil || len(r.Sources) == 0 {
		return raw, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for _, st := range r.Sources {
		if fields[st.Key], err = json.Marshal(st.Value); err != nil {
			return nil, fmt.Errorf("status of %s: %w", st.Key, err)
		}
	}
	return json.Marshal(fields)
}

type modelStatus struct {
	Role      string `json:"role"`
	Name      string `json:"name"`
	ID        string `json:"id,omitempty"`
	Installed bool   `json:"installed"`
	// Optional models (nli) are fetched only when asked for.
	Optional bool `json:"optional,omitempty"`
}

func cmdStatus(ctx context.Context, args []string) error {
	fs := newFlags("status")
	var c common
	c.register(fs, "warn")
	asJSON := fs.Bool("json", false, "print JSON")
	var n neural
	n.register(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if err := c.requireData(); err != nil {
		return err
	}
	_, running := system.Running(c.data)
	b, _, closeFn, err := system.Attach(ctx, system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	rep, err := collectStatus(ctx, b, c.data, n.models, running, running || c.nats != "")
	if err != nil {
		if d, ok := b.DiskState(ctx); ok && d.Full {
			return fmt.Errorf("%w (disk %s)", err, d.Message())
		}
		return err
	}
	if *asJSON {
		return printJSON(rep)
	}
	state := "not running"
	switch {
	case rep.Running:
		state = "running, NATS " + rep.NATS
	case rep.Workers > 0:
		state = fmt.Sprintf("workers serve %d of %d stages on NATS %s (no exocortex up on this data directory)", rep.Workers, len(rep.Stages), rep.NATS)
	}
	fmt.Printf("exocortex on %s: %s\n", c.data, state)
	if d := rep.Disk; d != nil {
		fmt.Printf("disk: %s\n", d.Message())
	}
	w := len("stage")
	for _, s := range rep.Stages {
		w = max(w, len(s.Stage))
	}
	fmt.Printf("%-*s %10s %12s %10s %10s %14s %8s\n", w, "stage", "pending", "in flight", "acked", "retried", "dead-lettered", "worker")
	for _, s := range rep.Stages {
		serving := "none"
		if s.Serving {
			serving = "yes"
		}
		fmt.Printf("%-*s %10d %12d %10d %10d %14d %8s\n", w, s.Stage, s.Pending, s.AckPending, s.Acked, s.Retried, s.DeadLettered, serving)
	}
	fmt.Printf("indexed: %s, %s, %d with vectors\n", plural(rep.Documents, "document", "documents"), plural(rep.Chunks, "chunk", "chunks"), rep.Embedded)
	for _, m := range rep.Models {
		state := "missing (exocortex models fetch)"
		if m.Optional {
			state = "not installed (optional: exocortex models fetch --with " + m.Role + ")"
		}
		if m.Installed {
			state = "installed " + m.ID
		}
		fmt.Printf("model %-7s %-32s %s\n", m.Role, m.Name, state)
	}
	fmt.Printf("search: %s\n", rep.Search)
	for _, p := range rep.Providers {
		fmt.Printf("llm %-16s breaker %-9s errors %.2f  latency %s  free %v  requests in window %d\n",
			p.Name, p.State, p.ErrorScore, p.LatencyEWMA.Round(time.Millisecond), p.Free, p.WindowRequests)
	}
	for _, st := range rep.Sources {
		for _, line := range st.Lines {
			fmt.Println(line)
		}
	}
	if cs := rep.Cache; cs != nil {
		fmt.Printf("answer cache: %s, hit rate %.1f%% (%s, %s)\n", plural(cs.Entries, "answer", "answers"), 100*cs.HitRate,
			plural(int(cs.Hits), "hit", "hits"), plural(int(cs.Misses), "miss", "misses"))
	}
	return nil
}

// collectStatus is what status prints (and GET /v1/status answers):
// running says a system runs on dataDir, remote that b reaches a running
// system's bus (its NATS address and providers are then shown).
func collectStatus(ctx context.Context, b *bus.Bus, dataDir, modelsFlag string, running, remote bool) (statusReport, error) {
	rep := statusReport{Running: running}
	if remote {
		rep.NATS = b.URL()
	}
	if d, ok := b.DiskState(ctx); ok {
		rep.Disk = &d
	}
	states, err := b.StageStates(ctx, system.StageSpecs())
	if err != nil {
		return rep, err
	}
	dead, err := b.DeadLetterCounts(ctx)
	if err != nil {
		return rep, err
	}
	kv, err := b.KV(ctx, bus.BucketStats)
	if err != nil {
		return rep, err
	}
	totals, err := bus.StageTotals(ctx, kv)
	if err != nil {
		return rep, err
	}
	for _, s := range states {
		t := totals[s.Stage]
		rep.Stages = append(rep.Stages, stageStatus{Stage: s.Stage, Pending: s.Pending, AckPending: s.AckPending,
			Acked: t.Acked, Retried: t.Retried, DeadLettered: dead[s.Stage], Serving: s.Waiting > 0})
		if s.Waiting > 0 {
			rep.Workers++
		}
	}
	rep.Documents, rep.Chunks = countIndexed(ctx, dataDir)
	// The running system's own models and search mode, not this command's
	// flags: up may run with another --models (or --no-models).
	var sys *schemas.SystemSettings
	if remote {
		sys, _ = system.RunningSettings(ctx, b)
	}
	switch {
	case sys != nil && sys.NoModels:
		rep.Search = schemas.ModeLexical + " (the running system has no models: --no-models)"
	case sys != nil:
		rep.Models, rep.Embedded, _ = modelState(ctx, dataDir, sys.ModelsDir)
		rep.Search = sys.Search
	default:
		rep.Models, rep.Embedded, rep.Search = modelState(ctx, dataDir, modelsFlag)
	}
	if remote {
		rep.Providers, _ = system.ProviderHealth(ctx, b)
	}
	// A source's last state stays after it stopped (a refused token
	// stops the bridge, and up with it): shown as stopped then.
	rep.Sources = system.SourceStates(ctx, registry.Catalog(), b)
	if cs, err := answer.ReadCacheStats(ctx, system.CachePath(dataDir)); err == nil {
		rep.Cache = &cs
	}
	return rep, nil
}

// modelState lists the models, counts the chunks embedded by the installed
// embedding model, and names the fullest search mode.
func modelState(ctx context.Context, dataDir, modelsFlag string) ([]modelStatus, int, string) {
	dir := models.DirFromEnv(modelsFlag, dataDir)
	m, err := models.ManifestFor(dir)
	if err != nil {
		return nil, 0, schemas.ModeLexical
	}
	var out []modelStatus
	have := map[string]bool{}
	embedded := 0
	for _, s := range m.Models {
		ms := modelStatus{Role: s.Role, Name: s.Name, Optional: s.Optional}
		if _, err := os.Stat(filepath.Join(dir, s.Name, filepath.FromSlash(s.ONNX))); err == nil {
			ms.Installed, ms.ID = true, models.ID(dir, s)
			have[s.Role] = true
			if s.Role == models.RoleEmbed {
				if st, err := store.OpenReadOnly(system.DBPath(dataDir)); err == nil {
					embedded, _, _ = st.EmbedCounts(ctx, ms.ID)
					st.Close()
				}
			}
		}
		out = append(out, ms)
	}
	mode := schemas.ModeLexical + " (no embedding model)"
	if have[models.RoleEmbed] {
		mode = schemas.ModeHybrid + " (no reranker)"
		if have[models.RoleRerank] {
			mode = schemas.ModeRerank
		}
	}
	if _, err := ort.Find(); err != nil && have[models.RoleEmbed] {
		mode = schemas.ModeLexical + " (ONNX Runtime missing: run ./task setup)"
	}
	return out, embedded, mode
}
