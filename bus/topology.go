package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/schemas"
)

// Stream names.
const (
	StreamIngest   = "KB_INGEST"
	StreamQuery    = "KB_QUERY"
	StreamResearch = "KB_RESEARCH"
	StreamDLQ      = "KB_DLQ"
)

// KV buckets.
const (
	BucketSources = "KB_SOURCES" // source state: document hashes per source path
	BucketChunks  = "KB_CHUNKS"  // chunk manifests per document (the chunk stage's state)
	BucketStats   = "KB_STATS"   // per-stage counters, flushed by running stages
	BucketEmbeds  = "KB_EMBEDS"  // vectors by model and content hash (the embed stage's cache)
	// BucketResearch holds research state: each task's fact list,
	// checkpointed after every document, and the supervisor's record of the
	// findings so far.
	BucketResearch = "KB_RESEARCH_STATE"
	// BucketReports holds finished research reports by research id (with
	// their facts), for research status and research list.
	BucketReports = "KB_RESEARCH_REPORTS"
)

// dlqMaxAge is how long dead letters (and their large bodies) are kept.
const dlqMaxAge = 90 * 24 * time.Hour

// Streams returns the configuration of every stream the system uses.
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
		{
			Name:        StreamDLQ,
			Description: "Dead letters: poison messages with reason, stage, subject, delivery count",
			Subjects:    []string{schemas.SubjectDLQPrefix + ">"},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      dlqMaxAge,
			Duplicates:  time.Hour,
		},
	}
}

// StageSpec describes one stage's durable pull consumer.
type StageSpec struct {
	Name    string
	Stream  string
	Filters []string
	// AckWait is how long a delivery may stay unacknowledged before JetStream
	// redelivers it (in-progress acks extend it for slow handlers).
	AckWait time.Duration
	// MaxDeliver is the number of deliveries before a message is dead-lettered.
	MaxDeliver int
	// MaxAckPending bounds the unacknowledged messages in flight.
	MaxAckPending int
}

// Stage names.
const (
	StageChunk    = "chunk"
	StageIndex    = "index"
	StageEmbed    = "embed"
	StageRetrieve = "retrieve"
	StageRerank   = "rerank"
	StageAnswer   = "answer"
)

// Stages returns the specs of the stages this build knows.
func Stages() []StageSpec {
	return []StageSpec{
		{Name: StageChunk, Stream: StreamIngest, Filters: []string{schemas.SubjectDocChanged}},
		{Name: StageIndex, Stream: StreamIngest, Filters: []string{schemas.SubjectChunkCreated, schemas.SubjectDocStructure, schemas.SubjectEmbedDone}},
		// A model run over a batch of passages can take a while on two cores.
		{Name: StageEmbed, Stream: StreamIngest, Filters: []string{schemas.SubjectChunkCreated, schemas.SubjectEmbedRequest},
			AckWait: 2 * time.Minute, MaxAckPending: 256},
		{Name: StageRetrieve, Stream: StreamQuery, Filters: []string{schemas.SubjectQuery}, AckWait: 30 * time.Second},
		{Name: StageRerank, Stream: StreamQuery, Filters: []string{schemas.SubjectRetrieved}, AckWait: time.Minute},
		// An answer waits on a language model: minutes at worst, with retries.
		{Name: StageAnswer, Stream: StreamQuery, Filters: []string{schemas.SubjectReranked}, AckWait: 3 * time.Minute, MaxDeliver: 2},
	}
}

// LookupStage returns the spec of a named stage.
func LookupStage(name string) (StageSpec, bool) {
	for _, s := range Stages() {
		if s.Name == name {
			return s, true
		}
	}
	return StageSpec{}, false
}

func (s StageSpec) withDefaults() StageSpec {
	if s.AckWait == 0 {
		s.AckWait = 30 * time.Second
	}
	if s.MaxDeliver == 0 {
		s.MaxDeliver = 5
	}
	if s.MaxAckPending == 0 {
		s.MaxAckPending = 1000
	}
	return s
}

func (s StageSpec) consumerConfig() jetstream.ConsumerConfig {
	s = s.withDefaults()
	cfg := jetstream.ConsumerConfig{
		Durable:       s.Name,
		Description:   "stage " + s.Name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.AckWait,
		MaxDeliver:    s.MaxDeliver,
		MaxAckPending: s.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if len(s.Filters) == 1 {
		cfg.FilterSubject = s.Filters[0]
	} else {
		cfg.FilterSubjects = s.Filters
	}
	return cfg
}

// EnsureTopology creates (or updates) every stream, the durable consumer of
// every stage and the KV buckets. It is idempotent and safe to call from every
// process at start; consumers must exist before anything is published, since
// KB_INGEST keeps a message only while a consumer is interested in it.
func EnsureTopology(ctx context.Context, js jetstream.JetStream, stages []StageSpec) error {
	var errs []error
	for _, cfg := range Streams() {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			errs = append(errs, fmt.Errorf("stream %s: %w", cfg.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, st := range stages {
		if _, err := js.CreateOrUpdateConsumer(ctx, st.Stream, st.consumerConfig()); err != nil {
			errs = append(errs, fmt.Errorf("consumer %s on %s: %w", st.Name, st.Stream, err))
		}
	}
	for _, b := range []string{BucketSources, BucketChunks, BucketStats, BucketEmbeds, BucketResearch, BucketReports} {
		cfg := jetstream.KeyValueConfig{Bucket: b, Storage: jetstream.FileStorage}
		if b == BucketEmbeds {
			// A cache, bounded: when full, new vectors are simply not cached.
			cfg.MaxBytes = 1 << 30
			cfg.Description = "embedding cache: vectors by model and content hash"
		}
		if _, err := js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
			errs = append(errs, fmt.Errorf("kv bucket %s: %w", b, err))
		}
	}
	for _, cfg := range []jetstream.ObjectStoreConfig{
		{Bucket: BucketPayloads, Storage: jetstream.FileStorage, TTL: payloadMaxAge,
			Description: "message bodies too large for one NATS message"},
		{Bucket: BucketValues, Storage: jetstream.FileStorage,
			Description: "KV values too large for one NATS message"},
		{Bucket: BucketDLQBodies, Storage: jetstream.FileStorage, TTL: dlqMaxAge,
			Description: "bodies of dead letters too large for one NATS message"},
	} {
		if _, err := js.CreateOrUpdateObjectStore(ctx, cfg); err != nil {
			errs = append(errs, fmt.Errorf("object store %s: %w", cfg.Bucket, err))
		}
	}
	return errors.Join(errs...)
}
