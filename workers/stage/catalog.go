package stage

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// The application's streams.
const (
	StreamIngest   = "KB_INGEST"
	StreamQuery    = "KB_QUERY"
	StreamResearch = "KB_RESEARCH"
)

// The application's KV buckets (the bus's own, KB_STATS, is bus.BucketStats).
const (
	BucketSources = "KB_SOURCES" // source state: document hashes per source path
	BucketChunks  = "KB_CHUNKS"  // chunk manifests per document (the chunk stage's state)
	BucketEmbeds  = "KB_EMBEDS"  // vectors by model and content hash (the embed stage's cache)
	// BucketResearch holds research state: each task's fact list,
	// checkpointed after every document, and the supervisor's record of the
	// findings so far.
	BucketResearch = "KB_RESEARCH_STATE"
	// BucketReports holds finished research reports by research id (with
	// their facts), for research status and research list.
	BucketReports = "KB_RESEARCH_REPORTS"
)

// Streams returns the configuration of the application's streams (the bus
// adds its own dead-letter stream).
func Streams() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		{
			Name:        StreamIngest,
			Description: "Ingest pipeline: document changes, chunks, structure, embeddings",
			Subjects:    []string{"kb.doc.>", "kb.chunk.>", "kb.embed.>"},
			Retention:   jetstream.InterestPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      7 * 24 * time.Hour,
			Duplicates:  5 * time.Minute,
		},
		{
			Name:        StreamQuery,
			Description: "Queries and finished answers",
			Subjects:    []string{"kb.query.>", schemas.SubjectAnswerDone, schemas.SubjectAnswerFollowUps},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      time.Hour,
			Duplicates:  time.Minute,
		},
		{
			Name:        StreamResearch,
			Description: "Deep-research sessions",
			Subjects: []string{schemas.SubjectResearchRequested, schemas.SubjectResearchTask, schemas.SubjectResearchFinding,
				schemas.SubjectResearchDraft, schemas.SubjectResearchReport},
			Retention:  jetstream.LimitsPolicy,
			Storage:    jetstream.FileStorage,
			MaxAge:     7 * 24 * time.Hour,
			Duplicates: 5 * time.Minute,
		},
	}
}

// DefaultEmbedsCache is the largest the embedding cache (BucketEmbeds) is
// sized by itself; the system makes it smaller when JetStream's store is
// small (see internal/system).
const DefaultEmbedsCache = 1 << 30

// Buckets returns the configuration of the application's KV buckets, the
// embedding cache at DefaultEmbedsCache (Catalog.WithBucketMaxBytes sizes it).
func Buckets() []jetstream.KeyValueConfig {
	var out []jetstream.KeyValueConfig
	for _, b := range []string{BucketSources, BucketChunks, BucketEmbeds, BucketResearch, BucketReports} {
		cfg := jetstream.KeyValueConfig{Bucket: b, Storage: jetstream.FileStorage}
		if b == BucketEmbeds {
			// A cache, bounded: when full, new vectors are simply not cached.
			cfg.MaxBytes = DefaultEmbedsCache
			cfg.Description = "embedding cache: vectors by model and content hash"
		}
		out = append(out, cfg)
	}
	return out
}

// Catalog is a build's streams, KV buckets and roles: the stages (bus
// consumers), in pipeline order, and the services (sources, doors).
type Catalog struct {
	Streams  []jetstream.StreamConfig
	Buckets  []jetstream.KeyValueConfig
	Stages   []Declaration
	Services []Declaration
}

// With returns a copy of c with more roles (and the streams they need): a
// declaration with Serve is a service, any other a stage.
func (c Catalog) With(streams []jetstream.StreamConfig, decls ...Declaration) Catalog {
	out := Catalog{
		Streams:  append(append([]jetstream.StreamConfig(nil), c.Streams...), streams...),
		Buckets:  append([]jetstream.KeyValueConfig(nil), c.Buckets...),
		Stages:   slices.Clone(c.Stages),
		Services: slices.Clone(c.Services),
	}
	for _, d := range decls {
		if d.IsService() {
			out.Services = append(out.Services, d)
		} else {
			out.Stages = append(out.Stages, d)
		}
	}
	return out
}

// Roles are c's stages, then its services: every role worker --stage runs.
func (c Catalog) Roles() []Declaration {
	return append(slices.Clone(c.Stages), c.Services...)
}

// RoleNames are the names of c's roles, stages first.
func (c Catalog) RoleNames() []string {
	var out []string
	for _, d := range c.Roles() {
		out = append(out, d.Name)
	}
	return out
}

// WithBucketMaxBytes returns a copy of c whose bucket of that name holds at
// most n bytes.
func (c Catalog) WithBucketMaxBytes(bucket string, n int64) Catalog {
	c.Buckets = slices.Clone(c.Buckets)
	for i := range c.Buckets {
		if c.Buckets[i].Bucket == bucket {
			c.Buckets[i].MaxBytes = n
		}
	}
	return c
}

// Topology is what the bus creates for c.
func (c Catalog) Topology() bus.Topology {
	return bus.Topology{Streams: c.Streams, Stages: c.Specs(), Buckets: c.Buckets}
}

// Specs are the consumer specs of c's stages.
func (c Catalog) Specs() []bus.StageSpec {
	out := make([]bus.StageSpec, len(c.Stages))
	for i, d := range c.Stages {
		out[i] = d.Spec()
	}
	return out
}

// Names are c's stage names, in pipeline order.
func (c Catalog) Names() []string {
	out := make([]string, len(c.Stages))
	for i, d := range c.Stages {
		out[i] = d.Name
	}
	return out
}

// Lookup returns the declaration of a named role (a stage or a service).
func (c Catalog) Lookup(name string) (Declaration, bool) {
	for _, d := range c.Roles() {
		if d.Name == name {
			return d, true
		}
	}
	return Declaration{}, false
}

// Validate joins every problem with the catalog: invalid declarations, two
// stages of one name, a stage on a stream that is not declared.
func (c Catalog) Validate() error {
	var errs []error
	streams := map[string]bool{}
	for _, s := range c.Streams {
		streams[s.Name] = true
	}
	seen := map[string]bool{}
	for _, d := range c.Roles() {
		if err := d.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[d.Name] {
			errs = append(errs, fmt.Errorf("stage %q declared twice", d.Name))
		}
		seen[d.Name] = true
		if d.Stream != "" && !streams[d.Stream] {
			errs = append(errs, fmt.Errorf("stage %q: stream %s is not declared", d.Name, d.Stream))
		}
	}
	return errors.Join(errs...)
}
