// Package schemas holds the versioned events that travel on the bus.
//
// Every event embeds an Envelope {type, id, time, trace_id}. The version lives in
// the type ("kb.doc.changed.v1"), not in the subject. Each event type is
// registered once in the registry (registry.go) with its subject and Go type, and
// Decode rejects unknown types and malformed JSON with an error that names what
// was wrong. This package does not import NATS.
//
// Versions: a field added within a version is additive (a worker from
// before it refuses an event that sets it, as Decode rejects unknown
// fields). A change an older worker must not read as it was is a new
// version, registered beside the old one with the same subject: each
// version is its own type, both may decode into the same Go struct (the
// old one's Spec.SupersededBy names the new, and Stamp emits the new),
// and the old one's JSON Schema leaves out what it lacks (Spec.Lacks).
// kb.query.submitted.v2 and kb.research.requested.v2 are such versions:
// they carry a scope, and v2 adds options.literal (the retrieve stage
// reads the scope words of a v2 question no door read). A worker that
// does not know a version refuses it as an unknown type, which the bus
// dead-letters with the reason, naming the versions it reads: so upgrade
// the workers before the doors that publish a new version.
package schemas

import "time"

// Envelope is the common header of every event.
type Envelope struct {
	Type    string    `json:"type"`
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	TraceID string    `json:"trace_id,omitempty"`
}

// Env returns the envelope itself; it lets the registry treat every event alike.
func (e *Envelope) Env() *Envelope { return e }

// Event is implemented by every registered event struct (through the embedded
// Envelope) plus its own MsgID, the deterministic key used as Nats-Msg-Id and as
// the idempotency key of every write downstream.
type Event interface {
	Env() *Envelope
	MsgID() string
}
