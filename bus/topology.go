package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/schemas"
)

// StreamDLQ is the bus's dead-letter stream (kb.dlq.<stage>).
const StreamDLQ = "KB_DLQ"

// BucketStats is the bus's KV bucket of per-stage counters, flushed by
// running stages.
const BucketStats = "KB_STATS"

// dlqMaxAge is how long dead letters (and their large bodies) are kept.
const dlqMaxAge = 90 * 24 * time.Hour

// dlqStream is the dead-letter stream's configuration.
func dlqStream() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamDLQ,
		Description: "Dead letters: poison messages with reason, stage, subject, delivery count",
		Subjects:    []string{schemas.SubjectDLQPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      dlqMaxAge,
		Duplicates:  time.Hour,
	}
}

// Topology is what EnsureTopology creates: the application's streams, the
// durable consumer of each stage and its KV buckets. The bus adds its own
// dead-letter stream, stats bucket and object stores; it knows no stage or
// stream of the application (those are declared in workers/, see
// workers/stage).
type Topology struct {
	Streams []jetstream.StreamConfig
	Stages  []StageSpec
	Buckets []jetstream.KeyValueConfig
	// Replicas is how many servers of a NATS cluster hold each stream, KV
	// bucket and object store (and so each consumer, which follows its
	// stream). 0 keeps what an existing one has and creates new ones with
	// 1, so that a command run without it does not undo a replica count
	// set by another; N > 0 creates new ones with N and changes existing
	// ones to N (JetStream moves the data). More than 1 needs a cluster of
	// at least that many JetStream servers.
	Replicas int
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

// EnsureTopology creates (or updates) every stream of t and the bus's
// dead-letter stream, the durable consumer of every stage of t, t's KV
// buckets and the bus's own, and the object stores. It is idempotent and
// safe to call from every process at start; consumers must exist before
// anything is published, since an interest-retention stream keeps a message
// only while a consumer is interested in it.
func EnsureTopology(ctx context.Context, js jetstream.JetStream, t Topology) error {
	if t.Replicas < 0 {
		return fmt.Errorf("topology: %d replicas: want 1 or more (0 keeps the existing count)", t.Replicas)
	}
	var errs []error
	for _, cfg := range append(slices.Clone(t.Streams), dlqStream()) {
		r, err := t.replicas(ctx, js, cfg.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.Replicas = r
		if _, err := declare(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.CreateOrUpdateStream(ctx, cfg) }); err != nil {
			errs = append(errs, fmt.Errorf("stream %s (%d replicas): %w", cfg.Name, r, explainReplicas(err, r)))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, st := range t.Stages {
		if _, err := declare(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			return js.CreateOrUpdateConsumer(ctx, st.Stream, st.consumerConfig())
		}); err != nil {
			errs = append(errs, fmt.Errorf("consumer %s on %s: %w", st.Name, st.Stream, err))
		}
	}
	buckets := append(slices.Clone(t.Buckets), jetstream.KeyValueConfig{Bucket: BucketStats, Storage: jetstream.FileStorage})
	for _, cfg := range buckets {
		r, err := t.replicas(ctx, js, kvStreamPrefix+cfg.Bucket)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.Replicas = r
		if _, err := declare(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return js.CreateOrUpdateKeyValue(ctx, cfg) }); err != nil {
			errs = append(errs, fmt.Errorf("kv bucket %s (%d replicas): %w", cfg.Bucket, r, explainReplicas(err, r)))
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
		r, err := t.replicas(ctx, js, objStreamPrefix+cfg.Bucket)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.Replicas = r
		if _, err := declare(ctx, func(ctx context.Context) (jetstream.ObjectStore, error) {
			return js.CreateOrUpdateObjectStore(ctx, cfg)
		}); err != nil {
			errs = append(errs, fmt.Errorf("object store %s (%d replicas): %w", cfg.Bucket, r, explainReplicas(err, r)))
		}
	}
	return errors.Join(errs...)
}

// The streams JetStream keeps a KV bucket and an object store in.
const (
	kvStreamPrefix  = "KV_"
	objStreamPrefix = "OBJ_"
)

// replicas is the replica count of the stream named name: t.Replicas when
// set, else the existing stream's, else 1.
func (t Topology) replicas(ctx context.Context, js jetstream.JetStream, name string) (int, error) {
	if t.Replicas > 0 {
		return t.Replicas, nil
	}
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read stream %s's replicas: %w", name, err)
	}
	return max(1, s.CachedInfo().Config.Replicas), nil
}

// ErrReplicasNeedCluster is a replica count the server cannot give: a
// single server (such as the embedded one), or a cluster with fewer
// JetStream servers than replicas.
var ErrReplicasNeedCluster = errors.New("more replicas than the NATS servers can hold: replicas > 1 need a JetStream cluster of at least that many servers")

// JetStream's error codes (nats-server's JSStreamReplicasNotSupportedErr,
// JSClusterNoPeersErrF) that nats.go does not name.
const (
	errCodeReplicasNotSupported jetstream.ErrorCode = 10074 // replicas > 1 not supported in non-clustered mode
	errCodeNoPeers              jetstream.ErrorCode = 10005 // no suitable peers for placement
)

// explainReplicas names the cause of JetStream's refusals of a replica count.
func explainReplicas(err error, replicas int) error {
	var apiErr *jetstream.APIError
	if replicas > 1 && errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeReplicasNotSupported, errCodeNoPeers:
			return fmt.Errorf("%w: %w", ErrReplicasNeedCluster, err)
		}
	}
	return err
}

// TopologyPresent reports whether every stream, stage consumer, KV bucket
// and object store of t (and the bus's own) exists, reading only: a client
// that finds them all leaves them as the running system declared them
// rather than update them at the moment it declares them.
func TopologyPresent(ctx context.Context, js jetstream.JetStream, t Topology) (bool, error) {
	names := []string{StreamDLQ, kvStreamPrefix + BucketStats,
		objStreamPrefix + BucketPayloads, objStreamPrefix + BucketValues, objStreamPrefix + BucketDLQBodies}
	for _, s := range t.Streams {
		names = append(names, s.Name)
	}
	for _, b := range t.Buckets {
		names = append(names, kvStreamPrefix+b.Bucket)
	}
	for _, n := range names {
		_, err := js.Stream(ctx, n)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read stream %s: %w", n, err)
		}
	}
	for _, st := range t.Stages {
		_, err := js.Consumer(ctx, st.Stream, st.Name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read consumer %s on %s: %w", st.Name, st.Stream, err)
		}
	}
	return true, nil
}

// declareAttempts is how often EnsureTopology tries one declaration that
// fails for a transient reason before it gives up.
const declareAttempts = 5

// transientDeclare reports errors that a second try of the same
// declaration clears: JetStream writing a consumer's or stream's state
// file while another declaration of it writes it too ("rename
// .../o.dat.tmp: no such file or directory"), or a cluster between leaders.
func transientDeclare(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, s := range []string{".tmp", "no such file or directory", "leader", "timeout", "deadline exceeded", "no responders"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// declare runs one declaration, again after a pause while it fails for a
// transient reason.
func declare[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	var v T
	var err error
	for i := range declareAttempts {
		if v, err = fn(ctx); err == nil || !transientDeclare(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(time.Duration(50<<i) * time.Millisecond):
		}
	}
	return v, err
}
