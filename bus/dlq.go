package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetter is one message in KB_DLQ.
type DeadLetter struct {
	Seq       uint64    `json:"seq"`
	Stage     string    `json:"stage"`
	Subject   string    `json:"subject"`
	Reason    string    `json:"reason"`
	Delivered uint64    `json:"delivered"`
	Stream    string    `json:"stream"`
	StreamSeq uint64    `json:"stream_seq"`
	TraceID   string    `json:"trace_id,omitempty"`
	Time      time.Time `json:"time"`
	Data      []byte    `json:"data"`
	header    nats.Header
}

// DeadLetters lists the messages in KB_DLQ, oldest first; stage "" means all.
func (b *Bus) DeadLetters(ctx context.Context, stage string) ([]DeadLetter, error) {
	st, err := b.JS.Stream(ctx, StreamDLQ)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", StreamDLQ, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", StreamDLQ, err)
	}
	var out []DeadLetter
	if info.State.Msgs == 0 {
		return nil, nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("read %s seq %d: %w", StreamDLQ, seq, err)
		}
		dl := DeadLetter{
			Seq:     raw.Sequence,
			Stage:   raw.Header.Get(HeaderDLQStage),
			Subject: raw.Header.Get(HeaderDLQSubject),
			Reason:  raw.Header.Get(HeaderDLQReason),
			Stream:  raw.Header.Get(HeaderDLQStream),
			TraceID: raw.Header.Get(HeaderTraceID),
			Time:    raw.Time,
			Data:    raw.Data,
			header:  raw.Header,
		}
		dl.Delivered, _ = strconv.ParseUint(raw.Header.Get(HeaderDLQDelivered), 10, 64)
		dl.StreamSeq, _ = strconv.ParseUint(raw.Header.Get(HeaderDLQSeq), 10, 64)
		if stage != "" && dl.Stage != stage {
			continue
		}
		out = append(out, dl)
	}
	return out, nil
}

// Replay republishes dead letters onto their original subjects and removes
// them from KB_DLQ. It returns how many were replayed. A replayed message is
// for the stage that dead-lettered it only (HeaderReplayStage): other stages
// reading the same subject skip it, so it is not handled, nor dead-lettered,
// twice.
func (b *Bus) Replay(ctx context.Context, letters []DeadLetter) (int, error) {
	st, err := b.JS.Stream(ctx, StreamDLQ)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", StreamDLQ, err)
	}
	n := 0
	for _, dl := range letters {
		if dl.Subject == "" {
			return n, fmt.Errorf("dead letter %d has no original subject", dl.Seq)
		}
		m := nats.NewMsg(dl.Subject)
		m.Data = dl.Data
		for k, vs := range dl.header {
			if strings.HasPrefix(k, "Exo-Dlq-") || strings.HasPrefix(k, "Nats-") {
				continue
			}
			m.Header[k] = vs
		}
		if dl.Stage != "" {
			m.Header.Set(HeaderReplayStage, dl.Stage)
		}
		if err := b.restoreDeadLetterBody(ctx, dl.header); err != nil {
			return n, fmt.Errorf("replay dead letter %d: %w", dl.Seq, err)
		}
		id := fmt.Sprintf("replay:dlq%d@%d", dl.Seq, time.Now().UnixNano())
		if _, err := b.JS.PublishMsg(ctx, m, jetstream.WithMsgID(id)); err != nil {
			return n, fmt.Errorf("replay dead letter %d to %s: %w", dl.Seq, dl.Subject, err)
		}
		if err := st.DeleteMsg(ctx, dl.Seq); err != nil {
			return n, fmt.Errorf("remove replayed dead letter %d: %w", dl.Seq, err)
		}
		if err := b.dropDeadLetterBody(ctx, dl.header); err != nil {
			b.Log.Warn().Err(err).Uint64("seq", dl.Seq).Msg("replayed dead letter: its kept body stays until its max age")
		}
		n++
	}
	return n, nil
}

// PurgeDeadLetters removes dead letters from KB_DLQ for good. It returns
// how many were removed; one already gone is not an error.
func (b *Bus) PurgeDeadLetters(ctx context.Context, letters []DeadLetter) (int, error) {
	st, err := b.JS.Stream(ctx, StreamDLQ)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", StreamDLQ, err)
	}
	n := 0
	for _, dl := range letters {
		if err := st.DeleteMsg(ctx, dl.Seq); err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			return n, fmt.Errorf("purge dead letter %d: %w", dl.Seq, err)
		}
		if err := b.dropDeadLetterBody(ctx, dl.header); err != nil {
			b.Log.Warn().Err(err).Uint64("seq", dl.Seq).Msg("purged dead letter: its kept body stays until its max age")
		}
		n++
	}
	return n, nil
}

// DeadLetterCounts returns the number of dead letters per stage.
func (b *Bus) DeadLetterCounts(ctx context.Context) (map[string]uint64, error) {
	st, err := b.JS.Stream(ctx, StreamDLQ)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", StreamDLQ, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("kb.dlq.>"))
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", StreamDLQ, err)
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		out[strings.TrimPrefix(subj, "kb.dlq.")] = n
	}
	return out, nil
}

// StageState is a stage consumer's backlog as the server sees it.
type StageState struct {
	Stage       string `json:"stage"`
	Pending     uint64 `json:"pending"`     // not yet delivered
	AckPending  int    `json:"ack_pending"` // delivered, not yet acknowledged
	Redelivered int    `json:"redelivered"`
	Delivered   uint64 `json:"delivered"` // last delivered stream sequence
	// Waiting is the pull requests waiting on the consumer: above 0 while
	// a worker of the stage runs (each keeps one open), wherever it runs.
	Waiting int `json:"waiting"`
}

// StageStates reads the consumer info of every stage. The server tells a
// consumer about a new message after it acknowledged the publish, from a
// goroutine of its own, so on a loaded machine a consumer can report nothing
// pending for a moment while its stream already holds a message for it.
// StageStates therefore also reads the last message on each of the stage's
// subjects: one past what the consumer delivered counts as pending.
func (b *Bus) StageStates(ctx context.Context, stages []StageSpec) ([]StageState, error) {
	out := make([]StageState, 0, len(stages))
	streams := map[string]jetstream.Stream{}
	for _, s := range stages {
		c, err := b.JS.Consumer(ctx, s.Stream, s.Name)
		if err != nil {
			return out, fmt.Errorf("consumer %s: %w", s.Name, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			return out, fmt.Errorf("consumer %s info: %w", s.Name, err)
		}
		state := StageState{
			Stage: s.Name, Pending: info.NumPending, AckPending: info.NumAckPending,
			Redelivered: info.NumRedelivered, Delivered: info.Delivered.Stream, Waiting: info.NumWaiting,
		}
		if state.Pending == 0 {
			st, ok := streams[s.Stream]
			if !ok {
				if st, err = b.JS.Stream(ctx, s.Stream); err != nil {
					return out, fmt.Errorf("stage %s: stream %s: %w", s.Name, s.Stream, err)
				}
				streams[s.Stream] = st
			}
			for _, f := range info.Config.FilterSubjects {
				if err := unseen(ctx, st, f, &state); err != nil {
					return out, fmt.Errorf("stage %s: %w", s.Name, err)
				}
			}
			if f := info.Config.FilterSubject; f != "" {
				if err := unseen(ctx, st, f, &state); err != nil {
					return out, fmt.Errorf("stage %s: %w", s.Name, err)
				}
			}
		}
		out = append(out, state)
	}
	return out, nil
}

// unseen counts the last message on subject as pending when it comes after
// what the consumer delivered.
func unseen(ctx context.Context, st jetstream.Stream, subject string, state *StageState) error {
	raw, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("last message on %s: %w", subject, err)
	}
	if raw.Sequence > state.Delivered && state.Pending == 0 {
		state.Pending = 1
	}
	return nil
}
