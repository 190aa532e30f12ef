package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/schemas"
)

// Replies. A client that publishes a request (kb.query.submitted,
// kb.research.requested) waits for the reply the stages publish on a subject
// shared by every request (kb.query.reranked, kb.answer.done,
// kb.answer.followups, kb.research.report). A Bus subscribes to each such
// subject once, the first time a waiter needs it, and hands every event to
// the one waiter registered for its id (the query's or the research's), so
// a waiter receives only its own reply and the subscription's load grows
// with the replies, not with replies times waiters. The subscription's
// pending limits are far above any number of requests in flight; should
// the client still fall behind, the drop is logged and counted
// (SlowConsumerStats), and a waiter that then times out says so.
//
// The stages of the current version publish on the shared subjects, so
// replies stay there: per-request reply subjects would need every stage to
// learn them, and a client of this version would not hear a stage of the
// last.

// Pending limits of the reply subscriptions (and of Subscribe's): the
// client queues this much for a subscription whose handler has not caught
// up before it drops messages.
const (
	replyPendingMsgs  = 1 << 20
	replyPendingBytes = 1 << 30
)

// replyBuffer is how many events of one id a waiter holds unread: a reply
// comes once (JetStream drops a republished copy), so a fuller buffer holds
// nothing new.
const replyBuffer = 8

// replyRouter is a Bus's one subscription to a reply subject.
type replyRouter struct {
	b       *Bus
	subject string
	sub     *nats.Subscription

	mu      sync.Mutex
	waiters map[string][]*Reply
}

// Reply is a waiter registered for the events on a reply subject that carry
// one id: register (Expect) before publishing the request, read them with
// Next, Close when done.
type Reply struct {
	router *replyRouter
	id     string
	ch     chan *nats.Msg
	since  time.Time
	// dropped0 and reconnects0 are the subscription's drops and the
	// connection's reconnects when the waiter registered: more at a
	// timeout mean the reply may have been lost on the way.
	dropped0    int
	reconnects0 uint64
	overflow    atomic.Int64
	once        sync.Once
}

// Expect registers a waiter for the events on subject whose query id (or
// research id) is id. Call it before publishing the request; Close it when
// done.
func (b *Bus) Expect(subject, id string) (*Reply, error) {
	r, err := b.router(subject)
	if err != nil {
		return nil, err
	}
	dropped, _ := r.sub.Dropped()
	w := &Reply{router: r, id: id, ch: make(chan *nats.Msg, replyBuffer), since: time.Now(),
		dropped0: dropped, reconnects0: b.NC.Stats().Reconnects}
	r.mu.Lock()
	r.waiters[id] = append(r.waiters[id], w)
	r.mu.Unlock()
	return w, nil
}

// router returns the Bus's subscription to subject, subscribing the first
// time (and waiting until the server has it, so a request published next
// cannot be answered before it).
func (b *Bus) router(subject string) (*replyRouter, error) {
	b.repliesMu.Lock()
	defer b.repliesMu.Unlock()
	if r := b.replies[subject]; r != nil {
		return r, nil
	}
	r := &replyRouter{b: b, subject: subject, waiters: map[string][]*Reply{}}
	sub, err := b.NC.Subscribe(subject, r.dispatch)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := sub.SetPendingLimits(replyPendingMsgs, replyPendingBytes); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: pending limits: %w", subject, err)
	}
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	r.sub = sub
	trackSub(sub)
	if b.replies == nil {
		b.replies = map[string]*replyRouter{}
	}
	b.replies[subject] = r
	return r, nil
}

// dispatch hands a message to the waiters of its id; one nobody here waits
// for (another process's request) is left.
func (r *replyRouter) dispatch(m *nats.Msg) {
	id := replyID(m)
	if id == "" {
		return
	}
	r.mu.Lock()
	ws := r.waiters[id]
	r.mu.Unlock()
	for _, w := range ws {
		select {
		case w.ch <- m:
		default:
			// The waiter holds replyBuffer events of its id unread: this
			// one is a copy of what it has.
			w.overflow.Add(1)
		}
	}
}

// replyID is the query or research id a reply carries: its body's
// query_id or research_id, else (a body moved to KB_PAYLOADS, whose stub
// carries only the envelope) the id its message id ends with
// ("reranked:<query_id>").
func replyID(m *nats.Msg) string {
	var head struct {
		QueryID    string `json:"query_id"`
		ResearchID string `json:"research_id"`
	}
	if json.Unmarshal(m.Data, &head) == nil {
		if head.QueryID != "" {
			return head.QueryID
		}
		if head.ResearchID != "" {
			return head.ResearchID
		}
	}
	if _, id, ok := strings.Cut(m.Header.Get(jetstream.MsgIDHeader), ":"); ok {
		return id
	}
	return ""
}

// Next returns the next event of the waiter's id: the body is read back
// from KB_PAYLOADS when it travelled there, and a body that does not
// decode is an error (it was this request's reply). When ctx ends first,
// the error wraps ctx's.
func (w *Reply) Next(ctx context.Context) (schemas.Event, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting on %s for %s: %w", w.router.subject, w.id, ctx.Err())
	case m := <-w.ch:
		data := m.Data
		if name := m.Header.Get(HeaderPayloadObject); name != "" {
			var err error
			if data, err = w.router.b.payloadBytes(ctx, name); err != nil {
				return nil, fmt.Errorf("reply on %s for %s: %w", w.router.subject, w.id, err)
			}
		}
		ev, err := schemas.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("reply on %s for %s: %w", w.router.subject, w.id, err)
		}
		return ev, nil
	}
}

// Close unregisters the waiter.
func (w *Reply) Close() {
	w.once.Do(func() {
		r := w.router
		r.mu.Lock()
		defer r.mu.Unlock()
		ws := r.waiters[w.id]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(r.waiters, w.id)
		} else {
			r.waiters[w.id] = ws
		}
	})
}

// payloadBytes reads a message body that travelled in KB_PAYLOADS.
func (b *Bus) payloadBytes(ctx context.Context, name string) ([]byte, error) {
	obs, err := b.JS.ObjectStore(ctx, BucketPayloads)
	if err != nil {
		return nil, fmt.Errorf("load body from %s/%s: %w", BucketPayloads, name, err)
	}
	data, err := obs.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("load body from %s/%s: %w", BucketPayloads, name, err)
	}
	return data, nil
}

// AwaitReply publishes request (trace id: id) and returns the event on
// subject that carries id, registered for before the request left. path
// names the stages the request goes through, in order: when ctx's deadline
// passes first, the error is a *WaitError that says what the bus found out
// about why (see Reply.Explain); it wraps context.DeadlineExceeded.
func (b *Bus) AwaitReply(ctx context.Context, subject, id string, request schemas.Event, path []StageSpec) (schemas.Event, error) {
	w, err := b.Expect(subject, id)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	ack, err := b.Publish(ctx, request, id)
	if err != nil {
		return nil, err
	}
	ev, err := w.Next(ctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, w.Explain(ctx, path, ack.Sequence)
	}
	return ev, err
}

// WaitError is a reply that did not come in time, with what could be found
// out about why.
type WaitError struct {
	Subject, ID string
	// What the waiter waited for ("reply" when empty; "report").
	What   string
	Waited time.Duration
	// Findings are sentences, the likeliest cause first.
	Findings []string
	Err      error
}

func (e *WaitError) Error() string {
	what := e.What
	if what == "" {
		what = "reply"
	}
	waited := e.Waited.Round(time.Millisecond)
	if waited > time.Second {
		waited = waited.Round(100 * time.Millisecond)
	}
	msg := fmt.Sprintf("no %s on %s within %s", what, e.Subject, waited)
	if len(e.Findings) > 0 {
		msg += ": " + strings.Join(e.Findings, "; ")
	}
	return msg
}

func (e *WaitError) Unwrap() error { return e.Err }

// explainTimeout bounds what Explain asks the server.
const explainTimeout = 2 * time.Second

// Explain builds the error of a waiter whose reply did not come: whether
// this process dropped messages on the reply subject (a slow consumer) or
// lost its connection meanwhile, and for each stage on path whether a
// worker is taking its work, how much is queued and in hand, and (for the
// first, given the request's stream sequence seq) whether it took the
// request. It asks the server for a few consumer infos, bounded by a
// couple of seconds even when ctx has ended.
func (w *Reply) Explain(ctx context.Context, path []StageSpec, seq uint64) *WaitError {
	r := w.router
	e := &WaitError{Subject: r.subject, ID: w.id, Waited: time.Since(w.since), Err: context.DeadlineExceeded}
	if ctx.Err() != nil {
		e.Err = ctx.Err()
	}
	if d, err := r.sub.Dropped(); err == nil && d > w.dropped0 {
		e.Findings = append(e.Findings, fmt.Sprintf("this process dropped %d messages on %s while waiting (a slow consumer: it could not keep up), "+
			"the reply may have been one of them", d-w.dropped0, r.subject))
	}
	nc := r.b.NC
	if !nc.IsConnected() {
		e.Findings = append(e.Findings, fmt.Sprintf("the connection to NATS is %s: replies published meanwhile are lost", nc.Status()))
	} else if n := nc.Stats().Reconnects; n > w.reconnects0 {
		e.Findings = append(e.Findings, "the connection to NATS was lost and re-established while waiting: a reply published meanwhile was missed")
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), explainTimeout)
	defer cancel()
	for i, s := range path {
		f := r.b.stageFinding(lctx, s, i == 0, seq)
		if f != "" {
			e.Findings = append(e.Findings, f)
		}
	}
	if len(e.Findings) == 0 && len(path) > 0 {
		e.Findings = append(e.Findings, "every stage on the way is idle with nothing queued: the request was dead-lettered "+
			"('exocortex dlq list' says why) or its reply was lost on the way")
	}
	return e
}

// stageFinding says what holds up a stage, "" when it has nothing queued
// and a worker waiting for work.
func (b *Bus) stageFinding(ctx context.Context, s StageSpec, first bool, seq uint64) string {
	c, err := b.JS.Consumer(ctx, s.Stream, s.Name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Sprintf("stage %s has no consumer on %s: it never ran against this NATS server (start 'exocortex up', or 'exocortex worker --stage %s')",
			s.Name, s.Stream, s.Name)
	}
	if err != nil {
		return fmt.Sprintf("stage %s: cannot read its consumer: %v", s.Name, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Sprintf("stage %s: cannot read its consumer: %v", s.Name, err)
	}
	took := ""
	if first && seq > 0 {
		switch {
		case info.AckFloor.Stream >= seq:
			took = ", it has handled this request"
		case info.Delivered.Stream >= seq:
			took = ", it holds this request"
		default:
			took = ", this request is still queued"
		}
	}
	idle := info.NumWaiting == 0 && info.NumAckPending == 0
	switch {
	case idle && info.NumPending > 0:
		return fmt.Sprintf("stage %s has no worker taking work: %d messages queued, none in hand%s (is 'exocortex up' or 'exocortex worker --stage %s' running against this server?)",
			s.Name, info.NumPending, took, s.Name)
	case info.NumPending > 0 || info.NumAckPending > 0:
		return fmt.Sprintf("stage %s is busy: %d messages queued, %d in hand%s (more workers: --workers, or another 'exocortex worker --stage %s')",
			s.Name, info.NumPending, info.NumAckPending, took, s.Name)
	case info.NumWaiting == 0:
		return fmt.Sprintf("stage %s has no worker waiting for work%s (is 'exocortex up' or 'exocortex worker --stage %s' running?)", s.Name, took, s.Name)
	case took != "" && took != ", it has handled this request":
		return fmt.Sprintf("stage %s is idle%s", s.Name, took)
	}
	return ""
}

// Slow consumers. The NATS client drops messages for a subscription whose
// handler has fallen its pending limits behind and tells the connection's
// error handler, once per episode. The Bus logs each (with the subject)
// and counts it; SlowConsumerStats reports the counts of this process by
// subject, per-request subjects folded into their pattern
// (kb.answer.tokens.*).

var slow struct {
	mu       sync.Mutex
	episodes map[string]uint64
	dropped  map[string]uint64          // by subscriptions gone
	live     map[*nats.Subscription]int // subscriptions tracked: their drops counted when they are gone
}

// SlowConsumerStat is what one subject's subscriptions lost in this process.
type SlowConsumerStat struct {
	Subject string
	// Episodes counts the times a subscription fell behind; Dropped the
	// messages the client dropped.
	Episodes, Dropped uint64
}

// ReplySubjects are the subjects whose slow-consumer counts exist from the
// start (at zero): the replies clients wait for.
var ReplySubjects = []string{schemas.SubjectReranked, schemas.SubjectAnswerDone, schemas.SubjectAnswerFollowUps,
	schemas.SubjectResearchReport, schemas.SubjectAnswerTokensPrefix + "*", schemas.SubjectResearchProgressPrefix + "*"}

// SlowConsumerStats returns the slow-consumer counts of this process by
// subject pattern: every reply subject (at zero until something is lost),
// then any other subject that lost messages.
func SlowConsumerStats() []SlowConsumerStat {
	slow.mu.Lock()
	defer slow.mu.Unlock()
	dropped := map[string]uint64{}
	for k, v := range slow.dropped {
		dropped[k] += v
	}
	for sub := range slow.live {
		if d, err := sub.Dropped(); err == nil && d > 0 {
			dropped[subjectPattern(sub.Subject)] += uint64(d)
		}
	}
	var out []SlowConsumerStat
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, SlowConsumerStat{Subject: s, Episodes: slow.episodes[s], Dropped: dropped[s]})
		}
	}
	for _, s := range ReplySubjects {
		add(s)
	}
	for s := range slow.episodes {
		add(s)
	}
	for s := range dropped {
		add(s)
	}
	return out
}

// trackSub counts sub's drops in SlowConsumerStats; untrackSub keeps them
// when the subscription goes.
func trackSub(sub *nats.Subscription) {
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.live == nil {
		slow.live = map[*nats.Subscription]int{}
	}
	slow.live[sub] = 0
}

func untrackSub(sub *nats.Subscription) {
	d, _ := sub.Dropped()
	slow.mu.Lock()
	defer slow.mu.Unlock()
	delete(slow.live, sub)
	if d > 0 {
		if slow.dropped == nil {
			slow.dropped = map[string]uint64{}
		}
		slow.dropped[subjectPattern(sub.Subject)] += uint64(d)
	}
}

// subjectPattern folds a per-request subject into its pattern, and an
// inbox into _INBOX.>.
func subjectPattern(subject string) string {
	for _, p := range []string{schemas.SubjectAnswerTokensPrefix, schemas.SubjectResearchProgressPrefix, schemas.SubjectQueryCancelPrefix} {
		if strings.HasPrefix(subject, p) {
			return p + "*"
		}
	}
	if strings.HasPrefix(subject, "_INBOX.") {
		return "_INBOX.>"
	}
	return subject
}

// asyncError is the connection's error handler: a slow consumer is logged
// with its subject and counted; any other asynchronous error is logged.
func (b *Bus) asyncError(_ *nats.Conn, sub *nats.Subscription, err error) {
	subject := ""
	if sub != nil {
		subject = sub.Subject
	}
	if errors.Is(err, nats.ErrSlowConsumer) {
		pattern := subjectPattern(subject)
		slow.mu.Lock()
		if slow.episodes == nil {
			slow.episodes = map[string]uint64{}
		}
		slow.episodes[pattern]++
		slow.mu.Unlock()
		ev := b.Log.Warn().Str("subject", subject)
		if sub != nil {
			msgs, bytes, _ := sub.PendingLimits()
			dropped, _ := sub.Dropped()
			ev = ev.Int("dropped", dropped).Int("pending_limit_msgs", msgs).Int("pending_limit_bytes", bytes)
		}
		ev.Msg("slow consumer: the NATS client is dropping messages on this subscription, its handler cannot keep up")
		return
	}
	b.Log.Warn().Err(err).Str("subject", subject).Msg("nats asynchronous error")
}

// Waiting is how many waiters are registered on the Bus's reply
// subscriptions now (0 once every request has returned).
func (b *Bus) Waiting() int {
	b.repliesMu.Lock()
	defer b.repliesMu.Unlock()
	n := 0
	for _, r := range b.replies {
		r.mu.Lock()
		for _, ws := range r.waiters {
			n += len(ws)
		}
		r.mu.Unlock()
	}
	return n
}

// ReplySubscriptions is how many reply subjects the Bus subscribes to (one
// each, kept for the life of the connection).
func (b *Bus) ReplySubscriptions() int {
	b.repliesMu.Lock()
	defer b.repliesMu.Unlock()
	return len(b.replies)
}
