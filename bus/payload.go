package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/schemas"
)

// Large payloads travel out of band. A message body (or a KV value) too large
// for the server's max payload is put into the KB_PAYLOADS object store, and
// the message carries a small stub body and the object's name in the
// Exo-Payload-Object header. Stage runners read the object back before the
// handler sees the message, so handlers never know; the object is deleted
// once the only stage interested in the subject has acked or dead-lettered
// the message, and the bucket's max age removes what is left (a message
// several stages read) with the ingest stream's. A dead letter keeps its own
// copy of the body in KB_DLQ_BODIES, as long as KB_DLQ keeps it; a replay
// puts it back. KV values work the same way through KB_VALUES, deleted with
// their key.

// BucketPayloads is the object store for message bodies too large for one
// NATS message (kept as long as KB_INGEST keeps messages); BucketValues the
// one for KV values too large (kept until the key is deleted).
const (
	BucketPayloads = "KB_PAYLOADS"
	BucketValues   = "KB_VALUES"
	// BucketDLQBodies keeps the bodies of dead letters whose message body
	// was an object, as long as KB_DLQ keeps dead letters.
	BucketDLQBodies = "KB_DLQ_BODIES"
)

// HeaderPayloadObject names the KB_PAYLOADS object that holds a message's body.
const HeaderPayloadObject = "Exo-Payload-Object"

// payloadMaxAge bounds how long an out-of-band body is kept (as KB_INGEST).
const payloadMaxAge = 7 * 24 * time.Hour

// payloadStub is the body a message carries when its real body is an object:
// the envelope, so tools that list a stream still see what it was, and the
// object. It does not decode as the event, so a reader that does not fetch
// the object fails loudly rather than reading an empty event.
type payloadStub struct {
	schemas.Envelope
	PayloadObject string `json:"payload_object"`
	PayloadBytes  int    `json:"payload_bytes"`
}

// InlineLimit is the largest body sent inside a message on a connection: the
// server's max payload less room for headers.
func InlineLimit(nc *nats.Conn) int {
	max := int(nc.MaxPayload())
	return max - min(64<<10, max/4)
}

// putObject stores data under name in chunks that fit in a message.
func putObject(ctx context.Context, obs jetstream.ObjectStore, name string, data []byte, inline int) error {
	meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: uint32(min(128<<10, inline))}}
	_, err := obs.Put(ctx, meta, bytes.NewReader(data))
	return err
}

// payloadJS is what offloading needs of a publisher: a full JetStream.
type payloadJS interface {
	Conn() *nats.Conn
	ObjectStore(ctx context.Context, bucket string) (jetstream.ObjectStore, error)
}

// payloadObjectName is the deterministic object name of a message id.
func payloadObjectName(msgID string) string {
	sum := sha256.Sum256([]byte(msgID))
	return "msg-" + hex.EncodeToString(sum[:16])
}

// offload moves msg's body into the object store when it is larger than the
// connection's inline limit. A publisher that is not a full JetStream is left
// alone (and gets the server's max-payload error).
func offload(ctx context.Context, js jetstream.Publisher, msg *nats.Msg, env schemas.Envelope, msgID string) error {
	p, ok := js.(payloadJS)
	if !ok || len(msg.Data) <= InlineLimit(p.Conn()) {
		return nil
	}
	name := payloadObjectName(msgID)
	obs, err := p.ObjectStore(ctx, BucketPayloads)
	if err != nil {
		return fmt.Errorf("publish %s: body of %d bytes: open object store %s: %w", msgID, len(msg.Data), BucketPayloads, err)
	}
	if err := putObject(ctx, obs, name, msg.Data, InlineLimit(p.Conn())); err != nil {
		return fmt.Errorf("publish %s: put body of %d bytes into %s/%s: %w", msgID, len(msg.Data), BucketPayloads, name, err)
	}
	stub, err := json.Marshal(payloadStub{Envelope: env, PayloadObject: name, PayloadBytes: len(msg.Data)})
	if err != nil {
		return fmt.Errorf("publish %s: %w", msgID, err)
	}
	msg.Data = stub
	msg.Header.Set(HeaderPayloadObject, name)
	return nil
}

// loadPayload replaces the stub body of a message whose body is an object
// with the object. A missing object is a permanent error: no redelivery will
// bring it back.
func (b *Bus) loadPayload(ctx context.Context, m *Msg) error {
	name := nats.Header(m.Header).Get(HeaderPayloadObject)
	if name == "" {
		return nil
	}
	obs, err := b.JS.ObjectStore(ctx, BucketPayloads)
	if err != nil {
		return fmt.Errorf("load body of %s from %s/%s: %w", m.Subject, BucketPayloads, name, err)
	}
	data, err := obs.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Permanent(fmt.Errorf("load body of %s: object %s/%s is gone (expired or deleted)", m.Subject, BucketPayloads, name))
	}
	if err != nil {
		return fmt.Errorf("load body of %s from %s/%s: %w", m.Subject, BucketPayloads, name, err)
	}
	m.stub, m.Data, m.object = m.Data, data, name
	return nil
}

// dropPayload deletes the object of an acked message when no other stage
// will read it.
func (b *Bus) dropPayload(ctx context.Context, m *Msg) {
	if m.object == "" || b.interestedStages(ctx, m.Stream, m.Subject) > 1 {
		return
	}
	obs, err := b.JS.ObjectStore(ctx, BucketPayloads)
	if err == nil {
		err = obs.Delete(ctx, m.object)
	}
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		b.Log.Warn().Err(err).Str("subject", m.Subject).Str("object", m.object).Str("trace_id", m.TraceID).
			Msg("could not delete a message body from the object store; its max age will")
	}
}

// keepDeadLetterBody copies the body of a message whose body is an object
// into KB_DLQ_BODIES under a name of the dead letter's own, and returns that
// name ("" when the message has no object). The message body's object expires
// with the ingest stream (7 days) and is deleted when a later message with
// the same id is acked; the dead letter is kept 90 days. A body already gone
// cannot be kept: "" and no error, the dead letter says why.
func (b *Bus) keepDeadLetterBody(ctx context.Context, stage string, m *Msg) (string, error) {
	object := nats.Header(m.Header).Get(HeaderPayloadObject)
	if object == "" {
		return "", nil
	}
	body := m.Data
	if m.stub == nil { // not loaded: the advisory path, or the load failed
		obs, err := b.JS.ObjectStore(ctx, BucketPayloads)
		if err != nil {
			return "", fmt.Errorf("keep dead-letter body: open object store %s: %w", BucketPayloads, err)
		}
		body, err = obs.GetBytes(ctx, object)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("keep dead-letter body: read %s/%s: %w", BucketPayloads, object, err)
		}
	}
	kept, err := b.JS.ObjectStore(ctx, BucketDLQBodies)
	if err != nil {
		return "", fmt.Errorf("keep dead-letter body: open object store %s: %w", BucketDLQBodies, err)
	}
	name := fmt.Sprintf("%s-%s-%d", stage, m.Stream, m.StreamSeq)
	if err := putObject(ctx, kept, name, body, InlineLimit(b.NC)); err != nil {
		return "", fmt.Errorf("keep dead-letter body of %d bytes in %s/%s: %w", len(body), BucketDLQBodies, name, err)
	}
	return name, nil
}

// restoreDeadLetterBody puts a dead letter's kept body back under its
// message body's object name (expired or deleted meanwhile) before a replay.
func (b *Bus) restoreDeadLetterBody(ctx context.Context, h nats.Header) error {
	kept, object := h.Get(HeaderDLQBody), h.Get(HeaderPayloadObject)
	if kept == "" || object == "" {
		return nil
	}
	from, err := b.JS.ObjectStore(ctx, BucketDLQBodies)
	if err != nil {
		return fmt.Errorf("open object store %s: %w", BucketDLQBodies, err)
	}
	body, err := from.GetBytes(ctx, kept)
	if err != nil {
		return fmt.Errorf("read kept body %s/%s: %w", BucketDLQBodies, kept, err)
	}
	to, err := b.JS.ObjectStore(ctx, BucketPayloads)
	if err != nil {
		return fmt.Errorf("open object store %s: %w", BucketPayloads, err)
	}
	if err := putObject(ctx, to, object, body, InlineLimit(b.NC)); err != nil {
		return fmt.Errorf("restore body into %s/%s: %w", BucketPayloads, object, err)
	}
	return nil
}

// dropDeadLetterBody deletes a dead letter's kept body, if it has one.
func (b *Bus) dropDeadLetterBody(ctx context.Context, h nats.Header) error {
	kept := h.Get(HeaderDLQBody)
	if kept == "" {
		return nil
	}
	obs, err := b.JS.ObjectStore(ctx, BucketDLQBodies)
	if err == nil {
		err = obs.Delete(ctx, kept)
	}
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete kept body %s/%s: %w", BucketDLQBodies, kept, err)
	}
	return nil
}

// kvObjectPrefix marks a KV value whose bytes live in KB_PAYLOADS.
var kvObjectPrefix = []byte("\x00exo-payload-object:")

func kvObjectName(bucket, key string) string { return "kv-" + bucket + "-" + key }

// putLarge stores value in the values object store and returns the stub value.
func putLarge(ctx context.Context, js jetstream.JetStream, bucket, key string, value []byte) ([]byte, error) {
	obs, err := js.ObjectStore(ctx, BucketValues)
	if err != nil {
		return nil, fmt.Errorf("kv put %s (%d bytes): open object store %s: %w", key, len(value), BucketValues, err)
	}
	name := kvObjectName(bucket, key)
	if err := putObject(ctx, obs, name, value, InlineLimit(js.Conn())); err != nil {
		return nil, fmt.Errorf("kv put %s (%d bytes) into %s/%s: %w", key, len(value), BucketValues, name, err)
	}
	return append(bytes.Clone(kvObjectPrefix), name...), nil
}

// getLarge reads the value a stub points at.
func getLarge(ctx context.Context, js jetstream.JetStream, key string, stub []byte) ([]byte, error) {
	name := string(stub[len(kvObjectPrefix):])
	obs, err := js.ObjectStore(ctx, BucketValues)
	if err != nil {
		return nil, fmt.Errorf("kv get %s: open object store %s: %w", key, BucketValues, err)
	}
	data, err := obs.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("kv get %s from %s/%s: %w", key, BucketValues, name, err)
	}
	return data, nil
}

// deleteLarge removes the object of a KV key, if it has one.
func deleteLarge(ctx context.Context, js jetstream.JetStream, bucket, key string) error {
	obs, err := js.ObjectStore(ctx, BucketValues)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil // never created: nothing large was ever stored
	}
	if err != nil {
		return fmt.Errorf("kv delete %s: open object store %s: %w", key, BucketValues, err)
	}
	if err := obs.Delete(ctx, kvObjectName(bucket, key)); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("kv delete %s: %w", key, err)
	}
	return nil
}
