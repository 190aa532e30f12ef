package system

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/stage"
)

// CachePath is the answer stage's semantic cache database.
func CachePath(dataDir string) string { return filepath.Join(dataDir, "answers.db") }

// VectorsDir is where the embedded vector store of a model lives: one
// directory per embedding model, so a model swap starts a fresh index.
func VectorsDir(dataDir, model string) string { return filepath.Join(dataDir, "vectors", model) }

// openParts opens what the stages that run here need (the union of their
// declared needs): the SQLite store, the language-model router and the
// answerer, the embedding model, the vector store, the reranker, the
// retriever over them.
func (s *System) openParts(ctx context.Context, needs stage.Needs) error {
	if err := s.openStore(ctx, needs); err != nil {
		return err
	}
	var err error
	if needs.Any(stage.NeedAnalyzer | stage.NeedAnswerer) {
		if s.Analyzer, err = analysis.New(analysis.Full); err != nil {
			return err
		}
	}
	if needs.Any(stage.NeedRouter | stage.NeedAnswerer) {
		if err := s.openRouter(); err != nil {
			return err
		}
	}
	if needs.Has(stage.NeedAnswerer) {
		if err := s.openAnswer(); err != nil {
			return err
		}
	}
	if !needs.Any(stage.NeedStoreWrite | stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker | stage.NeedRetriever) {
		return nil
	}
	if s.cfg.NoModels {
		s.ModelNotes = append(s.ModelNotes, "models disabled: lexical search only")
	} else if needs.Any(stage.NeedStoreWrite | stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker) {
		if err := s.openModels(needs.Has(stage.NeedEmbedder), needs.Has(stage.NeedReranker)); err != nil {
			return err
		}
	}
	for _, n := range s.ModelNotes {
		s.cfg.Log.Warn().Str("models", s.modelsDir()).Msg(n)
	}
	// A reader without the embedding model has no use for the vectors
	// (unless lexical search runs on them: storeOptional).
	useless := s.readOnly && s.Embedder == nil && !s.storeOptional
	if s.vectorDim() > 0 && needs.Has(stage.NeedVectors) && !useless {
		if err := s.openVectors(ctx); err != nil {
			return err
		}
	}
	if s.storeOptional {
		if err := s.lexicalOnVectors(); err != nil {
			return err
		}
	}
	s.Retriever = s.retriever(ctx, needs)
	return nil
}

// openStore opens the SQLite store as the stages here need it: for
// writing (with its analyzer settled), read-only, untouched, or not at all.
func (s *System) openStore(ctx context.Context, needs stage.Needs) error {
	var err error
	switch {
	case needs.Has(stage.NeedStoreWrite):
		if err := createPrivate(DBPath(s.cfg.DataDir)); err != nil {
			return fmt.Errorf("open index: %w", err)
		}
		s.Store, err = store.Open(DBPath(s.cfg.DataDir))
	case needs.Has(stage.NeedStore) && !s.storeOptional && s.readOnly:
		s.Store, err = store.OpenUntouched(DBPath(s.cfg.DataDir))
	case needs.Has(stage.NeedStore) && !s.storeOptional:
		s.Store, err = store.OpenReadOnly(DBPath(s.cfg.DataDir))
	}
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	if needs.Has(stage.NeedStoreWrite) {
		if err := s.useAnalyzer(ctx); err != nil {
			return err
		}
		if n, err := s.Store.ChunksWithoutSpans(ctx); err == nil && n > 0 {
			s.cfg.Log.Warn().Int("chunks", n).Msg("chunks indexed before block spans: citations of them point at the chunk's first block " +
				"until their documents are sent again (SiYuan: at the next reconciliation, by itself; Markdown folders: at the next exocortex ingest)")
		}
	}
	return nil
}

// openVectors opens the vector store of the embedding model; a reader
// with nothing embedded yet goes on without one (noted).
func (s *System) openVectors(ctx context.Context) error {
	vc := s.cfg.Vectors
	vc.Dim = s.vectorDim()
	if vc.Kind == "" || vc.Kind == vectors.KindEmbedded {
		vc.Dir = VectorsDir(s.cfg.DataDir, s.embedSpec.Name)
		// The index stage flushes the op log once per batch, before it
		// commits the records of the batch's vectors.
		vc.Embedded.NoSync = true
		vc.Embedded.ReadOnly = s.readOnly
	}
	t := time.Now()
	vs, err := vectors.Open(ctx, vc)
	switch {
	case err != nil && s.readOnly && errors.Is(err, fs.ErrNotExist):
		// Nothing embedded yet: a reader creates no vector store.
		s.ModelNotes = append(s.ModelNotes, "no vectors yet ("+vc.Dir+"): search is lexical until the notes are embedded (exocortex up or ingest embeds them)")
	case err != nil:
		return fmt.Errorf("open vector store: %w", err)
	default:
		s.Vectors = vs
		n, _ := s.Vectors.Count(ctx)
		s.cfg.Log.Info().Str("kind", s.Vectors.Name()).Int("vectors", n).Bool("read_only", s.readOnly).Dur("took", time.Since(t)).Msg("vector store open")
	}
	return nil
}

// retriever is the retriever over the parts opened: the lexical index
// (the store's, or the vectors' lexical one), the vectors and embedder,
// the reranker, and the router's reformulation and translation.
func (s *System) retriever(ctx context.Context, needs stage.Needs) *retrieval.Retriever {
	log := s.cfg.Log
	r := &retrieval.Retriever{Config: s.cfg.Retrieval}
	if s.Router != nil {
		router := s.Router
		r.Reformulate = func(ctx context.Context, q string, h []schemas.Turn) (string, error) {
			return answer.Reformulate(ctx, router, q, h)
		}
		// A question in another language than the notes is also searched
		// translated, when the vectors cannot bridge the languages.
		r.Translate = retrieval.Translator(router)
	}
	if s.Store != nil {
		r.Index = s.Store
		if needs.Has(stage.NeedRetriever) && s.Store.LexicalEngine() == store.LexicalMemory && !s.readOnly {
			// Build the memory lexical index now rather than at the first query.
			go func() {
				t := time.Now()
				if _, err := s.Store.LexicalIndex(context.WithoutCancel(ctx)); err != nil {
					log.Warn().Err(err).Msg("lexical index: built at the first query instead")
					return
				}
				log.Info().Dur("took", time.Since(t)).Msg("lexical index built")
			}()
		}
	} else if s.lexical != nil {
		r.Index = s.lexical
	}
	if s.Vectors != nil && s.Embedder != nil {
		r.Vectors, r.Embedder = s.Vectors, s.Embedder
	}
	if s.Reranker != nil {
		r.Reranker = s.Reranker
	}
	return r
}

func (s *System) modelsDir() string { return models.DirFromEnv(s.cfg.ModelsDir, s.cfg.DataDir) }

func (s *System) vectorDim() int { return s.embedSpec.Dim }

// openModels loads the embedding model (when a stage here embeds) and
// prepares the lazy reranker (when the rerank stage runs here). A missing
// model or runtime is not an error: it is noted, and the system runs with
// what it has.
func (s *System) openModels(wantEmbed, wantRerank bool) error {
	dir := s.modelsDir()
	m, err := models.ManifestFor(dir)
	if err != nil {
		return err
	}
	if spec, ok := m.Spec(models.RoleEmbed); ok {
		s.embedSpec = spec
	}
	if wantEmbed && s.embedSpec.Name != "" {
		e, err := models.OpenEmbedder(dir, s.embedSpec, s.cfg.Models)
		switch {
		case err == nil:
			s.Embedder = e
		case errors.Is(err, models.ErrNotInstalled):
			s.ModelNotes = append(s.ModelNotes, "no embedding model ("+s.embedSpec.Name+"): chunks are not embedded and search is lexical only; run exocortex models fetch")
		default:
			s.ModelNotes = append(s.ModelNotes, "embedding model unavailable: "+err.Error()+"; search is lexical only")
		}
	}
	if spec, ok := m.Spec(models.RoleRerank); ok && wantRerank {
		if _, err := os.Stat(filepath.Join(dir, spec.Name, filepath.FromSlash(spec.ONNX))); err == nil {
			idle := s.cfg.RerankIdle
			if idle == 0 {
				idle = 10 * time.Minute
			}
			ropts := s.cfg.Rerank
			if ropts == (models.Options{}) {
				ropts = models.RerankOptions()
			}
			s.Reranker = models.NewLazyCrossEncoder(dir, spec, ropts, idle)
		} else {
			s.ModelNotes = append(s.ModelNotes, "no reranker model ("+spec.Name+"): results keep the fused order; run exocortex models fetch")
		}
	}
	return nil
}

// Backfill asks the embed stage to embed every chunk the index holds without
// a vector of its current content from the loaded model (after the model was
// installed or changed), logging progress. It returns how many it asked for.
func (s *System) Backfill(ctx context.Context) (int, error) {
	if s.Store == nil || s.Embedder == nil {
		return 0, nil
	}
	model := s.Embedder.Name()
	done, total, err := s.Store.EmbedCounts(ctx, model)
	if err != nil || done == total {
		return 0, err
	}
	log := s.cfg.Log.With().Str("model", model).Logger()
	log.Info().Int("embedded", done).Int("chunks", total).Msg("backfill: embedding the chunks that have no vector")
	pass := time.Now().UTC().Format("20060102T150405.000")
	after, sent := "", 0
	for {
		page, err := s.Store.Unembedded(ctx, model, after, 500)
		if err != nil {
			return sent, err
		}
		if len(page) == 0 {
			break
		}
		evs := make([]schemas.Event, len(page))
		for i, c := range page {
			evs[i] = &schemas.EmbedRequest{Chunk: *c, Model: model, Pass: pass}
		}
		if err := bus.PublishAll(ctx, s.Bus.JS, evs, "backfill-"+pass); err != nil {
			return sent, fmt.Errorf("backfill: %w", err)
		}
		sent += len(page)
		after = page[len(page)-1].ChunkID
		log.Info().Int("requested", sent).Int("missing", total-done).Msg("backfill progress")
	}
	return sent, nil
}

// useAnalyzer switches the full-text index to the configured analyzer,
// rebuilding its rows, when it differs (before the writer stage starts).
func (s *System) useAnalyzer(ctx context.Context) error {
	st := s.Store
	if s.cfg.Analyzer == "" || s.cfg.Analyzer == st.Analyzer().Mode() {
		return nil
	}
	t0 := time.Now()
	s.cfg.Log.Info().Str("from", st.Analyzer().Name()).Str("to", string(s.cfg.Analyzer)).
		Msg("rebuilding the full-text index for another analyzer")
	if err := st.UseAnalyzer(ctx, s.cfg.Analyzer); err != nil {
		return fmt.Errorf("full-text index analyzer %s: %w", s.cfg.Analyzer, err)
	}
	s.cfg.Log.Info().Dur("took", time.Since(t0)).Msg("full-text index rebuilt")
	return nil
}

// storeOptional reports whether the stages decls can run without the SQLite
// file: the vectors are on Qdrant, no stage writes the store, and every
// stage that reads it does so only for lexical search and passages
// (stage.NeedLexical), or only through its Retriever when cfg.NoIndexFile
// says to do without the graph.
func storeOptional(cfg Config, decls []stage.Declaration) bool {
	if cfg.Vectors.Kind != vectors.KindQdrant {
		return false
	}
	reads := false
	for _, d := range decls {
		lexicalOnly := d.Needs.Has(stage.NeedLexical) || (cfg.NoIndexFile && d.Needs.Has(stage.NeedRetriever))
		switch {
		case d.Needs.Has(stage.NeedStoreWrite):
			return false
		case d.Needs.Has(stage.NeedStore) && !lexicalOnly:
			return false
		case d.Needs.Has(stage.NeedStore):
			reads = true
		}
	}
	return reads
}

// lexicalOnVectors sets up lexical search on the Qdrant collection's
// lexical vectors, so that no SQLite file is needed here; when the
// collection has none (or no vector store is open: no embedding model), it
// opens the SQLite file after all, saying why.
func (s *System) lexicalOnVectors() error {
	why := "no vector store is open (no embedding model)"
	if ls, ok := s.Vectors.(vectors.LexicalStore); ok {
		has, reason := ls.HasLexical()
		if has {
			mode := s.cfg.Analyzer
			if mode == "" {
				mode = store.DefaultAnalyzer
			}
			a, err := analysis.New(mode)
			if err != nil {
				return err
			}
			s.lexical = &retrieval.VectorIndex{Store: ls, Analyzer: a}
			s.cfg.Log.Info().Str("vectors", ls.Name()).Str("analyzer", a.Name()).
				Msg("lexical search on the vector store's lexical vectors: this process needs no SQLite file")
			return nil
		}
		why = reason
	}
	s.cfg.Log.Warn().Str("reason", why).Msg("lexical search cannot run on the vector store; opening the SQLite file")
	open := store.OpenReadOnly
	if s.readOnly {
		open = store.OpenUntouched
	}
	st, err := open(DBPath(s.cfg.DataDir))
	if err != nil {
		return fmt.Errorf("open index (lexical search cannot run on the vector store: %s): %w", why, err)
	}
	s.Store = st
	return nil
}

// openRouter opens the language-model router when providers are
// configured (cfg.LLM, else the environment); without, Router stays nil.
func (s *System) openRouter() error {
	cfg := s.cfg.LLM
	if cfg == nil {
		if c, ok := llm.FromEnv(); ok {
			cfg = &c
		}
	}
	s.llmCfg = cfg
	if cfg == nil || len(cfg.Providers) == 0 {
		return nil
	}
	opts := s.cfg.LLMOptions
	if opts.Logger == nil {
		l := s.cfg.Log
		opts.Logger = &l
	}
	if hook := opts.OnAttempt; hook != nil {
		opts.OnAttempt = func(provider, role string, took time.Duration, err error) {
			hook(provider, role, took, err)
			metrics.LLMAttempt(provider, role, took, err)
		}
	} else {
		opts.OnAttempt = metrics.LLMAttempt
	}
	var err error
	if s.Router, err = llm.NewRouter(*cfg, opts); err != nil {
		return err
	}
	s.unmetric = append(s.unmetric, metrics.SetRouter(s.Router.Health))
	metrics.InitProviders(*cfg)
	return nil
}

// openAnswer prepares the answer stage: the answerer over the router (when
// providers are configured), the semantic cache, the extractive model when
// installed.
func (s *System) openAnswer() error {
	s.Answerer = &answer.Answerer{Analyzer: s.Analyzer, Config: s.cfg.Answer}
	if s.Router != nil {
		s.Answerer.Router = s.Router
	} else {
		s.ModelNotes = append(s.ModelNotes, "no language-model provider (EXOCORTEX_LLM_BASE_URL): answers are extractive or search-only")
	}
	// A reader in a command (OpenLocal) opens the cache afterwards, only
	// when an answer can come from it.
	if s.Store != nil && !s.readOnly {
		if err := s.openCache(); err != nil {
			return err
		}
	}
	// The calibrated answer thresholds, when eval --answers --calibrate
	// wrote them.
	if err := LoadCalibration(s.cfg.Calibration, s.cfg.DataDir, &s.Answerer.Config, s.cfg.Log); err != nil {
		return err
	}
	if s.cfg.NoModels {
		return nil
	}
	dir := s.modelsDir()
	m, err := models.ManifestFor(dir)
	if err != nil {
		return err
	}
	if spec, ok := m.Spec(models.RoleQA); ok {
		qa, err := models.OpenQA(dir, spec, s.cfg.Models)
		switch {
		case err == nil:
			s.QA, s.Answerer.QA = qa, qa
		case errors.Is(err, models.ErrNotInstalled):
			s.ModelNotes = append(s.ModelNotes, "no extractive QA model ("+spec.Name+"): without a provider, answers are search-only")
		default:
			s.ModelNotes = append(s.ModelNotes, "extractive QA model unavailable: "+err.Error())
		}
	}
	// The optional entailment model: every claim must be entailed by its
	// block when it is installed.
	if nli, ok := models.InstalledNLI(dir, m, models.Options{}, 10*time.Minute); ok {
		s.NLI, s.Answerer.Entailer = nli, answer.NLIEntailer{Model: nli}
	}
	return nil
}

// openCache opens the answer stage's semantic cache (answers.db, created
// when missing) over the store's chunk hashes.
func (s *System) openCache() error {
	if err := createPrivate(CachePath(s.cfg.DataDir)); err != nil {
		return fmt.Errorf("answer cache: %w", err)
	}
	cache, err := answer.OpenCache(CachePath(s.cfg.DataDir), answer.CacheConfig{},
		func(ctx context.Context, ids []string) (map[string]string, error) {
			st := s.Store // OpenLocal's may be opened again (Local.query)
			out := make(map[string]string, len(ids))
			for _, id := range ids {
				h, err := st.ChunkHash(ctx, id)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				out[id] = h
			}
			return out, nil
		})
	if err != nil {
		return err
	}
	s.Cache, s.Answerer.Cache = cache, cache
	return nil
}

// CalibrationOff, as a calibration path, uses no calibration file.
const CalibrationOff = "off"

// LoadCalibration reads the calibration file (path; empty: the data
// directory's, see answer.CalibrationPath) into the answer config when it
// exists. A file that cannot be read or parsed is an error that names it.
func LoadCalibration(path, dataDir string, cfg *answer.Config, log zerolog.Logger) error {
	if path == CalibrationOff {
		return nil
	}
	if path == "" {
		path = answer.CalibrationPath(dataDir)
	}
	cal, err := answer.LoadCalibrations(path)
	if err != nil {
		return err
	}
	if cal != nil {
		cal.Apply(cfg)
		log.Info().Str("calibration", path).Str("set", cal.Set).Bool("llm", cal.LLM != nil).Bool("qa", cal.QA != nil).
			Msg("answer thresholds calibrated")
	}
	return nil
}

// HealthKey is the KB_STATS key where a running answer stage keeps its
// providers' health (breaker state, error score, latency) for status.
const HealthKey = "llm_health"

// publishStat writes state() as JSON to the KB_STATS key every interval
// until ctx ends, for exocortex status to read with readStat.
func (s *System) publishStat(ctx context.Context, key string, every time.Duration, state func() any) {
	kv, err := s.Bus.KV(ctx, bus.BucketStats)
	if err != nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		putJSON(ctx, kv, key, state())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// putStat writes v as JSON to the KB_STATS key once (also after ctx ended).
func (s *System) putStat(ctx context.Context, key string, v any) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if kv, err := s.Bus.KV(pctx, bus.BucketStats); err == nil {
		putJSON(pctx, kv, key, v)
	}
}

func putJSON(ctx context.Context, kv bus.KV, key string, v any) {
	raw, _ := json.Marshal(v)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = kv.Put(pctx, key, raw)
}

// readStat reads the JSON a running system last wrote to the KB_STATS key
// into out; false when there is none.
func readStat(ctx context.Context, b *bus.Bus, key string, out any) (bool, error) {
	return stage.ReadReport(ctx, b, key, out)
}

// ProviderHealth reads the providers' health a running system last wrote
// (every two seconds; the router itself logs each breaker state change).
func ProviderHealth(ctx context.Context, b *bus.Bus) ([]llm.ProviderHealth, error) {
	var out []llm.ProviderHealth
	_, err := readStat(ctx, b, HealthKey, &out)
	return out, err
}
