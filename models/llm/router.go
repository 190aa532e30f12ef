package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/rs/zerolog"
)

// Request is one chat request routed to a provider by role.
type Request struct {
	Role        string
	Messages    []Message
	Temperature *float64
	MaxTokens   int
	// Stop ends the generation at any of these strings.
	Stop []string
	// JSONSchema, when set, asks for structured output through
	// response_format {"type":"json_schema",...} from providers that take it.
	JSONSchema *JSONSchema
	// OnRestart, when set, replaces RouterOptions.OnRestart for this
	// request (a caller that streams several requests at once needs to know
	// which one restarted).
	OnRestart func(provider string)
}

// JSONSchema is an OpenAI-style response_format json_schema.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// Result is the answer and the story of how it was obtained.
type Result struct {
	Text         string
	Provider     string
	Model        string
	FinishReason string
	Usage        *Usage
	Attempts     []Attempt
	// Structured says the answering request asked for structured output
	// (response_format json_schema was sent); the text may still be prose
	// when the provider ignores it.
	Structured bool
	// Cut says the client cut the stream at its max_tokens budget
	// (FinishReason "length"); the text is what arrived.
	Cut bool
}

// Attempt is one request to one provider. Restarted marks an attempt whose
// tokens had already reached the caller when it failed: OnRestart was called
// before the next attempt.
type Attempt struct {
	Provider  string
	Err       string // "" on success
	Duration  time.Duration
	Tokens    int
	Restarted bool
}

// RouterOptions tunes the router; zero values take the defaults.
type RouterOptions struct {
	HTTP             *http.Client     // default http.DefaultClient
	Now              func() time.Time // clock for rate windows and error decay; default time.Now
	BreakerThreshold uint             // consecutive failures that open a breaker; default 3
	BreakerDelay     time.Duration    // how long a breaker stays open; default 60s
	Retries          int              // retries per provider for retryable errors; default 2; negative = none
	BackoffBase      time.Duration    // default 500ms
	BackoffMax       time.Duration    // cap on backoff and on honoured Retry-After; default 10s
	ErrorHalfLife    time.Duration    // half-life of the recent-error score; default 5m
	Logger           *zerolog.Logger  // used when the context carries none; default disabled

	// OnRestart is called with the failed provider's name when an attempt
	// fails after some of its tokens were delivered to onToken and another
	// attempt (on the same or another provider) is about to start. The
	// caller should discard the output it has shown so far: the next attempt
	// streams the answer from the beginning. Nothing is buffered. When
	// OnRestart is nil, a failure after tokens were delivered is not retried
	// at all: Stream returns the error rather than duplicate tokens.
	OnRestart func(provider string)

	// OnAttempt, when set, is told of every request to a provider once it
	// ends: the provider's name, the request's role, how long it took and
	// its error (nil on success). Metrics hang here.
	OnAttempt func(provider, role string, took time.Duration, err error)
}

// ProviderHealth is a snapshot of one provider's standing.
type ProviderHealth struct {
	Name           string        `json:"name"`
	State          string        `json:"breaker"` // "closed", "open", "half-open"
	ErrorScore     float64       `json:"error_score"`
	LatencyEWMA    time.Duration `json:"latency_ns"`
	Free           bool          `json:"free"`
	RateLimit      string        `json:"rate_limit,omitempty"`
	WindowRequests int           `json:"window_requests"` // requests in the current rate window
}

// Router sends requests to the healthiest provider that can serve the role,
// falling over to the next one on failure.
type Router struct {
	opts      RouterOptions
	maskPII   bool
	roles     Config // for RoleSettings
	providers []*provider
}

type provider struct {
	cfg     Provider
	client  *Client
	local   bool
	breaker circuitbreaker.CircuitBreaker[Completion]
	limitN  int
	limitP  time.Duration

	mu sync.Mutex
	// noSchema: the provider answered 400 to response_format; ignoresSchema:
	// it was sent response_format and answered something that is not JSON.
	// Either way it is asked for prose from then on.
	noSchema      bool
	ignoresSchema bool
	errScore      float64
	errAt         time.Time
	latency       time.Duration
	requestsAt    []time.Time
}

const latencyAlpha = 0.3

// NewRouter validates cfg and builds a router. API keys are read from the
// providers' environment variables now.
func NewRouter(cfg Config, opts RouterOptions) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new llm router: %w", err)
	}
	if opts.HTTP == nil {
		opts.HTTP = http.DefaultClient
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BreakerThreshold == 0 {
		opts.BreakerThreshold = 3
	}
	if opts.BreakerDelay <= 0 {
		opts.BreakerDelay = 60 * time.Second
	}
	if opts.Retries == 0 {
		opts.Retries = 2
	} else if opts.Retries < 0 {
		opts.Retries = 0
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 500 * time.Millisecond
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 10 * time.Second
	}
	if opts.ErrorHalfLife <= 0 {
		opts.ErrorHalfLife = 5 * time.Minute
	}
	if opts.Logger == nil {
		l := zerolog.Nop()
		opts.Logger = &l
	}
	r := &Router{opts: opts, maskPII: cfg.MaskPII, roles: Config{Roles: cfg.Roles}}
	for _, pc := range cfg.Providers {
		p := &provider{cfg: pc, local: IsLocal(pc.BaseURL)}
		if pc.RateLimit != "" {
			p.limitN, p.limitP, _ = ParseRateLimit(pc.RateLimit) // validated above
		}
		var key string
		if pc.APIKeyEnv != "" {
			key = os.Getenv(pc.APIKeyEnv)
		}
		p.client = &Client{Name: pc.Name, BaseURL: pc.BaseURL, APIKey: key, KeyEnv: pc.APIKeyEnv,
			HTTP: opts.HTTP, Timeout: pc.Timeout, Now: opts.Now}
		name := pc.Name
		p.breaker = circuitbreaker.NewBuilder[Completion]().
			HandleIf(func(_ Completion, err error) bool {
				var pe *ProviderError
				return errors.As(err, &pe)
			}).
			WithFailureThreshold(opts.BreakerThreshold).
			WithDelay(opts.BreakerDelay).
			OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
				r.logger(e.Context()).Warn().Str("provider", name).
					Str("from", stateName(e.OldState)).Str("to", stateName(e.NewState)).
					Msg("llm breaker state changed")
			}).
			Build()
		r.providers = append(r.providers, p)
	}
	return r, nil
}

func (r *Router) logger(ctx context.Context) *zerolog.Logger {
	if ctx != nil {
		if l := zerolog.Ctx(ctx); l != nil && l.GetLevel() != zerolog.Disabled {
			return l
		}
	}
	return r.opts.Logger
}

func stateName(s circuitbreaker.State) string {
	switch s {
	case circuitbreaker.OpenState:
		return "open"
	case circuitbreaker.HalfOpenState:
		return "half-open"
	default:
		return "closed"
	}
}

// state reports the breaker state, counting an open breaker whose delay has
// elapsed as half-open (failsafe moves it there lazily on the next permit).
func (p *provider) state() string {
	s := p.breaker.State()
	if s == circuitbreaker.OpenState && p.breaker.RemainingDelay() <= 0 {
		return "half-open"
	}
	return stateName(s)
}

func (p *provider) scoreAt(now time.Time, halfLife time.Duration) float64 {
	if p.errScore == 0 {
		return 0
	}
	dt := now.Sub(p.errAt)
	return p.errScore * math.Pow(0.5, float64(dt)/float64(halfLife))
}

// window drops old timestamps and returns the requests in the current window
// and, when the limit is reached, when the next slot frees.
func (p *provider) window(now time.Time) (n int, next time.Time) {
	if p.limitN == 0 {
		return len(p.requestsAt), time.Time{}
	}
	cut := now.Add(-p.limitP)
	i := 0
	for i < len(p.requestsAt) && !p.requestsAt[i].After(cut) {
		i++
	}
	p.requestsAt = p.requestsAt[i:]
	if len(p.requestsAt) >= p.limitN {
		return len(p.requestsAt), p.requestsAt[0].Add(p.limitP)
	}
	return len(p.requestsAt), time.Time{}
}

// Health reports every provider's standing, in configuration order.
func (r *Router) Health() []ProviderHealth {
	now := r.opts.Now()
	out := make([]ProviderHealth, 0, len(r.providers))
	for _, p := range r.providers {
		p.mu.Lock()
		n, _ := p.window(now)
		h := ProviderHealth{Name: p.cfg.Name, State: p.state(), ErrorScore: p.scoreAt(now, r.opts.ErrorHalfLife),
			LatencyEWMA: p.latency, Free: p.cfg.Free, RateLimit: p.cfg.RateLimit, WindowRequests: n}
		p.mu.Unlock()
		out = append(out, h)
	}
	return out
}

type candidate struct {
	p     *provider
	model string
	state string
	score float64
	lat   time.Duration
}

// plan orders the providers that can serve role and explains the skipped ones.
func (r *Router) plan(role string) (cands []candidate, skipped []string, limited []string, nextSlot time.Time) {
	now := r.opts.Now()
	for _, p := range r.providers {
		model := p.cfg.Models[role]
		if model == "" {
			continue
		}
		st := p.state()
		if st == "open" {
			skipped = append(skipped, fmt.Sprintf("%s: breaker open for %s", p.cfg.Name, p.breaker.RemainingDelay().Round(time.Millisecond)))
			continue
		}
		p.mu.Lock()
		n, next := p.window(now)
		score, lat := p.scoreAt(now, r.opts.ErrorHalfLife), p.latency
		p.mu.Unlock()
		if !next.IsZero() {
			limited = append(limited, fmt.Sprintf("%s: %d/%d requests per %s used, next slot in %s",
				p.cfg.Name, n, p.limitN, p.limitP, next.Sub(now).Round(time.Second)))
			if nextSlot.IsZero() || next.Before(nextSlot) {
				nextSlot = next
			}
			continue
		}
		cands = append(cands, candidate{p: p, model: model, state: st, score: score, lat: lat})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if (a.state == "closed") != (b.state == "closed") {
			return a.state == "closed"
		}
		if a.p.cfg.Free != b.p.cfg.Free {
			return a.p.cfg.Free
		}
		if math.Abs(a.score-b.score) > 1e-9 {
			return a.score < b.score
		}
		return a.lat < b.lat
	})
	return cands, skipped, limited, nextSlot
}

// errStreamed marks a failure after tokens reached the caller when no
// OnRestart hook is set: it must not be retried anywhere.
type errStreamed struct{ err error }

func (e *errStreamed) Error() string {
	return e.err.Error() + " (after tokens were delivered; not retried)"
}
func (e *errStreamed) Unwrap() error { return e.err }

var errOverLimit = errors.New("rate limit reached")

// Stream sends req to the best provider for req.Role, delivering tokens to
// onToken as they arrive, retrying and falling over as configured. See
// RouterOptions.OnRestart for what happens when a stream fails midway.
func (r *Router) Stream(ctx context.Context, req Request, onToken func(string) error) (Result, error) {
	call := r.newStreamCall(ctx, req, onToken)
	cands, skipped, limited, nextSlot := r.plan(call.req.Role)
	if len(cands) == 0 {
		return Result{}, noCandidate(call.req.Role, skipped, limited, nextSlot)
	}
	var (
		lastErrs    []string
		streamedErr error
	)
	for _, c := range cands {
		if ctx.Err() != nil {
			break
		}
		a := call.attempt(c)
		comp, err := a.run()
		if err == nil {
			return call.succeeded(a, comp), nil
		}
		if ctx.Err() != nil {
			return call.res, fmt.Errorf("llm stream for role %s: %w", call.req.Role, ctx.Err())
		}
		var s *errStreamed
		if errors.As(err, &s) {
			streamedErr = err
			break
		}
		var pe *ProviderError
		switch {
		case errors.Is(err, circuitbreaker.ErrOpen):
			lastErrs = append(lastErrs, a.p.cfg.Name+": breaker open")
		case errors.Is(err, errOverLimit):
			lastErrs = append(lastErrs, a.p.cfg.Name+": rate limit reached")
		case errors.As(err, &pe):
			// recorded in Attempts
		default:
			// The caller's token sink failed: stop, nothing to fall over for.
			return call.res, fmt.Errorf("llm stream from %s: %w", a.p.cfg.Name, err)
		}
	}
	if ctx.Err() != nil {
		return call.res, fmt.Errorf("llm stream for role %s: %w", call.req.Role, ctx.Err())
	}
	if streamedErr != nil {
		return call.res, fmt.Errorf("%w for role %s: %s", ErrAllProvidersFailed, call.req.Role, streamedErr)
	}
	return call.res, call.allFailed(lastErrs, skipped, limited)
}

// noCandidate is Stream's error when the plan left no provider to try: all
// rate limited, all skipped (breaker open, failing), or none configured.
func noCandidate(role string, skipped, limited []string, nextSlot time.Time) error {
	switch {
	case len(limited) > 0 && len(skipped) == 0:
		return fmt.Errorf("%w for role %s: %s; next slot frees at %s", ErrRateLimited, role,
			strings.Join(limited, "; "), nextSlot.Format(time.RFC3339))
	case len(limited) > 0 || len(skipped) > 0:
		return fmt.Errorf("%w for role %s: %s", ErrAllProvidersFailed, role,
			strings.Join(append(skipped, limited...), "; "))
	default:
		return fmt.Errorf("%w %q", ErrNoProvider, role)
	}
}

// streamCall is the state one Stream call shares across its provider
// attempts: the result with every attempt so far, the attempt count for the
// logs, and a failed attempt that already delivered tokens (pending), which
// the next attempt announces through onRestart before it starts.
type streamCall struct {
	r         *Router
	ctx       context.Context
	req       Request
	onToken   func(string) error
	onRestart func(provider string)

	res        Result
	attemptNo  int
	pending    string // provider whose failed attempt delivered tokens
	pendingIdx int    // its index in res.Attempts
}

func (r *Router) newStreamCall(ctx context.Context, req Request, onToken func(string) error) *streamCall {
	onRestart := req.OnRestart
	if onRestart == nil {
		onRestart = r.opts.OnRestart
	}
	if onToken == nil {
		onToken = func(string) error { return nil }
	}
	return &streamCall{r: r, ctx: ctx, req: r.withRoleSettings(req), onToken: onToken,
		onRestart: onRestart, pendingIdx: -1}
}

// attempt prepares the request for candidate c: messages masked for a
// remote provider when the router masks PII, the JSON schema only where
// the provider takes one.
func (s *streamCall) attempt(c candidate) *streamAttempt {
	req := s.req
	msgs := req.Messages
	if s.r.maskPII && !c.p.local {
		msgs = make([]Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = Message{Role: m.Role, Content: MaskPII(m.Content)}
		}
	}
	creq := ChatRequest{Model: c.model, Messages: msgs, Temperature: req.Temperature, MaxTokens: req.MaxTokens, Stop: req.Stop}
	if req.JSONSchema != nil && c.p.takesSchema() {
		creq.JSONSchema = req.JSONSchema
	}
	return &streamAttempt{call: s, p: c.p, model: c.model, creq: creq}
}

// succeeded fills the result from a's completion.
func (s *streamCall) succeeded(a *streamAttempt, comp Completion) Result {
	res := s.res
	res.Text, res.Provider, res.Model = comp.Text, a.p.cfg.Name, a.model
	res.FinishReason, res.Usage, res.Cut = comp.FinishReason, comp.Usage, comp.Cut
	res.Structured = a.creq.JSONSchema != nil
	return res
}

// allFailed is Stream's error when every candidate failed: each attempt's
// error, then the providers that were not tried and why.
func (s *streamCall) allFailed(lastErrs, skipped, limited []string) error {
	var parts []string
	for _, a := range s.res.Attempts {
		if a.Err != "" {
			parts = append(parts, a.Provider+": "+a.Err)
		}
	}
	parts = append(parts, lastErrs...)
	parts = append(parts, skipped...)
	parts = append(parts, limited...)
	return fmt.Errorf("%w for role %s: %s", ErrAllProvidersFailed, s.req.Role, strings.Join(parts, "; "))
}

// streamAttempt is one candidate provider's part of a Stream call: its
// request, tried once and then again under the retry policy and the
// provider's circuit breaker.
type streamAttempt struct {
	call  *streamCall
	p     *provider
	model string
	creq  ChatRequest // loses its JSON schema when the provider rejects it
}

// run tries the provider under the retry policy and its breaker.
func (a *streamAttempt) run() (Completion, error) {
	retry := retrypolicy.NewBuilder[Completion]().
		HandleIf(retryable).
		WithMaxRetries(a.call.r.opts.Retries).
		WithDelayFunc(a.call.r.delay).
		ReturnLastFailure().
		Build()
	return failsafe.With[Completion](retry, a.p.breaker).WithContext(a.call.ctx).Get(a.once)
}

// retryable: a retryable error, unless tokens already reached the caller.
func retryable(_ Completion, err error) bool {
	var s *errStreamed
	return err != nil && IsRetryable(err) && !errors.As(err, &s)
}

// once is one try: announce a pending restart, take a rate-limit slot, chat,
// log and record the attempt.
func (a *streamAttempt) once() (Completion, error) {
	call, p := a.call, a.p
	if call.pending != "" {
		call.onRestart(call.pending)
		call.res.Attempts[call.pendingIdx].Restarted = true
		call.pending, call.pendingIdx = "", -1
	}
	if !a.takeSlot() {
		return Completion{}, errOverLimit
	}
	call.attemptNo++
	log := call.r.logger(call.ctx).With().Str("provider", p.cfg.Name).Str("model", a.model).
		Int("attempt", call.attemptNo).Logger()
	comp, dur, err := a.chat(&log)
	call.r.record(p, err, dur)
	if call.r.opts.OnAttempt != nil {
		call.r.opts.OnAttempt(p.cfg.Name, call.req.Role, dur, err)
	}
	if err == nil && a.creq.JSONSchema != nil && !looksJSON(comp) {
		a.noteIgnoresSchema(&log, comp)
	}
	call.res.Attempts = append(call.res.Attempts, a.logged(&log, comp, err, dur))
	if err != nil && comp.Tokens > 0 {
		if call.onRestart == nil {
			return comp, &errStreamed{err: err}
		}
		call.pending, call.pendingIdx = p.cfg.Name, len(call.res.Attempts)-1
	}
	return comp, err
}

// takeSlot records a request in the provider's rate window, or reports
// false when the window is full.
func (a *streamAttempt) takeSlot() bool {
	p := a.p
	now := a.call.r.opts.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, next := p.window(now); !next.IsZero() {
		return false
	}
	p.requestsAt = append(p.requestsAt, now)
	return true
}

// chat asks the provider, streaming tokens to the caller. A provider that
// answers 400 to response_format before any token is asked once more
// without it, and never again with it.
func (a *streamAttempt) chat(log *zerolog.Logger) (Completion, time.Duration, error) {
	call, p := a.call, a.p
	start := time.Now()
	comp, err := p.client.Chat(call.ctx, a.creq, call.onToken)
	var pe400 *ProviderError
	if a.creq.JSONSchema != nil && errors.As(err, &pe400) && pe400.Status == http.StatusBadRequest && comp.Tokens == 0 {
		p.mu.Lock()
		first := !p.noSchema
		p.noSchema = true
		p.mu.Unlock()
		if first {
			log.Warn().Str("error", err.Error()).
				Msg("llm provider rejects response_format json_schema; asking it for prose from now on")
		}
		call.res.Attempts = append(call.res.Attempts, Attempt{Provider: p.cfg.Name, Err: err.Error(), Duration: time.Since(start)})
		a.creq.JSONSchema = nil
		start = time.Now()
		comp, err = p.client.Chat(call.ctx, a.creq, call.onToken)
	}
	return comp, time.Since(start), err
}

// noteIgnoresSchema marks a provider that answered prose to a JSON schema:
// it is asked for prose from now on.
func (a *streamAttempt) noteIgnoresSchema(log *zerolog.Logger, comp Completion) {
	p := a.p
	p.mu.Lock()
	first := !p.ignoresSchema
	p.ignoresSchema = true
	p.mu.Unlock()
	if first {
		log.Warn().Str("text", excerpt(comp.Text, "")).
			Msg("llm provider ignores response_format json_schema (answered prose); asking it for prose from now on")
	}
}

// logged logs the attempt and returns its record for Result.Attempts.
func (a *streamAttempt) logged(log *zerolog.Logger, comp Completion, err error, dur time.Duration) Attempt {
	rec := Attempt{Provider: a.p.cfg.Name, Duration: dur, Tokens: comp.Tokens}
	ev := log.Info()
	if err != nil {
		rec.Err = err.Error()
		ev = log.Warn().Str("error", rec.Err)
	}
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Status != 0 {
		ev = ev.Int("status", pe.Status)
	}
	ev.Dur("duration", dur).Int("tokens", comp.Tokens).Str("breaker", a.p.state()).Msg("llm attempt")
	return rec
}

// delay is exponential backoff from BackoffBase, raised to the provider's
// Retry-After when larger, and capped by BackoffMax.
func (r *Router) delay(exec failsafe.ExecutionAttempt[Completion]) time.Duration {
	n := max(exec.Attempts()-1, 0)
	d := r.opts.BackoffBase << min(n, 20)
	var pe *ProviderError
	if errors.As(exec.LastError(), &pe) && pe.RetryAfter > d {
		d = pe.RetryAfter
	}
	return min(d, r.opts.BackoffMax)
}

func (r *Router) record(p *provider, err error, dur time.Duration) {
	now := r.opts.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var pe *ProviderError
	if errors.As(err, &pe) {
		p.errScore = p.scoreAt(now, r.opts.ErrorHalfLife) + 1
		p.errAt = now
		return
	}
	if err != nil {
		return
	}
	if p.latency == 0 {
		p.latency = dur
	} else {
		p.latency = time.Duration(latencyAlpha*float64(dur) + (1-latencyAlpha)*float64(p.latency))
	}
}

// Structured tells whether the provider the router would try first for role
// takes structured output (response_format json_schema), so the caller can
// ask for JSON: configured so, and not found to reject it (400) or to
// ignore it (answering prose). Callers parse either format anyway.
func (r *Router) Structured(role string) bool {
	cands, _, _, _ := r.plan(role)
	if len(cands) == 0 {
		return false
	}
	return cands[0].p.takesSchema()
}

// takesSchema: configured for response_format json_schema and not found
// to reject or ignore it.
func (p *provider) takesSchema() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.StructuredOutput == "json_schema" && !p.noSchema && !p.ignoresSchema
}

// withRoleSettings fills the request's zero generation fields from its
// role's settings (the config's, or DefaultRoles').
func (r *Router) withRoleSettings(req Request) Request {
	rs := r.roles.RoleSettings(req.Role)
	if req.MaxTokens == 0 {
		req.MaxTokens = rs.MaxTokens
	}
	if req.Temperature == nil {
		req.Temperature = rs.Temperature
	}
	if req.Stop == nil {
		req.Stop = rs.Stop
	}
	return req
}

// RoleSettings returns the generation settings requests of role get.
func (r *Router) RoleSettings(role string) RoleSettings { return r.roles.RoleSettings(role) }

// looksJSON tells whether a completion asked for JSON came back as JSON: an
// object (in a code fence or not), or, when cut at its budget, the start of
// one.
func looksJSON(c Completion) bool {
	t := strings.TrimSpace(c.Text)
	if s, ok := strings.CutPrefix(t, "```"); ok {
		s = strings.TrimPrefix(s, "json")
		t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	if !strings.HasPrefix(t, "{") {
		return false
	}
	return c.FinishReason == FinishLength || json.Valid([]byte(t))
}
