// Package system wires the bus, the SQLite store and the stages into a
// running system: every stage in-process (exocortex up, and ingest or eval
// when nothing else runs) or one stage alone (exocortex worker).
package system

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/registry"
	"github.com/exocortex/exocortex/workers/stage"
)

// Config locates the data and the bus.
type Config struct {
	// DataDir holds exocortex.db, nats/ (the embedded JetStream store) and
	// nats.url (the address of a running system).
	DataDir string
	// lock is the data directory's lock when the caller took it already
	// (Attach); Start takes it otherwise, for an embedded server.
	lock *dirLock
	// NATSURL connects to an external NATS server instead of the embedded one.
	NATSURL string
	// Listen is the embedded server's host:port (default 127.0.0.1:4222;
	// port -1 picks a free one). Beyond loopback it needs TLS.Cert and
	// TLS.Key.
	Listen string
	// Creds are NATS credentials given explicitly (flags): a client sends
	// them, the embedded server admits them besides the data directory's
	// own nkey (NKeyFile). Zero: the environment's, else NKeyFile's.
	Creds bus.Credentials
	// TLS: the embedded server's certificate and key (Cert, Key), the CA a
	// client trusts (CA; else EXOCORTEX_NATS_TLS_CA, else, for the system
	// running on DataDir, the certificate it serves, else the system's roots).
	TLS bus.TLSFiles
	// MaxStore bounds the embedded JetStream store in bytes; 0 means the
	// server's own limit, 75% of the free space of the data directory's
	// volume.
	MaxStore int64
	// EmbedsCache bounds the embedding cache (the KB_EMBEDS bucket) in
	// bytes; 0 keeps an existing cache's limit while it fits in the
	// JetStream store, else sizes it from the store's limit (an eighth of
	// it, at most 1 GiB).
	EmbedsCache int64
	// Replicas is how many servers of a NATS cluster hold each stream, KV
	// bucket and object store (see bus.Topology.Replicas): 0 means
	// $EXOCORTEX_REPLICAS, else the existing ones' count (1 for new ones);
	// more than 1 needs an external cluster (NATSURL).
	Replicas int
	// Stages are the roles to run in-process (stages or services, see
	// workers/registry); empty means every stage of the catalog and every
	// service configured in StageConfig.
	Stages []string
	// StagesOnly, with Stages empty, runs the bus stages and no service (a
	// check starts no source of its own).
	StagesOnly bool
	// Catalog is the streams, buckets and stages of the system; nil means
	// this build's (workers/registry.Catalog()).
	Catalog *stage.Catalog
	// StageConfig holds more roles' own configuration values, one per
	// type (Chunk is added to them); a role finds its own with
	// stage.ConfigOf, and a service runs under up when its own is here
	// (a source's kernel or folders).
	StageConfig []any
	// NoStages starts the bus and topology only (status, dlq).
	NoStages bool
	// NoIndexFile runs the stages here without the SQLite file when the
	// vectors are on Qdrant and no stage writes the index: a stage that
	// reads the index only through its Retriever (retrieve, rerank) then
	// searches the collection's lexical vectors, and the graph expansion
	// finds no neighbours. exocortex search sets it on a machine without
	// the index file.
	NoIndexFile bool
	// Workers per stage (default 1; the index stage always has one writer).
	Workers int
	Chunk   chunking.Config
	// Analyzer is the text analysis of the full-text index (plain, stem or
	// full); empty keeps the index's own (full for a new index). Changing it
	// rebuilds the full-text rows when the index stage starts.
	Analyzer analysis.Mode
	// ModelsDir holds the neural models (default <data>/models); NoModels
	// runs lexical-only without looking.
	ModelsDir string
	NoModels  bool
	// Models tunes how the embedding model runs (ONNX Runtime threads, batch
	// budget); Rerank the reranker (zero: models.RerankOptions()).
	Models models.Options
	Rerank models.Options
	// Vectors chooses the vector store (embedded under <data>/vectors by
	// default, or Qdrant); Dim comes from the embedding model's manifest.
	Vectors vectors.Config
	// Calibration is the calibration file of the answer stage's thresholds
	// (written by eval --answers --calibrate; it sets Answer's Calibration
	// and QACalibration): empty means $EXOCORTEX_CALIBRATION, else
	// <data>/calibration.json, used when present; "off" means none.
	Calibration string
	// Retrieval sizes the query stages (defaults: the design's 200/200/80/12/4).
	Retrieval retrieval.Config
	// RerankIdle unloads the reranker after this long unused (default 10m).
	RerankIdle time.Duration
	// LLM lists the language-model providers of the answer stage; nil reads
	// EXOCORTEX_LLM_BASE_URL/_API_KEY/_MODEL, and without them answers are
	// extractive or search-only.
	LLM *llm.Config
	// LLMOptions tune the router (breaker, retries, backoff).
	LLMOptions llm.RouterOptions
	// Answer tunes the answer stage (its deadline, default 60 s, and the
	// rest of answer.Config's defaults).
	Answer answer.Config
	Log    zerolog.Logger
}

// Validate joins every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir is empty"))
	}
	cat := c.StageCatalog()
	if err := cat.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, s := range c.Stages {
		if _, ok := cat.Lookup(s); !ok {
			errs = append(errs, fmt.Errorf("unknown stage %q (known: %s)", s, strings.Join(cat.RoleNames(), ", ")))
		}
	}
	if c.Replicas < 0 {
		errs = append(errs, fmt.Errorf("replicas %d: want 1 or more (0 keeps the existing count)", c.Replicas))
	}
	if c.Replicas > 1 && c.NATSURL == "" {
		errs = append(errs, fmt.Errorf("%d replicas need a NATS cluster (give its URLs with --nats); the embedded server is a single node", c.Replicas))
	}
	if c.Analyzer != "" {
		if _, err := analysis.ParseMode(string(c.Analyzer)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.Chunk.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("chunk: %w", err))
	}
	return errors.Join(errs...)
}

// StageCatalog is the system's streams, buckets and stages: Catalog, or
// this build's when nil.
func (c Config) StageCatalog() stage.Catalog {
	if c.Catalog != nil {
		return *c.Catalog
	}
	return registry.Catalog()
}

// StageNames lists the stages this build runs, in pipeline order.
func StageNames() []string { return registry.Catalog().Names() }

// RoleNames lists every role this build runs: the stages in pipeline
// order, then the services (sources, doors).
func RoleNames() []string { return registry.Catalog().RoleNames() }

// StageSpecs are the consumer specs of the stages this build runs, in
// pipeline order (for status and WaitIdle).
func StageSpecs() []bus.StageSpec { return registry.Catalog().Specs() }

// DBPath is the SQLite index inside a data directory.
func DBPath(dataDir string) string { return filepath.Join(dataDir, "exocortex.db") }

// System is a running set of stages on one bus.
type System struct {
	Bus   *bus.Bus
	Store *store.Store // nil unless a stage here needs it (stage.NeedStore, NeedStoreWrite)
	// Neural parts, nil when absent: the system then runs lexical-only and
	// every query says so in its reasons.
	Vectors   vectors.Store
	Embedder  *models.Embedder
	Reranker  *models.LazyCrossEncoder
	Retriever *retrieval.Retriever
	// Router and Answerer serve the answer stage (Router nil without providers).
	Router   *llm.Router
	Answerer *answer.Answerer
	// Analyzer is the full text analysis (stems, lemmas) the citation
	// verifier uses, for stages that need it.
	Analyzer *analysis.Analyzer
	QA       *models.QA
	// NLI is the optional entailment model, loaded on first use.
	NLI   *models.LazyNLI
	Cache *answer.Cache
	// services are the service roles running here, by name; failed
	// delivers the first error that stopped one.
	services     map[string]stage.Service
	serviceOrder []string
	failed       chan error
	// ModelNotes say which models are missing and what that changes.
	ModelNotes []string
	embedSpec  models.Spec
	llmCfg     *llm.Config
	cfg        Config

	// unmetric removes this system's sources of the scrape-time metrics.
	unmetric []func()

	// storeOptional: the stages here read the SQLite store only for lexical
	// search and passages, which Qdrant's lexical vectors can serve (see
	// stage.NeedLexical).
	storeOptional bool
	lexical       *retrieval.VectorIndex // set when lexical search runs on Qdrant
	// readOnly: the parts of a command's reader (OpenLocal), which leave
	// the data directory as they find it.
	readOnly bool

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopping stopState
	mu       sync.Mutex
	errs     []error
	ownURL   bool
	lock     *dirLock // the data directory's, held while the embedded server runs
}

// Config is the configuration the system was started (or opened) with.
func (s *System) Config() Config { return s.cfg }

// Start opens the bus (embedded unless cfg.NATSURL is set), creates the
// topology, opens the store when the index stage runs here, and starts the
// stages. Stop it with Stop.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if err := cfg.prepare(); err != nil {
		return nil, err
	}
	lock := cfg.lock
	if cfg.NATSURL == "" && lock == nil {
		// A command's embedded server (status with nothing running) holds
		// the store for a moment: wait for it rather than race it.
		var err error
		if lock, err = lockDir(ctx, cfg.DataDir, dataLockWait); err != nil {
			return nil, err
		}
	}
	cfg.lock = nil
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()
	b, cat, err := openTopology(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &System{Bus: b, cfg: cfg, failed: make(chan error, 1), services: map[string]stage.Service{}, lock: lock}
	started = true // from here on Stop releases the lock
	if err := s.announce(cat); err != nil {
		b.Close()
		return nil, err
	}
	stages, services := cfg.roles(cat)
	var needs stage.Needs
	for _, d := range append(slices.Clone(stages), services...) {
		needs |= d.Needs
	}
	s.storeOptional = storeOptional(cfg, stages)
	if err := s.openParts(ctx, needs); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.run(ctx, stages, services, needs); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// prepare fills the defaults Start needs and checks cfg and the data
// directory.
func (cfg *Config) prepare() error {
	if cfg.Chunk == (chunking.Config{}) {
		cfg.Chunk = chunking.DefaultConfig()
	}
	if err := cfg.replicasFromEnv(); err != nil {
		return fmt.Errorf("pipeline config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("pipeline config: %w", err)
	}
	return securePrivateDir(cfg.DataDir, cfg.Log)
}

// openTopology opens the bus and creates the streams and consumers of
// the roles' catalog, sized to the storage.
func openTopology(ctx context.Context, cfg Config) (*bus.Bus, stage.Catalog, error) {
	b, err := openBus(ctx, cfg, "exocortex")
	if err != nil {
		return nil, stage.Catalog{}, err
	}
	cat, err := sizeStorage(ctx, cfg, b, cfg.StageCatalog())
	if err != nil {
		b.Close()
		return nil, stage.Catalog{}, err
	}
	if err := bus.EnsureTopology(ctx, b.JS, cfg.topology(cat)); err != nil {
		b.Close()
		return nil, stage.Catalog{}, err
	}
	return b, cat, nil
}

// announce shows the stages' consumers on /metrics and, for an embedded
// server, writes its TLS certificate and URL file for the commands.
func (s *System) announce(cat stage.Catalog) error {
	b := s.Bus
	// /metrics shows every stage's consumer (those of other processes too).
	specs := cat.Specs()
	metrics.InitStages(cat.Names())
	s.unmetric = append(s.unmetric, metrics.SetStageStates(func(ctx context.Context) ([]bus.StageState, error) {
		return b.StageStates(ctx, specs)
	}))
	s.unmetric = append(s.unmetric, metrics.SetDiskState(b.DiskState))
	if b.Server == nil {
		return nil
	}
	if err := writeTLSCert(s.cfg); err != nil {
		return err
	}
	if err := writePrivate(bus.URLFile(s.cfg.DataDir), []byte(b.Server.ClientURL()+"\n")); err != nil {
		return err
	}
	s.ownURL = true
	return nil
}

// run starts the stages and services, records the settings (a whole
// system), publishes the router's health and backfills missing vectors.
func (s *System) run(ctx context.Context, stages, services []stage.Declaration, needs stage.Needs) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	for _, d := range stages {
		if err := s.startStage(runCtx, d); err != nil {
			return err
		}
	}
	if err := s.answerRequests(runCtx, needs.Has(stage.NeedStoreWrite)); err != nil {
		return err
	}
	if len(s.cfg.Stages) == 0 && !s.cfg.NoStages {
		s.recordSettings(ctx)
	}
	if s.Router != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.publishStat(runCtx, HealthKey, 2*time.Second, func() any { return s.Router.Health() })
		}()
	}
	for _, d := range services {
		if err := s.startService(runCtx, d); err != nil {
			return err
		}
	}
	// The index's writer and the embedder run here: embed what the index
	// holds without a vector of the current model.
	if needs.Has(stage.NeedStoreWrite) && s.Store != nil && s.Embedder != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if _, err := s.Backfill(runCtx); err != nil && runCtx.Err() == nil {
				s.cfg.Log.Error().Err(err).Msg("backfill failed; it runs again at the next start")
			}
		}()
	}
	return nil
}

// deps are the system's parts as role d's constructor sees them.
func (s *System) deps(d stage.Declaration) *stage.Deps {
	return &stage.Deps{
		Stage:     d,
		Config:    s.cfg.roleConfig(),
		Log:       s.cfg.Log.With().Str("stage", d.Name).Logger(),
		Store:     s.Store,
		Vectors:   s.Vectors,
		Embedder:  s.Embedder,
		Retriever: s.Retriever,
		Router:    s.Router,
		Answerer:  s.Answerer,
		Analyzer:  s.Analyzer,
		KV:        s.Bus.KV,
		Publish: func(ctx context.Context, ev schemas.Event, traceID string) error {
			_, err := s.Bus.Publish(ctx, ev, traceID)
			return err
		},
		PublishCore: s.Bus.PublishCore,
		Bus:         s.Bus,
		Stages:      s.cfg.StageCatalog().Specs(),
	}
}

func (s *System) startStage(ctx context.Context, d stage.Declaration) error {
	h, err := d.New(ctx, s.deps(d))
	if err != nil {
		return fmt.Errorf("stage %s: %w", d.Name, err)
	}
	spec := d.Spec()
	opts := bus.RunOptions{Workers: d.Workers(s.cfg.Workers), Batch: d.Batch, Observer: metrics.Stages}
	s.wg.Add(1)
	s.stopping.started(d.Name)
	go func() {
		defer s.wg.Done()
		defer s.stopping.finished(d.Name)
		err := s.Bus.RunStage(ctx, spec, h, opts)
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Stopped while it was starting (opening its consumer or a
			// bucket): a stop, not a failure.
			s.cfg.Log.Debug().Err(err).Str("stage", d.Name).Msg("stage stopped while starting")
			err = nil
		}
		if err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
			s.cfg.Log.Error().Err(err).Str("stage", d.Name).Msg("stage failed")
		}
	}()
	return nil
}

// Stop stops fetching, lets every stage finish the messages in hand, closes
// the store and the bus, and returns the stages' errors.
func (s *System) Stop() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.stopping.at(stepStages)
	s.wg.Wait()
	s.stopping.at("the models and the indexes to close")
	errs := s.closeParts()
	if s.ownURL {
		_ = os.Remove(bus.URLFile(s.cfg.DataDir))
		_ = os.Remove(bus.TLSCertFile(s.cfg.DataDir))
	}
	for _, remove := range s.unmetric {
		remove()
	}
	if s.Bus.Server != nil {
		s.stopping.at("the NATS connection to drain and the embedded NATS server to stop")
	} else {
		s.stopping.at("the NATS connection to drain")
	}
	s.Bus.Close()
	s.lock.release()
	s.stopping.at("nothing (stopped)")
	s.mu.Lock()
	errs = append(errs, s.errs...)
	s.mu.Unlock()
	return errors.Join(errs...)
}

// lexSaveBudget bounds the lexical snapshot's catch-up and save at stop.
const lexSaveBudget = 10 * time.Second

// closeParts closes the models, the caches, the vector store and the
// index. The memory lexical index, when loaded here, saves its snapshot
// first, so that the next process to search loads it as it is now.
func (s *System) closeParts() []error {
	var errs []error
	if s.Reranker != nil {
		_ = s.Reranker.Close()
	}
	if s.NLI != nil {
		_ = s.NLI.Close()
	}
	if s.QA != nil {
		_ = s.QA.Close()
	}
	if s.Cache != nil {
		_ = s.Cache.Close()
	}
	if s.Embedder != nil {
		_ = s.Embedder.Close()
	}
	if s.Vectors != nil {
		if err := s.Vectors.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Store != nil {
		if !s.readOnly {
			s.stopping.at("the lexical index to catch up with the index and save its snapshot")
			// Bounded: up has a stop timeout (15 s by default) for
			// everything; past the budget the next start replays instead.
			ctx, cancel := context.WithTimeout(context.Background(), lexSaveBudget)
			if err := s.Store.SaveLexSnapshot(s.cfg.Log.WithContext(ctx)); err != nil {
				s.cfg.Log.Warn().Err(err).Msg("lexical snapshot not saved at stop: the next start replays or rebuilds the lexical index")
			}
			cancel()
		}
		if err := s.Store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Running returns the NATS URL of a system running on dataDir, if one answers.
func Running(dataDir string) (string, bool) {
	raw, err := os.ReadFile(bus.URLFile(dataDir))
	if err != nil {
		return "", false
	}
	url := strings.TrimSpace(string(raw))
	if url == "" {
		return "", false
	}
	if !bus.Reachable(url) {
		return "", false
	}
	return url, true
}
