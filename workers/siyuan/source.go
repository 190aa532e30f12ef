package siyuan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// Config configures the SiYuan source.
type Config struct {
	// URL is the kernel (default http://127.0.0.1:6806) and Token its API
	// token (Settings > About > API token).
	URL   string `json:"url"`
	Token string `json:"token"`
	// Include keeps only these notebooks and Exclude drops these (ids or
	// names); both empty: every notebook.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Reconcile is how often the whole kernel is compared with what was
	// sent while /ws is connected (default 3 minutes; also after every
	// reconnect), Poll how often without /ws (refused by a proxy, closed
	// for want of the access code: default 30 s). Plugin events are applied
	// as they come either way.
	Reconcile time.Duration `json:"-"`
	Poll      time.Duration `json:"-"`
	// AccessCode is the kernel's access authorization code, when it has
	// one: /ws then needs the session of /api/system/loginAuth (the API
	// token opens only /api/*). Without it such a kernel's /ws closes at
	// once; the bridge then polls (and the plugin keeps edits live).
	AccessCode string `json:"-"`
	// PluginOrigins are the browser origins (scheme://host:port) allowed
	// to post to the plugin endpoint: a SiYuan served to a browser (an
	// access code, Docker, a proxy) runs the plugin at its own origin.
	// Empty: the kernel URL's origin (the desktop app's window loads
	// http://127.0.0.1:<port>) and its loopback twin (localhost /
	// 127.0.0.1); "*" allows any. The secret is required either way.
	PluginOrigins []string `json:"-"`
	// Coalesce is how long changes of one document are gathered before it
	// is read and sent (default 300 ms).
	Coalesce time.Duration `json:"-"`
	// PluginSecret, when set, lets a SiYuan front-end plugin forward its
	// events to the source's HTTP endpoint with this shared secret.
	PluginSecret string `json:"plugin_secret,omitempty"`
	// PluginMaxBody is the largest request the plugin endpoint reads
	// (default 32 MiB; a larger one is refused with 413), PluginMaxInFlight
	// the bytes of all requests it reads at once (default 128 MiB; beyond
	// it, 503), PluginBodyTimeout how long a request's body may take to
	// arrive (default 30 s; then 408).
	PluginMaxBody     int64         `json:"-"`
	PluginMaxInFlight int64         `json:"-"`
	PluginBodyTimeout time.Duration `json:"-"`
}

// DefaultPoll is how often the kernel is reconciled without /ws.
const DefaultPoll = 30 * time.Second

func (c Config) withDefaults() Config {
	if c.URL == "" {
		c.URL = "http://127.0.0.1:6806"
	}
	if c.Reconcile == 0 {
		c.Reconcile = 3 * time.Minute
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Coalesce == 0 {
		c.Coalesce = 300 * time.Millisecond
	}
	return c
}

// Publish sends one document change.
type Publish func(ctx context.Context, ev *schemas.DocChanged) error

// Status is the source's state, for exocortex status.
type Status struct {
	URL string `json:"url"`
	// Connected is /ws open; Polling is the kernel answering over HTTP
	// without /ws, followed by a reconciliation every Config.Poll (and the
	// plugin's events); Notice says why there is no /ws and what to do.
	Connected     bool      `json:"connected"`
	Polling       bool      `json:"polling,omitempty"`
	PollEvery     string    `json:"poll_every,omitempty"`
	Notice        string    `json:"notice,omitempty"`
	LastEvent     time.Time `json:"last_event,omitzero"`
	LastReconcile time.Time `json:"last_reconcile,omitzero"`
	// DocsSynced is the number of the kernel's documents indexed now (sent
	// and not deleted), kept current by live events and reconciliations.
	DocsSynced int    `json:"docs_synced"`
	Sent       int    `json:"sent"`
	Deleted    int    `json:"deleted"`
	Error      string `json:"error,omitempty"`
	// Stopped is set when Run returned (a refused token, or shutdown).
	Stopped bool `json:"stopped,omitempty"`
	// ReportedAt is when a running system last wrote this state (set by
	// the writer): an old one means the bridge's process is gone.
	ReportedAt time.Time `json:"reported_at,omitzero"`
}

// docState is what the source remembers of a document it sent.
type docState struct {
	Box     string `json:"box"`
	Updated string `json:"updated"`
	Blocks  int    `json:"blocks"`
	Hash    string `json:"hash"`
	Version int64  `json:"version"`
	// HPath and Notebook are the title path and notebook name it was sent
	// with: a rename or move changes them without moving updated.
	HPath    string `json:"hpath,omitempty"`
	Notebook string `json:"notebook_name,omitempty"`
	// Labels are its tags and alias as sent (labelsOf): changing them
	// does not move updated either.
	Labels string `json:"labels,omitempty"`
	// Format is the sendFormat the document was sent under.
	Format int `json:"format,omitempty"`
	// Closed is set while its notebook is closed: the kernel's SQL no
	// longer holds it, the index keeps it.
	Closed bool `json:"closed,omitempty"`
}

// sendFormat goes up when the stages after the source need every document
// once more: a document remembered under a lower one is sent again at the
// next reconciliation even when unchanged. 1: chunks carry block spans (an
// index from before gets them).
const sendFormat = 1

// Source keeps the index in step with a SiYuan kernel.
type Source struct {
	cfg     Config
	client  *Client
	state   bus.KV
	publish Publish
	log     zerolog.Logger

	mu     sync.Mutex
	status Status
	names  map[string]string // notebook id -> name
	closed map[string]bool   // notebooks closed in the kernel
	boxDoc bool              // fileTree.boxDocEnabled
	dirty  map[string]bool   // documents to read again
	timer  *time.Timer
	kick   chan struct{}
	inbox  chan Event // /ws and plugin events, applied in order by Run
	plugin pluginGate // the plugin endpoint's bytes in flight and warnings
}

// New returns a source; state remembers what was sent (KB_SOURCES).
func New(cfg Config, state bus.KV, publish Publish, log zerolog.Logger) *Source {
	cfg = cfg.withDefaults()
	return &Source{cfg: cfg, client: NewClient(cfg.URL, cfg.Token), state: state, publish: publish,
		log:    log.With().Str("source", "siyuan").Str("kernel", cfg.URL).Logger(),
		status: Status{URL: cfg.URL}, dirty: map[string]bool{}, kick: make(chan struct{}, 1),
		inbox: make(chan Event, 1024)}
}

// Client is the source's kernel client.
func (s *Source) Client() *Client { return s.client }

// Status returns the source's state.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *Source) setStatus(f func(*Status)) {
	s.mu.Lock()
	f(&s.status)
	s.mu.Unlock()
}

// keep says whether notebook box (by id or name) is synced.
func (s *Source) keep(box string) bool {
	s.mu.Lock()
	name := s.names[box]
	s.mu.Unlock()
	in := func(list []string) bool {
		return slices.Contains(list, box) || name != "" && slices.Contains(list, name)
	}
	if len(s.cfg.Include) > 0 && !in(s.cfg.Include) {
		return false
	}
	return !in(s.cfg.Exclude)
}

// ReconcileStats counts what a reconciliation did.
type ReconcileStats struct {
	Docs      int `json:"docs"`
	Sent      int `json:"sent"`
	Unchanged int `json:"unchanged"`
	Deleted   int `json:"deleted"`
	Failed    int `json:"failed"`
	// Closed counts the documents kept (not deleted) because their
	// notebook is closed.
	Closed int `json:"closed,omitempty"`
}

// Reconcile compares the kernel with what was sent: a document whose
// updated moved, whose number of blocks changed, or whose title path or
// notebook name changed is read and sent again, a document that is gone
// (or in a notebook no longer synced) is deleted. It is the initial full
// sync too; it first asks the kernel to write its pending changes to SQL
// (a document created a moment ago is not there yet otherwise). progress,
// when set, sees the counts.
func (s *Source) Reconcile(ctx context.Context, progress func(ReconcileStats)) (ReconcileStats, error) {
	var st ReconcileStats
	if err := s.prepareReconcile(ctx); err != nil {
		return st, err
	}
	seen, err := s.reconcileDocs(ctx, &st, progress)
	if err != nil {
		return st, err
	}
	synced, err := s.sweep(ctx, seen, &st)
	if err != nil {
		return st, err
	}
	s.setStatus(func(x *Status) {
		x.LastReconcile, x.DocsSynced = time.Now(), synced
	})
	s.log.Info().Int("docs", st.Docs).Int("sent", st.Sent).Int("unchanged", st.Unchanged).Int("deleted", st.Deleted).
		Int("closed", st.Closed).Int("failed", st.Failed).Msg("siyuan: reconciled")
	return st, nil
}

// prepareReconcile reads the notebooks and asks the kernel to flush its
// SQL index; a failed flush is only logged (unless the token was refused
// or ctx ended).
func (s *Source) prepareReconcile(ctx context.Context) error {
	if err := s.loadNotebooks(ctx); err != nil {
		return err
	}
	if err := s.client.Flush(ctx); err != nil {
		if errors.Is(err, ErrAuth) || ctx.Err() != nil {
			return err
		}
		// Still worth comparing: what SQL holds now is synced.
		s.log.Warn().Err(err).Msg("siyuan: the kernel did not flush its SQL index; documents created a moment ago wait for the next reconciliation")
	}
	return nil
}

// reconcileDocs reads and sends again each of the kernel's documents that
// changed since it was sent, counting in st, and returns the ids it saw.
// progress, when set, sees the counts after each document read.
func (s *Source) reconcileDocs(ctx context.Context, st *ReconcileStats, progress func(ReconcileStats)) (map[string]bool, error) {
	s.mu.Lock()
	names := s.names
	s.mu.Unlock()
	docs, counts, err := s.listDocs(ctx)
	if err != nil {
		return nil, err
	}
	st.Docs = len(docs)
	seen := make(map[string]bool, len(docs))
	for _, d := range docs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seen[d.ID] = true
		prev, err := s.load(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		if unchangedSince(prev, d, counts[d.ID], names[d.Box]) {
			if prev.Closed { // its notebook opened again, nothing changed
				prev.Closed = false
				if err := s.save(ctx, d.ID, *prev); err != nil {
					return nil, err
				}
			}
			st.Unchanged++
			continue
		}
		if err := s.resend(ctx, d.ID, prev, st); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(*st)
		}
	}
	return seen, nil
}

// unchangedSince says whether document d (with its block count and its
// notebook's name) is as it was when prev was sent, in the current send
// format.
func unchangedSince(prev *docState, d DocInfo, blocks int, notebook string) bool {
	return prev != nil && prev.Updated == d.Updated && prev.Blocks == blocks && prev.HPath == d.HPath &&
		prev.Notebook == notebook && prev.Labels == d.Labels && prev.Format >= sendFormat
}

// resend reads document id and sends it if it changed, counting in st; a
// failure is counted and logged, and ends the reconciliation only when
// ctx ended.
func (s *Source) resend(ctx context.Context, id string, prev *docState, st *ReconcileStats) error {
	sent, err := s.sync(ctx, id, prev)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		st.Failed++
		s.log.Warn().Err(err).Str("doc_id", id).Msg("siyuan: document skipped; the next reconciliation tries again")
	case sent:
		st.Sent++
	default:
		st.Unchanged++
	}
	return nil
}

// sweep deletes the documents sent before that the kernel no longer lists
// (seen), but keeps those of a closed notebook, counting in st; it returns
// how many documents stay synced.
func (s *Source) sweep(ctx context.Context, seen map[string]bool, st *ReconcileStats) (int, error) {
	keys, err := s.state.Keys(ctx)
	if err != nil {
		return 0, err
	}
	synced := 0
	for _, k := range keys {
		id, ok := strings.CutPrefix(k, statePrefix)
		if !ok {
			continue
		}
		if seen[id] {
			synced++
			continue
		}
		kept, err := s.keepClosed(ctx, id)
		if err != nil {
			return 0, err
		}
		if kept {
			synced++
			st.Closed++
			continue
		}
		if err := s.remove(ctx, id); err != nil {
			return 0, err
		}
		st.Deleted++
	}
	return synced, nil
}

// listDocs lists the kernel's documents in the synced notebooks with their
// block counts; a notebook's own document is listed when it holds content
// and the kernel shows it (boxDocEnabled).
func (s *Source) listDocs(ctx context.Context) ([]DocInfo, map[string]int, error) {
	docs, err := s.client.Docs(ctx, s.keep)
	if err != nil {
		return nil, nil, err
	}
	counts, err := s.client.BlockCounts(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	boxDoc := s.boxDoc
	s.mu.Unlock()
	if !boxDoc {
		return docs, counts, nil
	}
	nbDocs, err := s.client.NotebookDocs(ctx, s.keep)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range nbDocs {
		if counts[d.ID] > 0 {
			docs = append(docs, d)
		}
	}
	return docs, counts, nil
}

// keepClosed marks document id closed (and keeps it) when its notebook is
// closed in the kernel; it says whether it did.
func (s *Source) keepClosed(ctx context.Context, id string) (bool, error) {
	prev, err := s.load(ctx, id)
	if err != nil || prev == nil {
		return false, err
	}
	s.mu.Lock()
	closed := s.closed[prev.Box]
	s.mu.Unlock()
	if !closed || !s.keep(prev.Box) {
		return false, nil
	}
	if !prev.Closed {
		prev.Closed = true
		if err := s.save(ctx, id, *prev); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (s *Source) loadNotebooks(ctx context.Context) error {
	l, err := s.client.ListNotebooks(ctx)
	if err != nil {
		return err
	}
	names := make(map[string]string, len(l.Notebooks))
	closed := map[string]bool{}
	for _, nb := range l.Notebooks {
		names[nb.ID] = nb.Name
		if nb.Closed {
			closed[nb.ID] = true
		}
	}
	s.mu.Lock()
	s.names, s.closed, s.boxDoc = names, closed, l.BoxDocEnabled
	s.mu.Unlock()
	return nil
}

// sync reads document id and sends it when its content changed; a
// document the kernel no longer has is deleted.
func (s *Source) sync(ctx context.Context, id string, prev *docState) (bool, error) {
	s.mu.Lock()
	names := s.names
	s.mu.Unlock()
	doc, err := s.client.FetchDoc(ctx, id, names)
	if err == nil && names[doc.Notebook] == "" {
		// A notebook created since the names were read: read them again.
		if err := s.loadNotebooks(ctx); err != nil {
			return false, err
		}
		s.mu.Lock()
		names = s.names
		s.mu.Unlock()
		doc, err = s.client.FetchDoc(ctx, id, names)
	}
	if err == nil && doc.Meta[NotebookDocMeta] != "" {
		s.mu.Lock()
		shown := s.boxDoc
		s.mu.Unlock()
		if !shown {
			err = fmt.Errorf("document %s: the notebook's own document with boxDocEnabled off: %w", id, ErrHidden)
		}
	}
	if errors.Is(err, ErrGone) && prev != nil {
		// Gone from SQL because its notebook was closed: kept.
		if kept, kerr := s.keepClosed(ctx, id); kerr != nil || kept {
			return false, kerr
		}
	}
	if errors.Is(err, ErrGone) || errors.Is(err, ErrHidden) {
		if prev != nil {
			return true, s.remove(ctx, id)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !s.keep(doc.Notebook) {
		if prev != nil {
			return true, s.remove(ctx, id)
		}
		return false, nil
	}
	blocks := len(doc.Blocks)
	next := docState{Box: doc.Notebook, Updated: updatedOf(doc), Blocks: blocks, Hash: doc.Hash, Version: doc.Version,
		HPath: doc.Meta["hpath"], Notebook: names[doc.Notebook], Labels: labelsOf(doc.Meta["tags"], doc.Meta["alias"], doc.Meta[schemas.ReportAttr]),
		Format: sendFormat}
	if prev != nil && prev.Hash == doc.Hash && prev.Format >= sendFormat {
		next.Version = max(prev.Version, doc.Version)
		return false, s.save(ctx, id, next)
	}
	if prev != nil && doc.Version <= prev.Version {
		doc.Version = prev.Version + 1 // updated has one-second resolution
	}
	next.Version = doc.Version
	if err := s.publish(ctx, doc); err != nil {
		return false, fmt.Errorf("publish document %s: %w", id, err)
	}
	if err := s.save(ctx, id, next); err != nil {
		return true, err
	}
	s.setStatus(func(x *Status) {
		x.Sent++
		if prev == nil {
			x.DocsSynced++
		}
	})
	return true, nil
}

// remove sends the deletion of a document that was sent before.
func (s *Source) remove(ctx context.Context, id string) error {
	prev, err := s.load(ctx, id)
	if err != nil || prev == nil {
		return err
	}
	del := &schemas.DocChanged{DocID: id, Source: schemas.SourceSiYuan, Notebook: prev.Box, Hash: prev.Hash,
		Version: max(time.Now().UnixNano(), prev.Version+1), Deleted: true}
	if err := s.publish(ctx, del); err != nil {
		return fmt.Errorf("publish deletion of %s: %w", id, err)
	}
	if err := s.state.Delete(ctx, statePrefix+id); err != nil {
		return err
	}
	s.setStatus(func(x *Status) { x.Deleted++; x.DocsSynced = max(0, x.DocsSynced-1) })
	return nil
}

// statePrefix keys the source's documents in KB_SOURCES.
const statePrefix = "siyuan."

func (s *Source) load(ctx context.Context, id string) (*docState, error) {
	raw, err := s.state.Get(ctx, statePrefix+id)
	if err != nil || raw == nil {
		return nil, err
	}
	var st docState
	if json.Unmarshal(raw, &st) != nil {
		return nil, nil // unreadable: treat the document as new
	}
	return &st, nil
}

func (s *Source) save(ctx context.Context, id string, st docState) error {
	raw, _ := json.Marshal(st)
	return s.state.Put(ctx, statePrefix+id, raw)
}

// updatedOf is the document's own updated stamp, kept in its version.
func updatedOf(doc *schemas.DocChanged) string {
	if doc.Version == 0 {
		return ""
	}
	return time.Unix(0, doc.Version).In(time.Local).Format("20060102150405")
}
