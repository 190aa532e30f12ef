package maintenance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/source"
	"github.com/exocortex/exocortex/workers/stage"
)

// Kinds of difference Check reports.
const (
	DiffNotIndexed    = "not-indexed"    // in a source, never ingested (or forgotten by the source state)
	DiffChanged       = "changed"        // the source changed since it was ingested
	DiffSourceGone    = "source-gone"    // the source is gone; the index still holds the document
	DiffNoDocument    = "no-document"    // ingested, but the index has no document row
	DiffStale         = "stale"          // the index or the chunk manifest holds another version
	DiffNoManifest    = "no-manifest"    // the chunk stage has no manifest of the document
	DiffMissingChunks = "missing-chunks" // chunks the manifest lists are not in the index
	DiffExtraChunks   = "extra-chunks"   // the index holds chunks the manifest does not list
	DiffNoFTS         = "missing-fts"    // chunks without a full-text row
	DiffNoVectors     = "missing-vectors"
	DiffOrphanVectors = "orphan-vectors" // vectors of chunks the index does not hold
	DiffRootMissing   = "root-missing"   // a folder or file ingest recorded is gone
	// Points on Qdrant without the lexical vector and passage the retrieve
	// stage searches there, or with those of an older format.
	DiffNoLexical    = "missing-lexical"
	DiffStaleLexical = "stale-lexical"
)

// Repairs a Difference calls for.
const (
	RepairIngest  = "ingest"          // send it through the source's normal path
	RepairResend  = "resend"          // send it again, forced (DocChanged.Force)
	RepairDelete  = "delete"          // the normal deletion path
	RepairDrop    = "drop"            // remove vectors (or a manifest) nothing else owns
	RepairLexical = "rewrite-lexical" // rewrite the points' lexical vectors and passages in place
	RepairNone    = "none"            // needs a person
)

// Difference is one way the index differs from its sources.
type Difference struct {
	Kind   string `json:"kind"`
	DocID  string `json:"doc_id,omitempty"`
	Source string `json:"source,omitempty"`
	// Where names the document as its source does (its path, say).
	Where  string `json:"where"`
	Detail string `json:"detail"`
	Repair string `json:"repair"`
}

// String is the difference as one line: where, then what differs.
func (d Difference) String() string { return d.Where + ": " + d.Detail }

// CheckReport is what Check found.
type CheckReport struct {
	// Roots are the folders and files compared; SiYuan the service a
	// source compared (source.Holding.Address: a kernel's URL; "" when
	// none), under the name its JSON has always had.
	Roots  []string `json:"roots"`
	SiYuan string   `json:"siyuan,omitempty"`
	// SourceDocs are the documents the sources hold; Documents, Chunks and
	// Vectors what the index holds (Vectors -1 when not counted).
	SourceDocs int `json:"source_docs"`
	Documents  int `json:"documents"`
	Chunks     int `json:"chunks"`
	Vectors    int `json:"vectors"`
	// VectorCheck says how vectors were checked: "store" (listed from the
	// vector store), "index" (the index's record of each chunk's vector;
	// the store is held by the running system), or "off" (no embedding model).
	VectorCheck string       `json:"vector_check"`
	Differences []Difference `json:"differences"`
	// Notes are things not checked, and why.
	Notes []string `json:"notes,omitempty"`
}

// Clean reports whether nothing differs.
func (r *CheckReport) Clean() bool { return len(r.Differences) == 0 }

// CheckProgress is how far a check or a repair is.
type CheckProgress struct {
	Phase string // "sources", "index", "manifests", "vectors", "repair", "settling"
	Done  int
	Total int // 0 when unknown
	// States are the stages' consumers while settling.
	States []bus.StageState
}

// CheckOptions say what the index is compared with.
type CheckOptions struct {
	// Paths are folders and files to compare; empty means those ingest
	// recorded, and every document the source state remembers. With Paths
	// (or Sources), only what they name is checked.
	Paths []string
	// Sources are configurations for the sources (workers/source), each
	// found by its type: a kernel to compare, say. A source not given one
	// compares what its role last reported, if anything.
	Sources []any
	// Progress, when set, sees the check go.
	Progress func(CheckProgress)
	// Forget are ingested folders removed for good: their documents are
	// taken as gone (a missing folder is otherwise left alone: it may be
	// unmounted), and a repair forgets the folder.
	Forget []string
	// Settle bounds the wait for the pipeline to settle, before the check
	// and after a repair (default 10 minutes).
	Settle time.Duration
}

// RepairResult is what Repair did, and the checks before and after.
type RepairResult struct {
	Before     *CheckReport `json:"before"`
	After      *CheckReport `json:"after"`
	Ingested   int          `json:"ingested"`   // sent through the normal ingest path
	Resent     int          `json:"resent"`     // sent again, forced
	Deleted    int          `json:"deleted"`    // deletions published
	Dropped    int          `json:"dropped"`    // orphan vectors and manifests removed
	Rewritten  int          `json:"rewritten"`  // points whose lexical vector and passage were rewritten
	Unrepaired int          `json:"unrepaired"` // differences left for a person
}

// checkTarget is what a check reads: the bus, the index, and the vector
// store when this process holds it.
type checkTarget struct {
	cat   stage.Catalog // its roles: the sources compared
	bus   *bus.Bus
	store *store.Store
	vec   vectors.Store // nil: vectors are checked from the index's records
	model string        // embedding model; "" with no model
	noVec bool          // no embedding model: vectors not checked
	log   zerolog.Logger
	// stored are the vector store's point ids (when vec is set).
	stored map[string]bool
	// lexical are the stored points whose lexical vector and passage are
	// missing or of an older format (when vec keeps them).
	lexical map[string]vectors.PointRef
	// trace is the trace id of what a repair sends, and of the log lines.
	trace string
}

// Check compares what the sources hold with what the index holds, on the
// system running on cfg.DataDir (or at cfg.NATSURL), or on one started
// here as ingest does, and reports every difference.
func Check(ctx context.Context, cfg system.Config, opts CheckOptions) (*CheckReport, error) {
	t, done, err := attachCheck(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer done()
	return t.settledReport(ctx, opts)
}

// settledReport waits until the pipeline has settled, then checks.
func (t *checkTarget) settledReport(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	if err := t.settle(ctx, opts); err != nil {
		return nil, err
	}
	c, err := t.check(ctx, opts)
	if err != nil {
		return nil, err
	}
	return c.report, nil
}

// Repair checks, then resends what is missing or stale and removes what
// should be gone, waits until the pipeline has settled, and checks again.
func Repair(ctx context.Context, cfg system.Config, opts CheckOptions) (*RepairResult, error) {
	t, done, err := attachCheck(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer done()
	return t.repairAll(ctx, opts)
}

// CheckSystem is Check on a system in hand (a test's, or a command's).
func CheckSystem(ctx context.Context, s *system.System, opts CheckOptions) (*CheckReport, error) {
	t, done, err := targetOf(s)
	if err != nil {
		return nil, err
	}
	defer done()
	return t.settledReport(ctx, opts)
}

// RepairSystem is Repair on a system in hand.
func RepairSystem(ctx context.Context, s *system.System, opts CheckOptions) (*RepairResult, error) {
	t, done, err := targetOf(s)
	if err != nil {
		return nil, err
	}
	defer done()
	return t.repairAll(ctx, opts)
}

// targetOf is what a check of s reads: its bus, and its index and vector
// store (the index opened read-only when s does not hold it).
func targetOf(s *system.System) (*checkTarget, func(), error) {
	cfg := s.Config()
	t := &checkTarget{cat: cfg.StageCatalog(), bus: s.Bus, store: s.Store, log: cfg.Log, noVec: s.Embedder == nil, trace: checkTrace()}
	if s.Embedder != nil {
		t.model, t.vec = s.Embedder.Name(), s.Vectors
	}
	if t.store != nil {
		return t, func() {}, nil
	}
	st, err := store.OpenReadOnly(system.DBPath(cfg.DataDir))
	if err != nil {
		return nil, nil, fmt.Errorf("check: open the index: %w", err)
	}
	t.store = st
	return t, func() { st.Close() }, nil
}

// attachCheck attaches to the running system (reading its index
// read-only), or starts one here with every stage.
func attachCheck(ctx context.Context, cfg system.Config) (*checkTarget, func(), error) {
	if cfg.NATSURL == "" {
		if url, ok := system.Running(cfg.DataDir); ok {
			cfg.NATSURL = url
		}
	}
	if cfg.NATSURL != "" {
		b, _, closeBus, err := system.Attach(ctx, cfg, false)
		if err != nil {
			return nil, nil, err
		}
		st, err := store.OpenReadOnly(system.DBPath(cfg.DataDir))
		if err != nil {
			closeBus()
			return nil, nil, fmt.Errorf("check reads the index in the data directory (run it where %s is): %w", system.DBPath(cfg.DataDir), err)
		}
		t := &checkTarget{cat: cfg.StageCatalog(), bus: b, store: st, log: cfg.Log, trace: checkTrace()}
		if set, err := system.RunningSettings(ctx, b); err == nil && set != nil && (set.NoModels || set.Search == "lexical") {
			t.noVec = true
		}
		// A Qdrant collection is not the running system's alone: list its
		// points (and their lexical vectors) as when nothing runs.
		if !t.noVec && cfg.Vectors.Kind == vectors.KindQdrant {
			q, err := openQdrantToCheck(ctx, cfg.Vectors.Qdrant)
			if err != nil {
				st.Close()
				closeBus()
				return nil, nil, fmt.Errorf("check: %w", err)
			}
			if q != nil {
				t.vec = q
				return t, func() { q.Close(); st.Close(); closeBus() }, nil
			}
		}
		return t, func() { st.Close(); closeBus() }, nil
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:-1"
	}
	cfg.StagesOnly = true // check reads its sources itself; no source runs here
	sys, err := system.Start(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	t, done, err := targetOf(sys)
	if err != nil {
		sys.Stop()
		return nil, nil, err
	}
	return t, func() { done(); sys.Stop() }, nil
}

// openQdrantToCheck opens the collection with the dense size it has; nil
// when it does not exist (the index's records are checked then).
func openQdrantToCheck(ctx context.Context, qc vectors.QdrantConfig) (*vectors.Qdrant, error) {
	dim, err := vectors.QdrantCollectionDim(ctx, qc)
	if err != nil || dim == 0 {
		return nil, err
	}
	return vectors.OpenQdrant(ctx, dim, qc)
}

func (t *checkTarget) progress(opts CheckOptions, p CheckProgress) {
	if opts.Progress != nil {
		opts.Progress(p)
	}
}

// settle waits until no stage has anything pending, so that work in flight
// is not taken for a difference.
func (t *checkTarget) settle(ctx context.Context, opts CheckOptions) error {
	d := opts.Settle
	if d <= 0 {
		d = 10 * time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := system.WaitIdle(wctx, t.bus, system.StageSpecs(), 250*time.Millisecond, func(states []bus.StageState) {
		pending := 0
		for _, s := range states {
			pending += int(s.Pending) + s.AckPending
		}
		t.progress(opts, CheckProgress{Phase: "settling", Done: pending, States: states})
	})
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the pipeline did not settle within %s (see 'exocortex status')", d)
	}
	return err
}

// docFacts is everything known of one document.
type docFacts struct {
	id string
	// The source: owner is the source it belongs to (nil when none claims
	// it); exists says it holds the document now (known: it was looked
	// at), held is how it holds it.
	owner         *openSource
	known, exists bool
	held          *source.Doc
	// What the system holds: sent is what the source remembers sending.
	sent     *source.Doc
	row      *store.DocRow
	chunks   []store.ChunkRow
	manifest *chunk.Manifest
	mfKey    string
	vectors  []string // vector ids of this doc whose chunk the index lacks
	// protected: its source could not be read this time (unparsable file,
	// missing root): never taken for gone.
	protected bool
	// relex are its chunks whose points need their lexical vector and
	// passage rewritten (set by compareIndex).
	relex []string
}

// openSource is a source opened for one check, with what it holds.
type openSource struct {
	src     source.Source
	holding *source.Holding
}

func (f *docFacts) source() string {
	switch {
	case f.held != nil && f.held.Kind != "":
		return f.held.Kind
	case f.sent != nil:
		return f.sent.Kind
	case f.row != nil:
		return f.row.Source
	}
	return ""
}

// newest is the highest version any part of the system holds of it.
func (f *docFacts) newest() int64 {
	var v int64
	if f.sent != nil {
		v = max(v, f.sent.Version)
	}
	if f.row != nil {
		v = max(v, f.row.Version)
	}
	if f.manifest != nil {
		v = max(v, f.manifest.Version)
	}
	for _, c := range f.chunks {
		v = max(v, c.Version)
	}
	return v
}

// indexed is the document as the index's row has it (ID alone without one).
func (f *docFacts) indexed() source.Doc {
	if f.row == nil {
		return source.Doc{ID: f.id}
	}
	return source.Doc{ID: f.id, Kind: f.row.Source, Path: f.row.Path, Title: f.row.Title, Hash: f.row.Hash}
}

func (f *docFacts) name() string {
	switch {
	case f.held != nil && f.held.Where != "":
		return f.held.Where
	case f.sent != nil && f.sent.Where != "":
		return f.sent.Where
	case f.owner != nil && f.row != nil:
		if where, _ := f.owner.src.Claim(f.indexed()); where != "" {
			return where
		}
	}
	return f.id
}

// checked is a check's report with what a repair needs.
type checked struct {
	report        *CheckReport
	docs          map[string]*docFacts
	sources       []*openSource
	explicit      bool
	orphanVectors []string
	orphanKeys    []string // manifests of unknown documents
	relex         []string // points whose lexical vector and passage a repair rewrites
}

// doc is what is known of document id, made on first use.
func (c *checked) doc(id string) *docFacts {
	f := c.docs[id]
	if f == nil {
		f = &docFacts{id: id}
		c.docs[id] = f
	}
	return f
}

// check reads every source, the index, the manifests and the vectors, one
// method per part, then compares them document by document.
func (t *checkTarget) check(ctx context.Context, opts CheckOptions) (*checked, error) {
	rep := &CheckReport{Vectors: -1, Differences: []Difference{}}
	c := &checked{report: rep, docs: map[string]*docFacts{}, explicit: len(opts.Paths) > 0 || len(opts.Sources) > 0}
	srcs, err := system.OpenSources(ctx, t.cat, t.bus, t.log, t.trace, opts.Sources)
	if err != nil {
		return nil, err
	}
	sent := make([][]source.Doc, len(srcs))
	for i, src := range srcs {
		if sent[i], err = t.readSent(ctx, c, src); err != nil {
			return nil, err
		}
	}
	for i, src := range srcs {
		if err := t.readHeld(ctx, c, src, sent[i], opts); err != nil {
			return nil, err
		}
	}
	for _, f := range c.docs {
		if f.exists {
			rep.SourceDocs++
		}
	}
	chunkDoc, err := t.readIndex(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	if err := t.readManifests(ctx, c, opts); err != nil {
		return nil, err
	}
	if err := t.readVectors(ctx, c, chunkDoc, opts); err != nil {
		return nil, err
	}
	t.claim(c)
	t.compareAll(c)
	return c, nil
}

// readSent reads what a source remembers sending.
func (t *checkTarget) readSent(ctx context.Context, c *checked, src source.Source) ([]source.Doc, error) {
	sent, err := src.Sent(ctx)
	if err != nil {
		return nil, err
	}
	for i := range sent {
		c.doc(sent[i].ID).sent = &sent[i]
	}
	return sent, nil
}

// readHeld reads what a source holds now, within this check's scope: the
// paths and configurations given, or what was recorded.
func (t *checkTarget) readHeld(ctx context.Context, c *checked, src source.Source, sent []source.Doc, opts CheckOptions) error {
	rep := c.report
	scope := source.Scope{Explicit: c.explicit, Config: opts.Sources, Sent: sent,
		Progress: func(done int) { t.progress(opts, CheckProgress{Phase: "sources", Done: done}) }}
	for _, p := range opts.Paths {
		scope.Paths = append(scope.Paths, notes.Canonical(p))
	}
	for _, p := range opts.Forget {
		scope.Forget = append(scope.Forget, notes.Canonical(p))
	}
	h, err := src.Held(ctx, scope)
	if err != nil {
		return err
	}
	o := &openSource{src: src, holding: h}
	c.sources = append(c.sources, o)
	rep.Notes = append(rep.Notes, h.Notes...)
	rep.Roots = append(rep.Roots, h.Roots...)
	if h.Address != "" {
		rep.SiYuan = h.Address
	}
	for _, p := range h.Problems {
		rep.Differences = append(rep.Differences, Difference{Kind: DiffRootMissing, Where: p.Where, Repair: RepairNone, Detail: p.Detail})
	}
	for _, d := range sent {
		c.doc(d.ID).owner = o
	}
	for _, id := range h.Unread {
		c.doc(id).protected = true
	}
	for _, id := range h.Gone {
		c.doc(id).known = true
	}
	for i := range h.Docs {
		f := c.doc(h.Docs[i].ID)
		f.owner, f.known, f.exists, f.held = o, true, true, &h.Docs[i]
	}
	return nil
}

// claim gives each document no source sent or holds the source that
// claims it (by the index's row).
func (t *checkTarget) claim(c *checked) {
	for _, f := range c.docs {
		if f.owner != nil {
			continue
		}
		for _, o := range c.sources {
			if _, ok := o.src.Claim(f.indexed()); ok {
				f.owner = o
				break
			}
		}
	}
}

// readIndex reads the index's documents and chunks; it returns the
// document of each chunk.
func (t *checkTarget) readIndex(ctx context.Context, c *checked, opts CheckOptions) (map[string]string, error) {
	rep := c.report
	rows, err := t.store.CheckDocs(ctx)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		c.doc(rows[i].DocID).row = &rows[i]
	}
	rep.Documents = len(rows)
	chunkDoc := map[string]string{}
	err = t.store.CheckChunks(ctx, func(cr store.ChunkRow) error {
		f := c.doc(cr.DocID)
		f.chunks = append(f.chunks, cr)
		chunkDoc[cr.ChunkID] = cr.DocID
		rep.Chunks++
		if rep.Chunks%2000 == 0 {
			t.progress(opts, CheckProgress{Phase: "index", Done: rep.Chunks})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.progress(opts, CheckProgress{Phase: "index", Done: rep.Chunks, Total: rep.Chunks})

	return chunkDoc, nil
}

// readManifests reads the chunk stage's manifests.
func (t *checkTarget) readManifests(ctx context.Context, c *checked, opts CheckOptions) error {
	rep := c.report
	manifests, err := t.bus.KV(ctx, stage.BucketChunks)
	if err != nil {
		return err
	}
	keys, err := manifests.Keys(ctx)
	if err != nil {
		return fmt.Errorf("check: list chunk manifests: %w", err)
	}
	byKey := map[string]string{}
	for id := range c.docs {
		byKey[chunk.ManifestKey(id)] = id
	}
	for i, k := range keys {
		raw, err := manifests.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("check: read chunk manifest %s: %w", k, err)
		}
		if raw == nil {
			continue
		}
		mf, err := chunk.DecodeManifest(raw)
		if err != nil {
			mf = chunk.Manifest{} // unreadable: the stage chunks the document afresh; compare as empty
		}
		id := byKey[k]
		if id == "" {
			id = chunk.DocOfManifestKey(k)
		}
		if id == "" && len(mf.Chunks) > 0 {
			id = chunk.DocOfChunk(mf.Chunks[0].ID)
		}
		if id == "" {
			c.orphanKeys = append(c.orphanKeys, k)
			rep.Differences = append(rep.Differences, Difference{Kind: DiffSourceGone, Where: "chunk manifest " + k, Repair: RepairDrop,
				Detail: "chunk manifest of a document no source or index knows"})
			continue
		}
		f := c.doc(id)
		f.manifest, f.mfKey = &mf, k
		if (i+1)%500 == 0 {
			t.progress(opts, CheckProgress{Phase: "manifests", Done: i + 1, Total: len(keys)})
		}
	}

	return nil
}

// readVectors lists the vector store's points (when this process holds
// it) and finds those of chunks the index does not hold.
func (t *checkTarget) readVectors(ctx context.Context, c *checked, chunkDoc map[string]string, opts CheckOptions) error {
	rep := c.report
	// The vectors. Read from the index's records, a system whose index
	// records no vector at all has no embedding model anywhere.
	if t.vec == nil && !t.noVec && rep.Chunks > 0 {
		any := false
		for _, f := range c.docs {
			for _, cr := range f.chunks {
				any = any || cr.VectorHash != ""
			}
		}
		t.noVec = !any
	}
	switch {
	case t.noVec:
		rep.VectorCheck = "off"
		rep.Notes = append(rep.Notes, "vectors not checked: no embedding model")
	case t.vec != nil:
		rep.VectorCheck = "store"
	default:
		rep.VectorCheck = "index"
		rep.Notes = append(rep.Notes, "vectors checked from the index's records (the running system holds the vector store)")
	}
	inStore := map[string]bool{}
	if t.vec != nil {
		lister, ok := t.vec.(vectors.Lister)
		if !ok {
			return fmt.Errorf("check: the %s vector store cannot list its points", t.vec.Name())
		}
		pts, err := lister.Points(ctx)
		if err != nil {
			return fmt.Errorf("check: list vectors: %w", err)
		}
		rep.Vectors = len(pts)
		lexicalOn := false
		if ls, ok := t.vec.(vectors.LexicalStore); ok {
			has, why := ls.HasLexical()
			lexicalOn = has
			if !has {
				rep.Notes = append(rep.Notes, "lexical vectors not checked: "+why+
					" (Qdrant cannot add a sparse vector to an existing collection: its collection update changes only the sparse vectors it has; "+
					"until then the retrieve stage searches the SQLite file)")
			}
		}
		t.lexical = map[string]vectors.PointRef{}
		for _, p := range pts {
			inStore[p.ID] = true
			if lexicalOn && p.Lexical != vectors.LexicalCurrent {
				t.lexical[p.ID] = p
			}
			if _, ok := chunkDoc[p.ID]; !ok {
				id := p.DocID
				if id == "" {
					id = chunk.DocOfChunk(p.ID)
				}
				c.doc(id).vectors = append(c.doc(id).vectors, p.ID)
				c.orphanVectors = append(c.orphanVectors, p.ID)
			}
		}
		t.stored = inStore
		t.progress(opts, CheckProgress{Phase: "vectors", Done: len(pts), Total: len(pts)})
	}

	return nil
}

// compareAll compares document by document, in id order.
func (t *checkTarget) compareAll(c *checked) {
	rep := c.report
	ids := make([]string, 0, len(c.docs))
	for id := range c.docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f := c.docs[id]
		diffs := t.compare(f, c.explicit)
		rep.Differences = append(rep.Differences, diffs...)
		c.relex = append(c.relex, f.relex...)
	}
	sort.SliceStable(rep.Differences, func(i, j int) bool { return rep.Differences[i].Where < rep.Differences[j].Where })
	t.log.Info().Str("trace_id", t.trace).Int("differences", len(rep.Differences)).Int("source_docs", rep.SourceDocs).
		Int("documents", rep.Documents).Int("chunks", rep.Chunks).Int("vectors", rep.Vectors).Str("vector_check", rep.VectorCheck).
		Msg("check: compared the index with its sources")
}

// differ makes the differences of one document.
type differ func(kind, repair, detail string) Difference

// compare lists how one document differs.
func (t *checkTarget) compare(f *docFacts, explicit bool) []Difference {
	src := f.source()
	d := func(kind, repair, detail string) Difference {
		return Difference{Kind: kind, DocID: f.id, Source: src, Where: f.name(), Detail: detail, Repair: repair}
	}
	var out []Difference
	if len(f.vectors) > 0 {
		out = append(out, d(DiffOrphanVectors, RepairDrop, fmt.Sprintf("%s of chunks the index does not hold", pluralize(len(f.vectors), "vector", "vectors"))))
	}
	if !f.known {
		if f.owner != nil && !f.owner.holding.Compared {
			// Its source was not read: check the index against what was sent.
			if explicit || f.sent == nil {
				return out
			}
			return append(out, t.compareIndex(f, f.sent.Hash, d)...)
		}
		if !t.look(f, explicit) {
			return out
		}
	}
	if f.protected {
		return out
	}
	if !f.exists {
		return append(out, gone(f, d)...)
	}
	// The source holds it.
	remembered := ""
	if f.sent != nil {
		remembered = f.sent.Hash
	}
	switch {
	case remembered == "" && f.row == nil && f.held.Drift != "":
		return append(out, d(DiffNotIndexed, RepairIngest, f.held.Drift)) // the source's own words
	case remembered == "" && f.row == nil:
		return append(out, d(DiffNotIndexed, RepairIngest, "not indexed"))
	case remembered == "":
		return append(out, d(DiffNotIndexed, RepairIngest, "indexed, but the source state does not remember it (ingest would not see it change)"))
	case f.held.Drift != "":
		return append(out, d(DiffChanged, RepairIngest, f.held.Drift))
	case f.held.Hash != "" && remembered != f.held.Hash:
		return append(out, d(DiffChanged, RepairIngest, "changed since it was ingested (content hash differs)"))
	}
	return append(out, t.compareIndex(f, remembered, d)...)
}

// look asks its source of a document only the index (or a manifest)
// holds whether it holds it; false when it is out of this check's scope.
func (t *checkTarget) look(f *docFacts, explicit bool) bool {
	path := f.name()
	if f.row != nil {
		path = f.row.Path
	}
	if f.owner == nil {
		// No source claims it (a document another program indexed, such
		// as eval's sets): no source here can say whether it is gone, so
		// it is not compared.
		return false
	}
	if in := f.owner.holding.InScope; explicit && in != nil && !in(path) {
		return false
	}
	held, err := f.owner.src.Look(context.Background(), f.indexed())
	switch {
	case err != nil:
		f.protected = true
	case held != nil:
		f.known, f.exists, f.held = true, true, held
	default:
		f.known = true
	}
	return true
}

// gone is the difference of a document its source no longer holds, when
// the system still holds any of it.
func gone(f *docFacts, d differ) []Difference {
	var what []string
	if f.row != nil {
		what = append(what, "its document")
	}
	if len(f.chunks) > 0 {
		what = append(what, pluralize(len(f.chunks), "chunk", "chunks"))
	}
	if f.manifest != nil {
		what = append(what, "its chunk manifest")
	}
	if f.sent != nil {
		what = append(what, "its source state")
	}
	if len(what) == 0 {
		return nil
	}
	goneText := "document is gone"
	if f.owner != nil && f.owner.holding.GoneText != "" {
		goneText = f.owner.holding.GoneText
	}
	return []Difference{d(DiffSourceGone, RepairDelete, goneText+"; the index still holds "+strings.Join(what, ", "))}
}

// chunkTally sorts a document's chunks by how they differ from its manifest.
type chunkTally struct {
	missing, stale, noFTS, noVec, noLex, oldLex, extra []string
	oldFormats                                         map[int]bool
}

// compareIndex lists how the index and the chunk manifest differ from the
// document the source sent (of content hash want).
func (t *checkTarget) compareIndex(f *docFacts, want string, d differ) []Difference {
	var out []Difference
	if f.row == nil {
		detail := "no document row in the index"
		if n := len(f.chunks); n > 0 {
			detail += fmt.Sprintf(" (its %s held without it, not searchable)", pluralize(n, "chunk is", "chunks are"))
		}
		out = append(out, d(DiffNoDocument, RepairResend, detail))
	} else if f.row.Hash != want {
		out = append(out, d(DiffStale, RepairResend, "the index holds another version of it (document hash differs)"))
	}
	if f.manifest == nil {
		return append(out, d(DiffNoManifest, RepairResend, "no chunk manifest (the chunk stage would take every chunk for new)"))
	}
	if f.manifest.DocHash != want {
		out = append(out, d(DiffStale, RepairResend, "the chunk manifest is of another version"))
	}
	tally := t.tallyChunks(f)
	out = append(out, t.chunkDiffs(f, tally, d)...)
	f.relex = append(f.relex, tally.noLex...)
	f.relex = append(f.relex, tally.oldLex...)
	return out
}

// tallyChunks compares each chunk the manifest lists with the index, the
// full-text rows and the vectors.
func (t *checkTarget) tallyChunks(f *docFacts) *chunkTally {
	have := make(map[string]store.ChunkRow, len(f.chunks))
	for _, c := range f.chunks {
		have[c.ChunkID] = c
	}
	listed := make(map[string]bool, len(f.manifest.Chunks))
	k := &chunkTally{oldFormats: map[int]bool{}}
	for _, mc := range f.manifest.Chunks {
		listed[mc.ID] = true
		c, ok := have[mc.ID]
		switch {
		case !ok:
			k.missing = append(k.missing, mc.ID)
			continue
		case c.Hash != mc.Hash:
			k.stale = append(k.stale, mc.ID)
		}
		if !c.FTS && f.row != nil {
			k.noFTS = append(k.noFTS, mc.ID)
		}
		if !t.noVec && !t.hasVector(c) {
			k.noVec = append(k.noVec, mc.ID)
		} else if p, ok := t.lexical[mc.ID]; ok && t.vec != nil && f.row != nil && c.Hash == mc.Hash {
			if p.Lexical == vectors.LexicalMissing {
				k.noLex = append(k.noLex, mc.ID)
			} else {
				k.oldLex = append(k.oldLex, mc.ID)
				k.oldFormats[max(p.LexFormat, 1)] = true
			}
		}
	}
	for _, c := range f.chunks {
		if !listed[c.ChunkID] {
			k.extra = append(k.extra, c.ChunkID)
		}
	}
	return k
}

// chunkDiffs are the differences a tally found.
func (t *checkTarget) chunkDiffs(f *docFacts, k *chunkTally, d differ) []Difference {
	var out []Difference
	total := len(f.manifest.Chunks)
	if len(k.missing) > 0 {
		out = append(out, d(DiffMissingChunks, RepairResend, fmt.Sprintf("%s missing from the index (%s)", ofChunks(len(k.missing), total, "is", "are"), firstIDs(k.missing))))
	}
	if len(k.stale) > 0 {
		out = append(out, d(DiffStale, RepairResend, fmt.Sprintf("%s other content than the manifest (%s)", ofChunks(len(k.stale), total, "holds", "hold"), firstIDs(k.stale))))
	}
	if len(k.extra) > 0 {
		out = append(out, d(DiffExtraChunks, RepairResend, fmt.Sprintf("%s in the index that the manifest does not list (%s)", pluralize(len(k.extra), "chunk", "chunks"), firstIDs(k.extra))))
	}
	if f.row != nil && len(f.row.ChunkIDs) != total && len(k.missing) == 0 && len(k.extra) == 0 {
		out = append(out, d(DiffStale, RepairResend, fmt.Sprintf("the document row lists %d chunks, the manifest %d", len(f.row.ChunkIDs), total)))
	}
	if len(k.noFTS) > 0 {
		out = append(out, d(DiffNoFTS, RepairResend, fmt.Sprintf("%s no full-text row (%s)", ofChunks(len(k.noFTS), total, "has", "have"), firstIDs(k.noFTS))))
	}
	if len(k.noVec) > 0 {
		out = append(out, d(DiffNoVectors, RepairResend, fmt.Sprintf("%s no vector (%s)", ofChunks(len(k.noVec), total, "has", "have"), firstIDs(k.noVec))))
	}
	if len(k.noLex) > 0 {
		out = append(out, d(DiffNoLexical, RepairLexical, fmt.Sprintf("%s no lexical vector and no passage on %s, so the retrieve stage cannot find them there "+
			"(written before lexical search on Qdrant) (%s)", ofChunks(len(k.noLex), total, "has", "have"), t.vec.Name(), firstIDs(k.noLex))))
	}
	if len(k.oldLex) > 0 {
		var formats []string
		for _, v := range slices.Sorted(maps.Keys(k.oldFormats)) {
			formats = append(formats, fmt.Sprint(v))
		}
		out = append(out, d(DiffStaleLexical, RepairLexical, fmt.Sprintf("%s a lexical vector of an older format on %s (format %s, now %d) (%s)",
			ofChunks(len(k.oldLex), total, "has", "have"), t.vec.Name(), strings.Join(formats, ", "), vectors.LexicalFormat, firstIDs(k.oldLex))))
	}
	return out
}

// hasVector says whether a chunk has a vector of its content: in the store
// when this process holds it, else by the index's record.
func (t *checkTarget) hasVector(c store.ChunkRow) bool {
	if c.VectorHash != c.Hash || (t.model != "" && c.VectorModel != t.model) {
		return false
	}
	if t.vec != nil {
		return t.stored[c.ChunkID]
	}
	return true
}

func firstIDs(ids []string) string {
	if len(ids) <= 2 {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:2], ", ") + fmt.Sprintf(", and %d more", len(ids)-2)
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ofChunks is "2 of 5 chunks have" (n of total, the verb agreeing with n).
func ofChunks(n, total int, one, many string) string {
	noun := "chunks"
	if total == 1 {
		noun = "chunk"
	}
	verb := many
	if n == 1 {
		verb = one
	}
	return fmt.Sprintf("%d of %d %s %s", n, total, noun, verb)
}

// checkTrace is a new trace id for one check or repair.
func checkTrace() string { return fmt.Sprintf("check-%x", time.Now().UnixNano()) }
