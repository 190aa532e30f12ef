package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/exocortex/exocortex/schemas"
)

// RunOptions tunes a stage's worker pool.
type RunOptions struct {
	// Workers is the number of messages handled at once (default 1): with
	// Batch 1, one fetcher hands each message to a goroutine of its own,
	// up to Workers at once (many workers cost nothing while idle);
	// otherwise Workers goroutines each fetch and handle a batch.
	Workers int
	// Batch is how many messages a worker fetches at once (default 32).
	Batch int
	// NakBase and NakMax bound the growing redelivery delay of a failed
	// message: NakBase * 2^(delivered-1), at most NakMax.
	NakBase, NakMax time.Duration
	// Middleware wraps the handler inside Recover and Logging.
	Middleware []Middleware
	// StatsEvery is how often changed counters are flushed to KB_STATS
	// (default 100ms; unchanged ones are not written again), so status
	// shows work right after it is done.
	StatsEvery time.Duration
	// Observer, when set, is told of every settled message (metrics).
	Observer Observer
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.NakBase <= 0 {
		o.NakBase = time.Second
	}
	if o.NakMax <= 0 {
		o.NakMax = time.Minute
	}
	if o.StatsEvery <= 0 {
		o.StatsEvery = 100 * time.Millisecond
	}
	return o
}

// nakDelay grows with the delivery count: base, 2*base, 4*base, ... up to max.
func nakDelay(delivered uint64, base, max time.Duration) time.Duration {
	d := base
	for i := uint64(1); i < delivered && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

type stageRunner struct {
	bus      *Bus
	spec     StageSpec
	raw      Handler // the stage's own handler, checked for Batcher
	handler  Handler // raw wrapped in middleware
	opts     RunOptions
	counters counters
	// heldTold is 1 + the full-disk episode in which the stage last
	// logged holding messages (0: never).
	heldTold atomic.Int64
}

// RunStage consumes the stage's durable consumer with a pool of workers until
// ctx is cancelled, then stops fetching, finishes the messages in hand
// (drain) and returns. EnsureTopology must have created the consumer.
func (b *Bus) RunStage(ctx context.Context, spec StageSpec, h Handler, opts RunOptions) error {
	spec = spec.withDefaults()
	opts = opts.withDefaults()
	cons, err := b.JS.Consumer(ctx, spec.Stream, spec.Name)
	if err != nil {
		return fmt.Errorf("stage %s: consumer on %s: %w", spec.Name, spec.Stream, err)
	}
	mw := append([]Middleware{Recover(), Logging(b.Log, spec.Name)}, opts.Middleware...)
	r := &stageRunner{bus: b, spec: spec, raw: h, handler: Chain(h, mw...), opts: opts}

	adv, err := b.watchMaxDeliveries(spec, opts.Observer)
	if err != nil {
		return err
	}
	defer adv.Unsubscribe()

	statsKV, err := b.KV(ctx, BucketStats)
	if err != nil {
		return err
	}
	instance := nuid.Next()
	var flushed Counters
	flush := func() {
		now := r.counters.snapshot()
		if now == flushed {
			return
		}
		raw, _ := json.Marshal(now)
		fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if statsKV.Put(fctx, statsKey(spec.Name, instance), raw) == nil {
			flushed = now
		}
	}

	var wg sync.WaitGroup
	if opts.Batch == 1 && opts.Workers > 1 {
		// One message at a time per worker: one fetcher hands each to a
		// free worker, so many workers (a stage that waits on a language
		// model) cost one pull request, not one each.
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.workShared(ctx, cons)
		}()
	} else {
		for i := 0; i < opts.Workers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.work(ctx, cons)
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(opts.StatsEvery)
	defer tick.Stop()
	b.Log.Info().Str("stage", spec.Name).Int("workers", opts.Workers).Msg("stage started")
	for {
		select {
		case <-tick.C:
			flush()
		case <-done:
			flush()
			b.Log.Info().Str("stage", spec.Name).Msg("stage stopped")
			return nil
		}
	}
}

func (r *stageRunner) work(ctx context.Context, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		// Intake pauses while the store's disk is full: nothing taken now
		// could be handed on, and every failed try would count a delivery.
		if r.bus.diskNow().Full {
			if r.bus.WaitForSpace(ctx) != nil {
				return
			}
		}
		// Take what is there now (up to Batch); when nothing is, wait up to a
		// second for one message, so a trickle is handled at once and a flood
		// in batches.
		msgs, err := collect(cons.FetchNoWait(r.opts.Batch))
		if err == nil && len(msgs) == 0 {
			msgs, err = collect(cons.Fetch(1, jetstream.FetchMaxWait(time.Second)))
		}
		if len(msgs) > 0 {
			r.processBatch(ctx, msgs)
		}
		if err != nil {
			if r.fatal(ctx, err) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// workShared is the fetch loop of a stage whose workers take one message
// each (Batch 1): it asks for as many messages as workers are free, takes
// each as it arrives and hands it to a goroutine of its own, at most
// Workers at once. When nothing is there it waits up to a second, so a
// trickle is handled at once; when every worker is busy it fetches
// nothing. It returns once ctx ends and the messages in hand are finished.
func (r *stageRunner) workShared(ctx context.Context, cons jetstream.Consumer) {
	free := make(chan struct{}, r.opts.Workers)
	for range r.opts.Workers {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		if r.bus.diskNow().Full {
			if r.bus.WaitForSpace(ctx) != nil {
				return
			}
		}
		// At least one free worker, then every other one free now.
		select {
		case <-free:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < r.opts.Workers {
			select {
			case <-free:
				n++
			default:
				break more
			}
		}
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
		if err == nil {
			for jm := range batch.Messages() {
				n--
				wg.Add(1)
				go func() {
					defer func() { free <- struct{}{}; wg.Done() }()
					r.processBatch(ctx, []jetstream.Msg{jm})
				}()
			}
			if berr := batch.Error(); berr != nil && !errors.Is(berr, nats.ErrTimeout) && !errors.Is(berr, jetstream.ErrNoMessages) {
				err = berr
			}
		}
		for range n {
			free <- struct{}{}
		}
		if err != nil {
			if r.fatal(ctx, err) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func collect(batch jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
	if err != nil {
		return nil, err
	}
	var msgs []jetstream.Msg
	for jm := range batch.Messages() {
		msgs = append(msgs, jm)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return msgs, err
	}
	return msgs, nil
}

func (r *stageRunner) fatal(ctx context.Context, err error) bool {
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
		// JetStream restarted (after a full disk) reloads its consumers: a
		// consumer missing for a moment is looked up again before the stage
		// gives up.
		deadline := time.Now().Add(consumerGrace)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(250 * time.Millisecond)
			lctx, cancel := context.WithTimeout(ctx, time.Second)
			_, lerr := r.bus.JS.Consumer(lctx, r.spec.Stream, r.spec.Name)
			cancel()
			if lerr == nil {
				return false
			}
		}
	}
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
		r.bus.Log.Warn().Str("error", boundReason(err.Error())).Str("stage", r.spec.Name).Msg("stage stops fetching")
		return true
	}
	return false
}

// consumerGrace is how long a stage looks for its consumer again before it
// stops fetching.
const consumerGrace = 10 * time.Second

// result is a handled message waiting to be settled.
type result struct {
	jm  jetstream.Msg
	m   *Msg
	out []schemas.Event
	err error
	// took is how long the handler ran for this message.
	took time.Duration
}

func toMsg(jm jetstream.Msg) *Msg {
	m := &Msg{Subject: jm.Subject(), Data: jm.Data(), Header: jm.Headers()}
	if md, err := jm.Metadata(); err == nil {
		m.Delivered, m.Stream, m.StreamSeq = md.NumDelivered, md.Stream, md.Sequence.Stream
	}
	if m.Header != nil {
		m.TraceID = nats.Header(m.Header).Get(HeaderTraceID)
	}
	return m
}

// keepAlive sends in-progress acks for msgs until the returned stop is called,
// so slow work keeps its lease.
func (r *stageRunner) keepAlive(ctx context.Context, msgs []jetstream.Msg) context.CancelFunc {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(r.spec.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, jm := range msgs {
					_ = jm.InProgress()
				}
			}
		}
	}()
	return cancel
}

// processBatch handles a fetched batch. With a Batcher handler the whole batch
// runs in one unit of work; otherwise message by message. Messages in hand
// are finished even when ctx is cancelled (drain).
func (r *stageRunner) processBatch(ctx context.Context, msgs []jetstream.Msg) {
	msgs = r.skipOthersReplays(msgs)
	if len(msgs) == 0 {
		return
	}
	for wait := time.Second; ; wait = min(2*wait, maxHoldWait) {
		held, why := r.runBatch(ctx, msgs)
		if len(held) == 0 {
			return
		}
		// Out of space: the messages stay in hand (kept alive, not naked,
		// so a full disk costs them no delivery and never dead-letters
		// them) and are handled again once space returns.
		ev := r.bus.Log.Debug()
		if ep := int64(r.bus.diskNow().Episodes) + 1; r.heldTold.Swap(ep) != ep {
			// Once per stage and full-disk episode.
			ev = r.bus.Log.Warn()
		}
		ev.Err(why).Str("stage", r.spec.Name).Int("held", len(held)).
			Msg("out of space: messages held in hand, handled again when space returns (not naked, not dead-lettered)")
		stop := r.keepAlive(context.WithoutCancel(ctx), held)
		err := r.bus.WaitForSpace(ctx)
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(wait):
			}
		}
		stop()
		if err != nil {
			// Stopping: left unacknowledged, they are redelivered later.
			return
		}
		msgs = held
	}
}

// maxHoldWait bounds the pause between tries of messages held for want of
// space (a store limit is not watched like a disk: they are simply tried
// again).
const maxHoldWait = 10 * time.Second

// runBatch handles and settles msgs and returns those held for want of
// space (see settle).
func (r *stageRunner) runBatch(ctx context.Context, msgs []jetstream.Msg) (held []jetstream.Msg, why error) {
	hctx := context.WithoutCancel(ctx)
	stop := r.keepAlive(hctx, msgs)
	defer stop()
	episodes := r.bus.diskNow().Episodes
	settle := func(res result) {
		if err := r.settle(hctx, res, episodes); err != nil {
			held = append(held, res.jm)
			if why == nil {
				why = err
			}
		}
	}
	if bh, ok := r.raw.(BatchHandler); ok && len(msgs) > 1 {
		for _, res := range r.handleBatch(hctx, bh, msgs) {
			settle(res)
		}
		return held, why
	}
	b, ok := r.raw.(Batcher)
	if !ok || len(msgs) == 1 {
		for _, jm := range msgs {
			settle(r.handle(hctx, jm))
		}
		return held, why
	}
	results := make([]result, 0, len(msgs))
	err := b.Batch(hctx, func(bctx context.Context) error {
		for _, jm := range msgs {
			results = append(results, r.handle(bctx, jm))
		}
		return nil
	})
	if err != nil {
		// Nothing of the batch is durable: every message is retried.
		for i := range results {
			results[i].out, results[i].err = nil, err
		}
	}
	for _, res := range results {
		settle(res)
	}
	return held, why
}

// outOfSpace says whether err (from a handler or a publish) failed for want
// of space: an out-of-space error, or any failure while the disk was found
// full (a publish to a stream stuck on a full disk only times out).
func (r *stageRunner) outOfSpace(err error, episodes int) bool {
	if err == nil {
		return false
	}
	if IsOutOfSpace(err) {
		if !strings.Contains(strings.ToLower(err.Error()), "insufficient") {
			r.bus.noteOutOfSpace(err)
		}
		return true
	}
	if IsPermanent(err) {
		return false
	}
	d := r.bus.diskNow()
	return d.Full || d.Episodes != episodes
}

// skipOthersReplays acks, unhandled, the replays of other stages' dead
// letters (see HeaderReplayStage) and returns the rest.
func (r *stageRunner) skipOthersReplays(msgs []jetstream.Msg) []jetstream.Msg {
	kept := msgs[:0]
	for _, jm := range msgs {
		if h := jm.Headers(); h != nil {
			if st := h.Get(HeaderReplayStage); st != "" && st != r.spec.Name {
				_ = jm.Ack()
				continue
			}
		}
		kept = append(kept, jm)
	}
	return kept
}

// handleBatch runs a BatchHandler over the batch. A panic or a wrong number
// of outcomes fails every message of the batch (they are retried).
func (r *stageRunner) handleBatch(ctx context.Context, bh BatchHandler, jms []jetstream.Msg) (results []result) {
	msgs := make([]*Msg, 0, len(jms))
	idx := make([]int, 0, len(jms)) // results index of each of msgs
	results = make([]result, len(jms))
	for i, jm := range jms {
		m := toMsg(jm)
		results[i] = result{jm: jm, m: m}
		if err := r.bus.loadPayload(ctx, m); err != nil {
			results[i].err = err
			continue
		}
		msgs = append(msgs, m)
		idx = append(idx, i)
	}
	fail := func(err error) {
		for _, i := range idx {
			results[i].out, results[i].err = nil, err
		}
	}
	if len(msgs) == 0 {
		return results
	}
	defer func() {
		if p := recover(); p != nil {
			r.bus.Log.Error().Str("stage", r.spec.Name).Interface("panic", p).Int("batch", len(jms)).Msg("batch handler panicked")
			fail(fmt.Errorf("stage %s: batch handler panicked: %v", r.spec.Name, p))
		}
	}()
	ctx = r.bus.Log.With().Str("stage", r.spec.Name).Int("batch", len(msgs)).Logger().WithContext(ctx)
	start := time.Now()
	outs := bh.HandleBatch(ctx, msgs)
	each := time.Since(start) / time.Duration(len(msgs))
	for _, i := range idx {
		results[i].took = each
	}
	if len(outs) != len(msgs) {
		fail(fmt.Errorf("stage %s: batch handler returned %d outcomes for %d messages", r.spec.Name, len(outs), len(msgs)))
		return results
	}
	for k, o := range outs {
		results[idx[k]].out, results[idx[k]].err = o.Out, o.Err
	}
	return results
}

func (r *stageRunner) handle(ctx context.Context, jm jetstream.Msg) result {
	m := toMsg(jm)
	if err := r.bus.loadPayload(ctx, m); err != nil {
		return result{jm: jm, m: m, err: err}
	}
	start := time.Now()
	out, err := r.handler.Handle(ctx, m)
	return result{jm: jm, m: m, out: out, err: err, took: time.Since(start)}
}

// settle publishes a result's output, runs what the handler registered with
// Msg.OnPublished, and acks, or naks, terminates and dead-letters, as its
// error says. A result that failed for want of space (see outOfSpace) is
// not settled: settle returns that error, the message held for the caller
// to try again.
func (r *stageRunner) settle(ctx context.Context, res result, episodes int) (heldFor error) {
	jm, m, out, err := res.jm, res.m, res.out, res.err
	var outcome Settlement
	if err == nil && len(out) > 0 {
		pctx, pcancel := r.bus.untilFull(ctx, r.spec.AckWait)
		if perr := PublishAll(pctx, r.bus.JS, out, m.TraceID); Unpublishable(perr) {
			// No redelivery makes it fit: dead-lettered now, with why.
			err = Permanent(fmt.Errorf("output cannot be published: %w", perr))
		} else if perr != nil {
			err = fmt.Errorf("publish output: %w", perr)
		} else {
			r.counters.published.Add(int64(len(out)))
		}
		pcancel()
	}
	if err == nil {
		if perr := m.Published(ctx); perr != nil {
			err = fmt.Errorf("after publishing output: %w", perr)
		}
	}
	if r.outOfSpace(err, episodes) {
		return err // the bus logs the full disk once
	}
	if err != nil && res.err == nil {
		// The handler succeeded, but its output or the state that accounts
		// for it was not saved: the message is retried.
		r.bus.Log.Warn().Err(err).Str("stage", r.spec.Name).Str("subject", m.Subject).Uint64("stream_seq", m.StreamSeq).
			Uint64("delivered", m.Delivered).Str("trace_id", m.TraceID).Int("events_out", len(out)).Msg("output not handed on")
	}
	if obs := r.opts.Observer; obs != nil {
		failed := err != nil
		defer func() { obs.Settled(r.spec.Name, outcome, res.took, failed) }()
	}
	switch {
	case err == nil:
		outcome = SettledAcked
		if m.object != "" {
			// The body goes once the server confirms the ack: a lost ack
			// would redeliver a message whose body was deleted.
			if aerr := jm.DoubleAck(ctx); aerr == nil {
				r.counters.acked.Add(1)
				r.bus.dropPayload(ctx, m)
			}
		} else if aerr := jm.Ack(); aerr == nil {
			r.counters.acked.Add(1)
		}
	case IsPermanent(err) || m.Delivered >= uint64(r.spec.MaxDeliver):
		reason := err.Error()
		if !IsPermanent(err) {
			reason = fmt.Sprintf("gave up after %d deliveries: %s", m.Delivered, reason)
		}
		if derr := r.bus.deadLetter(ctx, r.spec.Name, m, reason); derr != nil {
			// Could not record it: leave the message for redelivery rather than lose it.
			r.bus.Log.Error().Err(derr).Str("stage", r.spec.Name).Msg("dead-letter failed; message will be redelivered")
			_ = jm.NakWithDelay(r.opts.NakMax)
			outcome = SettledRetried
			return nil
		}
		_ = jm.TermWithReason(truncate(reason, 256))
		r.counters.deadLettered.Add(1)
		outcome = SettledDeadLettered
		// The dead letter keeps its own copy of a large body.
		r.bus.dropPayload(ctx, m)
	default:
		d, ok := retryDelay(err)
		if !ok {
			d = nakDelay(m.Delivered, r.opts.NakBase, r.opts.NakMax)
		}
		_ = jm.NakWithDelay(d)
		r.counters.retried.Add(1)
		outcome = SettledRetried
	}
	return nil
}

// Unpublishable reports a publish error no retry can clear: a message
// over the server's max payload even after its body went to the payload
// store (its headers, its id), or one the server refuses by its form.
func Unpublishable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) || errors.Is(err, nats.ErrBadHeaderMsg) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeHeaderTooLarge, errCodeMessageTooLarge:
			return true
		}
	}
	msg := err.Error()
	return strings.Contains(msg, "maximum payload exceeded") || strings.Contains(msg, "exceeds maximum allowed")
}

// JetStream's error codes (nats-server's JSStreamHeaderExceedsMaximumErr,
// JSStreamMessageExceedsMaximumErr) for a message it can never take.
const (
	errCodeHeaderTooLarge  jetstream.ErrorCode = 10097
	errCodeMessageTooLarge jetstream.ErrorCode = 10054
)

// maxReasonBytes bounds a dead letter's reason.
const maxReasonBytes = 2048

// boundReason cuts a reason to about maxReasonBytes, on character
// boundaries, keeping its start (what failed) and its end (the cause) and
// eliding the middle (a quoted id or title).
func boundReason(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	head, tail := maxReasonBytes/4, len(s)-maxReasonBytes*3/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf(" …(%d bytes elided)… ", tail-head) + s[tail:]
}

// headerBytes is about what h takes on the wire.
func headerBytes(h nats.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// deadLetter copies m to kb.dlq.<stage> with its story in headers. The
// message id makes a second copy of the same delivery a duplicate.
func (b *Bus) deadLetter(ctx context.Context, stage string, m *Msg, reason string) error {
	out := nats.NewMsg(schemas.SubjectDLQPrefix + stage)
	out.Data = m.Data
	if m.stub != nil {
		out.Data = m.stub // the body stays in the object store; the header names it
	}
	for k, vs := range m.Header {
		if k == "Nats-Msg-Id" || k == "Nats-Expected-Stream" {
			continue
		}
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	// A reason quotes what failed (a message id, a title) and must not
	// make the dead letter itself too large to publish.
	reason = boundReason(reason)
	out.Header.Set(HeaderDLQReason, reason)
	out.Header.Set(HeaderDLQStage, stage)
	out.Header.Set(HeaderDLQSubject, m.Subject)
	out.Header.Set(HeaderDLQDelivered, strconv.FormatUint(m.Delivered, 10))
	out.Header.Set(HeaderDLQStream, m.Stream)
	out.Header.Set(HeaderDLQSeq, strconv.FormatUint(m.StreamSeq, 10))
	out.Header.Set(HeaderDLQTime, time.Now().UTC().Format(time.RFC3339Nano))
	kept, err := b.keepDeadLetterBody(ctx, stage, m)
	if err != nil {
		return fmt.Errorf("dead-letter %s seq %d: %w", m.Subject, m.StreamSeq, err)
	}
	if kept != "" {
		out.Header.Set(HeaderDLQBody, kept)
	}
	id := fmt.Sprintf("dlq:%s:%s:%d", stage, m.Stream, m.StreamSeq)
	_, err = b.JS.PublishMsg(ctx, out, jetstream.WithMsgID(id))
	if Unpublishable(err) {
		// The message itself cannot be copied (headers over the max
		// payload): the dead letter keeps its story without it, rather
		// than leave the message to be redelivered for ever.
		slim := nats.NewMsg(out.Subject)
		for _, k := range []string{HeaderDLQStage, HeaderDLQSubject, HeaderDLQDelivered, HeaderDLQStream, HeaderDLQSeq, HeaderDLQTime, HeaderDLQBody, HeaderTraceID} {
			if v := out.Header.Get(k); v != "" && len(v) < 4096 {
				slim.Header.Set(k, v)
			}
		}
		reason += fmt.Sprintf(" (the message's body and headers, %d bytes, were too large to keep in the dead letter: %v)", len(out.Data)+headerBytes(out.Header), err)
		slim.Header.Set(HeaderDLQReason, boundReason(reason))
		_, err = b.JS.PublishMsg(ctx, slim, jetstream.WithMsgID(id))
	}
	if err != nil {
		return fmt.Errorf("dead-letter %s seq %d to %s: %w", m.Subject, m.StreamSeq, out.Subject, err)
	}
	b.Log.Warn().Str("stage", stage).Str("subject", m.Subject).Uint64("stream_seq", m.StreamSeq).
		Uint64("delivered", m.Delivered).Str("trace_id", m.TraceID).Str("reason", reason).Msg("dead-lettered")
	return nil
}

// maxDeliveriesAdvisory is the server's CONSUMER.MAX_DELIVERIES advisory.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// watchMaxDeliveries dead-letters messages that ran out of deliveries without
// a handler result (a worker that crashed or hung on them every time).
func (b *Bus) watchMaxDeliveries(spec StageSpec, obs Observer) (*nats.Subscription, error) {
	subj := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", spec.Stream, spec.Name)
	sub, err := b.NC.Subscribe(subj, func(nm *nats.Msg) {
		var adv maxDeliveriesAdvisory
		if err := json.Unmarshal(nm.Data, &adv); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := b.JS.Stream(ctx, adv.Stream)
		if err != nil {
			return
		}
		raw, err := st.GetMsg(ctx, adv.StreamSeq)
		if err != nil {
			return // already gone (acked or terminated by a handler)
		}
		m := &Msg{Subject: raw.Subject, Data: raw.Data, Header: raw.Header, Delivered: adv.Deliveries, Stream: adv.Stream, StreamSeq: adv.StreamSeq}
		m.TraceID = raw.Header.Get(HeaderTraceID)
		if err := b.deadLetter(ctx, spec.Name, m, fmt.Sprintf("max deliveries (%d) reached with no handler result (worker crashed or timed out)", adv.Deliveries)); err != nil {
			b.Log.Error().Err(err).Msg("dead-letter from advisory failed")
			return
		}
		if obs != nil {
			obs.Settled(spec.Name, SettledDeadLettered, 0, true)
		}
		// Remove it from the work stream unless another stage still wants it.
		if interestedStages(ctx, st, raw.Subject) <= 1 {
			if st.DeleteMsg(ctx, adv.StreamSeq) == nil {
				// The dead letter keeps its own copy of a large body.
				m.object = raw.Header.Get(HeaderPayloadObject)
				b.dropPayload(ctx, m)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("stage %s: subscribe to max-deliveries advisories: %w", spec.Name, err)
	}
	return sub, nil
}

// interestedStages counts the consumers of st whose filters match subject
// (every process's stages, as the server knows them); on an error it
// answers 2, so the message is kept.
func interestedStages(ctx context.Context, st jetstream.Stream, subject string) int {
	n := 0
	lister := st.ListConsumers(ctx)
	for info := range lister.Info() {
		filters := info.Config.FilterSubjects
		if f := info.Config.FilterSubject; f != "" {
			filters = append(filters, f)
		}
		if len(filters) == 0 {
			filters = []string{">"}
		}
		for _, f := range filters {
			if subjectMatches(f, subject) {
				n++
				break
			}
		}
	}
	if lister.Err() != nil {
		return 2
	}
	return n
}

// interestedStages counts the consumers of the named stream that want
// subject (2, keep it, when the stream cannot be read).
func (b *Bus) interestedStages(ctx context.Context, stream, subject string) int {
	st, err := b.JS.Stream(ctx, stream)
	if err != nil {
		return 2
	}
	return interestedStages(ctx, st, subject)
}

// subjectMatches reports whether a NATS subject matches a filter with * and >.
func subjectMatches(filter, subject string) bool {
	fs, ss := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, f := range fs {
		if f == ">" {
			return len(ss) > i
		}
		if i >= len(ss) || (f != "*" && f != ss[i]) {
			return false
		}
	}
	return len(fs) == len(ss)
}
