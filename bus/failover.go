package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// FailoverBudget bounds how long a client call (a publish, a KV read or
// write) is retried while a NATS cluster fails over: a node dies, its
// streams elect new leaders, the connection moves to another node. A
// request sent in that window gets no answer; sent again after it, it does.
// JetStream elects a new leader within a few seconds.
const FailoverBudget = 45 * time.Second

// publishAckTimeout is how long an asynchronous publish waits for its ack
// before PublishAll sends it again: without it, an ack lost with a dying
// node would hold the publisher until its context ends.
const publishAckTimeout = 10 * time.Second

// JetStream's error codes of a cluster between leaders (nats-server's
// JSClusterNotAvailErr, JSClusterNotLeaderErr).
const (
	errCodeClusterNotAvailable jetstream.ErrorCode = 10008
	errCodeClusterNotLeader    jetstream.ErrorCode = 10009
)

// IsFailover reports whether err is what a request gets while a NATS
// cluster fails over (no answer in time, no responders, no leader): safe
// to send again when the request is idempotent, as every request of the
// bus is (publishes carry a Nats-Msg-Id; KV writes put a whole value).
func IsFailover(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting):
		return true
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == errCodeClusterNotAvailable || apiErr.ErrorCode == errCodeClusterNotLeader
	}
	return false
}

// retryFailover calls fn until it succeeds, fails otherwise than by a
// failover (IsFailover), ctx ends, or FailoverBudget has passed since the
// first failure; it returns fn's last result. Each retry is logged.
func retryFailover[T any](ctx context.Context, what string, fn func() (T, error)) (T, error) {
	v, err := fn()
	if !IsFailover(err) || ctx.Err() != nil {
		return v, err
	}
	deadline := time.Now().Add(FailoverBudget)
	wait := 250 * time.Millisecond
	for attempt := 2; IsFailover(err) && ctx.Err() == nil && time.Now().Before(deadline); attempt++ {
		zerolog.Ctx(ctx).Warn().Err(err).Str("request", what).Int("attempt", attempt).
			Msg("NATS did not answer (a cluster node failing over?); sending again")
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
		v, err = fn()
	}
	return v, err
}
