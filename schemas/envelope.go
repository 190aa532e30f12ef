// Package schemas holds the versioned events that travel on the bus.
//
// Every event embeds an Envelope {type, id, time, trace_id}. The version lives in
// the type ("kb.doc.changed.v1"), not in the subject. Each event type is
// registered once in the registry (registry.go) with its subject and Go type, and
// Decode rejects unknown types and malformed JSON with an error that names what
// was wrong. This package does not import NATS.
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
