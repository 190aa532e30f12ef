package bus

import "time"

// Settlement is how the bus settled a message a stage handled.
type Settlement string

// The outcomes an Observer is told of.
const (
	// SettledAcked: the handler succeeded and its output was published.
	SettledAcked Settlement = "acked"
	// SettledRetried: the handler (or publishing its output) failed and the
	// message was nak'ed for redelivery.
	SettledRetried Settlement = "retried"
	// SettledDeadLettered: a permanent failure, or the last delivery failed
	// (or, from the server's max-deliveries advisory, no handler ever
	// finished it): the message went to kb.dlq.<stage>.
	SettledDeadLettered Settlement = "dead_lettered"
)

// Observer is told of every message a stage settles, for metrics. It must
// be cheap and safe for concurrent use: the stage's workers call it.
type Observer interface {
	// Settled reports one message of stage: how it was settled, how long
	// its handler ran (a batch handler's time shared evenly among its
	// messages; 0 when no handler ran, as for an advisory's dead letter)
	// and whether it failed (the handler, loading its body or publishing
	// its output returned an error).
	Settled(stage string, outcome Settlement, took time.Duration, failed bool)
}
