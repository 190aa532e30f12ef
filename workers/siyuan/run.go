package siyuan

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Retry timings: a kernel that went away is tried again after firstRetry,
// doubling up to maxRetry (so one that returns is noticed within 5 s); a
// /ws session shorter than settled does not reset the backoff nor count as
// a session (a kernel behind an access code accepts /ws and closes it).
const (
	firstRetry = 500 * time.Millisecond
	maxRetry   = 5 * time.Second
	settled    = time.Second
	// shortSessions in a row end /ws attempts until the next poll.
	shortSessions = 3
)

// unauthenticated is the close code of a kernel with an access code
// closing /ws without a session: melody's CloseWithMsg("  unauthenticated")
// puts two spaces where the code goes (0x2020 = 8224).
const unauthenticated websocket.StatusCode = 0x2020

// closedUnauthenticated says whether err is /ws closed by a kernel that
// wants the access code (the client library refuses the close code 8224
// as invalid, so the code is found in its message too).
func closedUnauthenticated(err error) bool {
	msg := err.Error()
	return websocket.CloseStatus(err) == unauthenticated || strings.Contains(msg, "StatusCode(8224)") ||
		strings.Contains(msg, "unauthenticated")
}

// wsEnd is how a /ws session ended.
type wsEnd struct {
	conn *websocket.Conn
	err  error
	took time.Duration
}

// Run keeps the index in step with the kernel until ctx ends. It checks
// the token (a refused token ends Run with ErrAuth: retrying cannot help)
// and syncs over the HTTP API whether or not /ws opens: it reconciles at
// start, after every reconnect, every Config.Reconcile while /ws is open
// and every Config.Poll while it is not (refused by a proxy, closed for
// want of the access code), and applies /ws and plugin events as they
// come. A kernel that went away is tried again with a backoff capped at
// 5 s.
func (s *Source) Run(ctx context.Context) error {
	s.setStatus(func(x *Status) { x.Stopped = false })
	// What an earlier run indexed counts until the first reconciliation.
	if n, err := s.remembered(ctx); err == nil {
		s.setStatus(func(x *Status) { x.DocsSynced = n })
	}
	r := newRunLoop(s)
	defer r.close()
	for {
		if err := r.step(ctx); err != nil {
			return runEnd(err)
		}
	}
}

// runEnd is what Run returns once a step ends it: the error of a refused
// token, nil on shutdown.
func runEnd(err error) error {
	if errors.Is(err, ErrAuth) {
		return err
	}
	return nil
}

// runLoop is the state of one Run: the /ws connection, the timers of the
// next kernel try, the next reconciliation and a new session's settling,
// and what the loop knows of the kernel. Its steps return nil to go on
// and an error to end Run (see runEnd).
type runLoop struct {
	s       *Source
	conn    *websocket.Conn
	ends    chan wsEnd
	backoff time.Duration
	up      bool   // the kernel answered the last call
	due     bool   // reconcile as soon as the kernel answers (start, or it came back)
	short   int    // /ws sessions in a row that ended before settled
	why     string // why /ws is not open, for the log on change
	reconAt time.Time

	link   *time.Timer // the next try of the kernel and /ws
	recon  *time.Timer // the next reconciliation (at reconAt)
	settle *time.Timer // a new /ws session counts once it has lived settled
}

func newRunLoop(s *Source) *runLoop {
	r := &runLoop{s: s, ends: make(chan wsEnd, 1), backoff: firstRetry, due: true,
		link: time.NewTimer(0), recon: time.NewTimer(time.Hour), settle: time.NewTimer(time.Hour)}
	r.recon.Stop()
	r.settle.Stop()
	return r
}

// close stops the timers, closes /ws and marks the bridge stopped.
func (r *runLoop) close() {
	r.link.Stop()
	r.recon.Stop()
	r.settle.Stop()
	if r.conn != nil {
		_ = r.conn.CloseNow()
	}
	r.s.setStatus(func(x *Status) { x.Connected, x.Polling, x.Stopped = false, false, true })
}

// step waits for the next thing to happen and handles it.
func (r *runLoop) step(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.link.C:
		return r.tryKernel(ctx)
	case <-r.settle.C:
		return r.settled(ctx)
	case end := <-r.ends:
		return r.wsEnded(ctx, end)
	case ev := <-r.s.inbox:
		return r.apply(ctx, ev)
	case <-r.s.kick:
		return r.flush(ctx)
	case <-r.recon.C:
		r.reconAt = time.Time{}
		if !r.up {
			return nil // the link's retries reconcile when the kernel answers
		}
		return r.reconcile(ctx)
	}
}

// schedule sets the next reconciliation d from now (force) or, when one
// is set already, only earlier than it.
func (r *runLoop) schedule(d time.Duration, force bool) {
	at := time.Now().Add(d)
	if force || r.reconAt.IsZero() || at.Before(r.reconAt) {
		r.recon.Reset(d)
		r.reconAt = at
	}
}

// drop closes /ws, if open.
func (r *runLoop) drop() {
	if r.conn != nil {
		_ = r.conn.CloseNow()
		r.conn = nil
	}
	r.settle.Stop()
}

// again tries the kernel again after the backoff, and doubles it.
func (r *runLoop) again() {
	r.link.Reset(r.backoff)
	r.backoff = min(2*r.backoff, maxRetry)
}

// retry records a kernel that did not answer and tries it again.
func (r *runLoop) retry(err error) {
	r.up, r.due = false, true
	r.drop()
	r.s.setStatus(func(x *Status) { x.Connected, x.Polling, x.Error = false, false, err.Error() })
	r.s.log.Warn().Err(err).Dur("retry_in", r.backoff).Msg("siyuan: kernel unreachable; trying again")
	r.again()
}

// polling records that /ws is not open (notice says why and what to do)
// and the kernel is followed over HTTP instead.
func (r *runLoop) polling(reason, notice string) {
	s := r.s
	s.setStatus(func(x *Status) {
		x.Connected, x.Polling, x.PollEvery, x.Error, x.Notice = false, true, s.cfg.Poll.String(), "", notice
	})
	if reason != r.why {
		r.why = reason
		s.log.Warn().Str("reason", reason).Dur("poll_every", s.cfg.Poll).Msg("siyuan: " + notice)
	}
	r.schedule(s.cfg.Poll, false)
}

// reconcile reconciles now and sets the next one; it ends Run only on a
// refused token or shutdown.
func (r *runLoop) reconcile(ctx context.Context) error {
	_, err := r.s.Reconcile(ctx, nil)
	switch {
	case err == nil:
		r.due = false
	case errors.Is(err, ErrAuth):
		return r.s.refused(err)
	case ctx.Err() != nil:
		return ctx.Err()
	case isUnreachable(err):
		r.retry(err)
	default:
		r.s.log.Warn().Err(err).Msg("siyuan: reconciliation failed; the next one tries again")
	}
	every := r.s.cfg.Poll
	if r.conn != nil {
		every = r.s.cfg.Reconcile
	}
	r.schedule(every, true)
	return nil
}

// reconcileIfDue reconciles when the kernel came back since the last one.
func (r *runLoop) reconcileIfDue(ctx context.Context) error {
	if r.due {
		return r.reconcile(ctx)
	}
	return nil
}

// tryKernel checks the kernel over HTTP (lsNotebooks checks the token)
// and, when /ws is not open, dials it or falls back to polling.
func (r *runLoop) tryKernel(ctx context.Context) error {
	s := r.s
	if err := s.client.Check(ctx); err != nil {
		if errors.Is(err, ErrAuth) {
			return s.refused(err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.retry(err)
		return nil
	}
	r.up = true
	if r.conn != nil {
		return nil
	}
	c, err := s.dial(ctx)
	if err == nil {
		// Reconciled once it has lived a moment (settle): a kernel
		// behind an access code accepts and closes at once.
		r.conn = c
		s.setStatus(func(x *Status) { x.Connected, x.Polling, x.Error, x.Notice = true, false, "", "" })
		go s.read(ctx, c, r.ends)
		r.settle.Reset(settled)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	reason, notice, next := s.noWS(err)
	if next == 0 { // the kernel went away between the calls
		r.retry(err)
		return nil
	}
	r.polling(reason, notice)
	r.link.Reset(next)
	return r.reconcileIfDue(ctx)
}

// settled counts a /ws session that lived a moment as connected and
// reconciles whatever changed while /ws was not open.
func (r *runLoop) settled(ctx context.Context) error {
	if r.conn == nil {
		return nil
	}
	r.short, r.backoff, r.why = 0, firstRetry, ""
	r.s.log.Info().Msg("siyuan: connected to /ws")
	return r.reconcile(ctx)
}

// wsEnded handles the end of the open /ws session: a settled one is
// dialed again after the backoff; short ones, closed for want of the
// access code or too many in a row, turn to polling.
func (r *runLoop) wsEnded(ctx context.Context, end wsEnd) error {
	s := r.s
	if end.conn != r.conn {
		return nil
	}
	r.drop()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if end.took >= settled {
		r.short = 0
		s.setStatus(func(x *Status) { x.Connected, x.Error = false, end.err.Error() })
		s.log.Warn().Err(end.err).Dur("retry_in", r.backoff).Msg("siyuan: /ws closed; reconnecting")
		r.again()
		r.schedule(s.cfg.Poll, false)
		return nil
	}
	r.short++
	switch {
	case closedUnauthenticated(end.err):
		r.polling("access code", s.accessNotice())
		r.link.Reset(s.cfg.Poll)
	case r.short >= shortSessions:
		r.polling("short sessions", fmt.Sprintf("/ws closes right after it opens (%v): edits are read over the HTTP API every %s; "+
			"install the Exocortex plugin in SiYuan for live edits", end.err, s.cfg.Poll))
		r.link.Reset(s.cfg.Poll)
	default:
		s.setStatus(func(x *Status) { x.Connected = false })
		r.again()
	}
	return r.reconcileIfDue(ctx)
}

// apply applies one /ws or plugin event; only a refused token ends Run.
func (r *runLoop) apply(ctx context.Context, ev Event) error {
	if err := r.s.Handle(ctx, ev); err != nil {
		if errors.Is(err, ErrAuth) {
			return r.s.refused(err)
		}
		r.s.log.Warn().Err(err).Str("cmd", ev.Cmd).Msg("siyuan: event not applied; the next reconciliation catches up")
	}
	return nil
}

// flush reads the documents marked changed; only a refused token ends Run.
func (r *runLoop) flush(ctx context.Context) error {
	if _, err := r.s.Flush(ctx); err != nil {
		if errors.Is(err, ErrAuth) {
			return r.s.refused(err)
		}
		r.s.log.Warn().Err(err).Msg("siyuan: changed documents not read yet")
	}
	return nil
}

// accessNotice says that /ws needs the access code and what works instead.
func (s *Source) accessNotice() string {
	if s.cfg.AccessCode != "" {
		return fmt.Sprintf("the kernel closed /ws though its access code was given (is EXOCORTEX_SIYUAN_ACCESS_CODE current?): "+
			"edits are read over the HTTP API every %s; the Exocortex plugin in SiYuan keeps them live", s.cfg.Poll)
	}
	return fmt.Sprintf("/ws needs the kernel's access authorization code: set EXOCORTEX_SIYUAN_ACCESS_CODE "+
		"(or access_code_env in the settings file), or install the Exocortex plugin in SiYuan; meanwhile edits are read "+
		"over the HTTP API every %s", s.cfg.Poll)
}

// noWS explains a /ws that did not open: reason (for the log), notice
// (for status and the log), and when to try /ws again (0: the kernel did
// not answer at all; a 5xx, such as a proxy whose kernel is restarting,
// within maxRetry; a refusal, at the next poll).
func (s *Source) noWS(err error) (reason, notice string, next time.Duration) {
	var refused *wsRefused
	switch {
	case errors.Is(err, ErrAccessCode):
		return "access code refused", fmt.Sprintf("%v: /ws cannot open; edits are read over the HTTP API every %s, "+
			"and the Exocortex plugin in SiYuan keeps them live", err, s.cfg.Poll), s.cfg.Poll
	case errors.As(err, &refused):
		next = s.cfg.Poll
		if refused.status >= 500 {
			next = min(next, maxRetry)
		}
		return fmt.Sprintf("HTTP %d", refused.status), fmt.Sprintf("/ws refused (HTTP %d: a reverse proxy that does not pass "+
			"WebSockets on?): edits are read over the HTTP API every %s; let /ws through, or install the Exocortex plugin "+
			"in SiYuan for live edits", refused.status, s.cfg.Poll), next
	}
	return "", "", 0
}

// isUnreachable says whether err is the kernel not answering (a network
// error) rather than an answer.
func isUnreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// wsRefused is a /ws upgrade answered with an HTTP status.
type wsRefused struct {
	status int
	err    error
}

func (e *wsRefused) Error() string {
	return fmt.Sprintf("siyuan /ws: refused with HTTP %d: %v", e.status, e.err)
}
func (e *wsRefused) Unwrap() error { return e.err }

// refused records a refused token in the status and the log; the bridge
// then stops with err.
func (s *Source) refused(err error) error {
	s.setStatus(func(x *Status) { x.Connected, x.Polling, x.Error, x.Stopped = false, false, err.Error(), true })
	s.log.Error().Err(err).Msg("siyuan: the kernel refused the API token; the bridge stops")
	return err
}

// read reads one /ws connection's events into the inbox until it fails,
// then says how it ended on ends.
func (s *Source) read(ctx context.Context, conn *websocket.Conn, ends chan<- wsEnd) {
	start := time.Now()
	for {
		_, raw, err := conn.Read(ctx)
		if err != nil {
			select {
			case ends <- wsEnd{conn: conn, err: fmt.Errorf("siyuan /ws: %w", err), took: time.Since(start)}:
			case <-ctx.Done():
			}
			return
		}
		var ev Event
		if json.Unmarshal(raw, &ev) != nil || ev.Cmd == "" {
			continue
		}
		select {
		case s.inbox <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// dial opens the kernel's /ws as a main window would, logged in with the
// access code first when one is configured.
func (s *Source) dial(ctx context.Context) (*websocket.Conn, error) {
	u, err := url.Parse(s.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("siyuan url %q: %w", s.cfg.URL, err)
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path = strings.TrimRight(u.Path, "/") + "/ws"
	var id [6]byte
	_, _ = rand.Read(id[:])
	u.RawQuery = url.Values{"app": {"exocortex"}, "id": {"exocortex-" + hex.EncodeToString(id[:])}, "type": {"main"}}.Encode()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	if s.cfg.AccessCode != "" {
		ck, err := s.client.LoginAuth(dctx, s.cfg.AccessCode)
		if err != nil {
			return nil, err
		}
		opts.HTTPHeader.Set("Cookie", ck.Name+"="+ck.Value)
	}
	conn, resp, err := websocket.Dial(dctx, u.String(), opts)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &wsRefused{status: resp.StatusCode, err: err}
		}
		return nil, fmt.Errorf("siyuan /ws: %w", err)
	}
	conn.SetReadLimit(64 << 20) // a document create carries its whole tree
	return conn, nil
}

// Deliver queues an event as if it came from /ws (the plugin endpoint).
func (s *Source) Deliver(ctx context.Context, ev Event) error {
	select {
	case s.inbox <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// remembered counts the documents the source has sent and not deleted.
func (s *Source) remembered(ctx context.Context) (int, error) {
	keys, err := s.state.Keys(ctx)
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, statePrefix) {
			n++
		}
	}
	return n, err
}
