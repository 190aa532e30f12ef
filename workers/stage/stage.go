// Package stage is how a worker package declares its stage: its name, the
// stream and subjects it consumes, the subjects it produces, its consumer
// settings, the parts of the system it needs and a constructor from the
// system's dependencies. The bus builds streams and consumers from the
// declarations it is given (Catalog.Topology); the system (internal/system)
// opens the parts the running stages need and calls their constructors; the
// CLI (up, worker --stage, status, dlq, ingest's and eval's waits) reads the
// same list. A service role (a source such as the SiYuan bridge, a door
// such as the HTTP gateway) is declared the same way with Serve instead of
// New. The registry of this build's roles is workers/registry.
package stage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/source"
)

// Needs says which parts of the system a stage uses; the system opens the
// union of what the stages running in the process need, and nothing else.
type Needs uint

const (
	// NeedStore opens the SQLite index read-only (a reader stage).
	NeedStore Needs = 1 << iota
	// NeedStoreWrite opens the SQLite index for writing (the single writer:
	// run it with MaxConcurrency 1).
	NeedStoreWrite
	// NeedEmbedder loads the embedding model when installed.
	NeedEmbedder
	// NeedVectors opens the vector store (embedded or Qdrant) when an
	// embedding model is configured.
	NeedVectors
	// NeedReranker prepares the (lazily loaded) cross-encoder when installed.
	NeedReranker
	// NeedRetriever builds a retrieval.Retriever over what is open (store,
	// vectors and embedder, reranker, the router's reformulation and
	// translation). Combine it with the parts it should use.
	NeedRetriever
	// NeedRouter opens the language-model router when providers are
	// configured (Deps.Router stays nil without).
	NeedRouter
	// NeedAnswerer builds the answerer (semantic cache, extractive model,
	// router); it implies NeedRouter and NeedAnalyzer.
	NeedAnswerer
	// NeedAnalyzer gives Deps.Analyzer (full analysis: stemming and
	// lemmas), the one the citation verifier uses.
	NeedAnalyzer
	// NeedLexical, beside NeedStore, says the stage reads the store only
	// through its Retriever's lexical search and passages: with a Qdrant
	// collection that holds the chunks' lexical vectors, a process whose
	// stages all say so runs without the SQLite file (the retriever then
	// searches Qdrant; Deps.Store is nil).
	NeedLexical
)

// Has reports whether n includes every part of want.
func (n Needs) Has(want Needs) bool { return n&want == want }

// Any reports whether n includes any part of want.
func (n Needs) Any(want Needs) bool { return n&want != 0 }

// Declaration is one stage, declared once in its worker package.
type Declaration struct {
	// Name is the stage's name: its durable consumer, its dead letters'
	// subject (kb.dlq.<name>), worker --stage NAME.
	Name string
	// Stream holds the stage's input subjects.
	Stream string
	// Inputs are the subjects it consumes (wildcards allowed).
	Inputs []string
	// Outputs are the subjects it publishes (documentation, status and
	// checks; the bus publishes on each event's registered subject).
	Outputs []string
	// AckWait, MaxDeliver, MaxAckPending: the consumer's settings (zero:
	// the bus's defaults, 30 s, 5, 1000).
	AckWait       time.Duration
	MaxDeliver    int
	MaxAckPending int
	// Concurrency is the least number of workers of the stage in one
	// process (zero: the system's --workers, default 1); MaxConcurrency the
	// most (1 for the SQLite writer; zero: no bound).
	Concurrency    int
	MaxConcurrency int
	// Batch is how many messages a worker fetches at once (zero: the bus's
	// default, 32; a BatchHandler gets them together).
	Batch int
	// Needs are the parts of the system the constructor uses.
	Needs Needs
	// New builds the stage's handler from the system's parts.
	New func(ctx context.Context, d *Deps) (bus.Handler, error)

	// A service role (a source, a door) consumes no subject: Serve builds
	// it instead of New, and it runs until the system stops (see role.go).
	Serve func(ctx context.Context, d *Deps) (Service, error)
	// Kind is the role's kind (empty: KindStage).
	Kind Kind
	// Enabled says whether up runs the service with the configuration in
	// d.Config (a source's kernel URL or folders, a door's address); nil
	// runs it always. worker --stage NAME runs it when asked, and its
	// constructor says what is missing.
	Enabled func(d *Deps) bool
	// Source, on a source role, opens the source as check, repair, status
	// and metrics see it (workers/source); d.Config holds what check was
	// given (a kernel to compare), d.Publish sends with check's trace.
	Source func(ctx context.Context, d *Deps) (source.Source, error)
}

// Spec is the declaration's consumer spec for the bus.
func (d Declaration) Spec() bus.StageSpec {
	return bus.StageSpec{Name: d.Name, Stream: d.Stream, Filters: slices.Clone(d.Inputs),
		AckWait: d.AckWait, MaxDeliver: d.MaxDeliver, MaxAckPending: d.MaxAckPending}
}

// Workers is how many workers the stage runs given the system's setting.
func (d Declaration) Workers(configured int) int {
	w := max(configured, 1, d.Concurrency)
	if d.MaxConcurrency > 0 {
		w = min(w, d.MaxConcurrency)
	}
	return w
}

// Validate joins every problem with the declaration.
func (d Declaration) Validate() error {
	if d.IsService() {
		return d.validateService()
	}
	var errs []error
	if d.Name == "" {
		errs = append(errs, errors.New("stage without a name"))
	}
	if d.Stream == "" {
		errs = append(errs, fmt.Errorf("stage %q: no stream", d.Name))
	}
	if len(d.Inputs) == 0 {
		errs = append(errs, fmt.Errorf("stage %q: no input subjects", d.Name))
	}
	if d.New == nil {
		errs = append(errs, fmt.Errorf("stage %q: no constructor", d.Name))
	}
	return errors.Join(errs...)
}

// Deps are the system's parts a constructor takes what it needs from. A
// part the stage did not declare in Needs may be nil; a part it declared is
// nil only when it is absent (no model installed, no provider configured),
// and the stage then works without it.
type Deps struct {
	// Stage is the declaration being built.
	Stage Declaration
	// Config holds the stages' own configuration values, one per type (a
	// chunking.Config, a research config...); a stage finds its own with
	// ConfigOf and uses its defaults when there is none.
	Config []any
	Log    zerolog.Logger

	Store     *store.Store
	Vectors   vectors.Store
	Embedder  *models.Embedder // nil without an installed embedding model
	Retriever *retrieval.Retriever
	Router    *llm.Router // nil without a language-model provider
	Answerer  *answer.Answerer
	Analyzer  *analysis.Analyzer

	// KV opens a KV bucket by name (the declared buckets: BucketChunks,
	// BucketEmbeds, BucketResearch, BucketReports...).
	KV func(ctx context.Context, bucket string) (bus.KV, error)
	// Publish publishes an event on its stream now (before the handler
	// returns); PublishCore sends one on core NATS (tokens, progress).
	Publish     func(ctx context.Context, ev schemas.Event, traceID string) error
	PublishCore func(ev schemas.Event, traceID string) error
	// Bus is the connection itself, for what the functions above do not
	// cover (a KV update with a revision check through Bus.JS, say).
	Bus *bus.Bus
	// Stages are the consumers of the system's stages, in pipeline order
	// (its catalog's specs): what a door's readiness check looks at.
	Stages []bus.StageSpec
}

// ConfigOf returns the first value of type T in d.Config, or def when
// there is none.
func ConfigOf[T any](d *Deps, def T) T {
	for _, c := range d.Config {
		if v, ok := c.(T); ok {
			return v
		}
	}
	return def
}
