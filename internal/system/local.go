package system

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/stage"
)

// EnvLocalPipeline, set to 1, makes search and ask without a running
// system start the in-process pipeline (an embedded NATS server and every
// stage) as before OpenLocal existed, rather than read the data directory
// directly: a way back, and the old path of the standalone-search
// benchmark.
const EnvLocalPipeline = "EXOCORTEX_LOCAL_PIPELINE"

// LocalOptions say what a Local is for.
type LocalOptions struct {
	// Mode is the retrieval mode that will be asked for ("" the fullest the
	// installed models allow): only the models it needs are loaded.
	Mode string
	// Answer prepares answers (ask), not only search.
	Answer bool
}

// Local is the query side of the system opened in this process without
// NATS, stages or the bus: exocortex search, and ask, when nothing runs on
// the data directory. It reads the index (store.OpenUntouched) and the
// embedded vectors (read-only) and loads only the models its mode needs;
// for search it writes nothing in the data directory. For ask it opens the
// language-model providers when configured and the extractive model when
// installed, and the answer cache (answers.db) only when an answer can come
// from it: a provider or the extractive model, and a query embedding to
// look it up by.
type Local struct {
	sys   *System
	parts []string
	wg    sync.WaitGroup // follow-up questions being generated
}

// OpenLocal opens what cfg's data directory needs to answer queries here
// (see Local). Close it.
func OpenLocal(ctx context.Context, cfg Config, o LocalOptions) (*Local, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("open the local reader: no data directory given (Config.DataDir is empty)")
	}
	if !schemas.ValidMode(o.Mode) {
		return nil, fmt.Errorf("retrieval mode %q: want lexical, vector, hybrid or rerank", o.Mode)
	}
	cat := cfg.StageCatalog()
	names := []string{stageRetrieve, stageRerank}
	if o.Answer {
		names = append(names, stageAnswer)
	}
	var decls []stage.Declaration
	var needs stage.Needs
	for _, n := range names {
		d, ok := cat.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("open the local reader: the stage catalog has no %s stage", n)
		}
		decls = append(decls, d)
		needs |= d.Needs
	}
	// A provider may translate or reformulate the query, as the retrieve
	// stage of a running system does with its providers.
	needs |= stage.NeedRouter
	s := &System{cfg: cfg, readOnly: true}
	s.storeOptional = storeOptional(cfg, decls)
	if !s.storeOptional {
		// Lexical search on a Qdrant collection needs its vectors open;
		// otherwise a mode loads only its models.
		switch o.Mode {
		case schemas.ModeLexical:
			needs &^= stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker
		case schemas.ModeVector, schemas.ModeHybrid:
			needs &^= stage.NeedReranker
		}
	}
	if err := s.openParts(ctx, needs); err != nil {
		s.closeParts()
		for _, remove := range s.unmetric {
			remove()
		}
		return nil, err
	}
	l := &Local{sys: s}
	if s.Answerer != nil && s.Store != nil && (s.Router != nil || s.QA != nil) && s.Embedder != nil && s.Vectors != nil {
		if err := s.openCache(); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.parts = s.localParts()
	s.cfg.Log.Debug().Strs("parts", l.parts).Msg("opened here, without NATS or stages")
	return l, nil
}

// Stage names of the query path (workers/retrieve, rerank, answer).
const (
	stageRetrieve = "retrieve"
	stageRerank   = "rerank"
	stageAnswer   = "answer"
)

// localParts names what is open, for Parts.
func (s *System) localParts() []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	add(s.Store != nil, "index")
	add(s.lexical != nil, "lexical vectors")
	add(s.Embedder != nil, "embedding model")
	add(s.Vectors != nil, "vector store")
	add(s.Reranker != nil, "reranker")
	add(s.Router != nil, "language-model providers")
	add(s.Answerer != nil, "answerer")
	add(s.QA != nil, "extractive model")
	add(s.NLI != nil, "entailment model")
	add(s.Cache != nil, "answer cache")
	return out
}

// Parts names what the Local opened: index, lexical vectors, embedding
// model, vector store, reranker, language-model providers, answerer,
// extractive model, entailment model, answer cache (the models lazily
// loaded at first use, the reranker and the entailment model, are named
// when installed).
func (l *Local) Parts() []string { return l.parts }

// ModelNotes say which models are missing and what that changes.
func (l *Local) ModelNotes() []string { return l.sys.ModelNotes }

// Search runs a query to its ranked contexts (kb.query.reranked's event) as
// the retrieve and rerank stages would, within timeout.
func (l *Local) Search(ctx context.Context, q *schemas.QuerySubmitted, timeout time.Duration) (*schemas.QueryReranked, error) {
	q.DetectLang()
	ctx, cancel := context.WithTimeout(l.sys.cfg.Log.WithContext(ctx), timeout)
	defer cancel()
	return l.query(ctx, q)
}

// queryTries bounds the searches of one query when the index keeps
// changing under an immutable open (see store.Store.Changed).
const queryTries = 3

func (l *Local) query(ctx context.Context, q *schemas.QuerySubmitted) (*schemas.QueryReranked, error) {
	for try := 1; ; try++ {
		rr, again, err := l.queryOnce(ctx, q)
		if !again {
			return rr, err
		}
		if try == queryTries {
			return nil, fmt.Errorf("query %s: the index changed while it was read, %d times; ask again", q.QueryID, try)
		}
	}
}

// queryOnce runs q; again says the index changed while it was read (and
// was opened again).
func (l *Local) queryOnce(ctx context.Context, q *schemas.QuerySubmitted) (_ *schemas.QueryReranked, again bool, _ error) {
	r := l.sys.Retriever
	if r == nil {
		return nil, false, errors.New("local search: nothing to search with (no index open)")
	}
	if q.Time.IsZero() {
		q.Time = time.Now().UTC()
	}
	rr, err := func() (*schemas.QueryReranked, error) {
		rq, err := r.Retrieve(ctx, q)
		if err != nil {
			return nil, err
		}
		return r.Rerank(ctx, rq)
	}()
	if st := l.sys.Store; st != nil && st.Changed() {
		// A writer started meanwhile and wrote the file the immutable open
		// read: read again through its WAL.
		l.sys.cfg.Log.Debug().Str("index", st.Path()).Msg("the index changed while it was read: searching again")
		fresh, oerr := store.OpenUntouched(st.Path())
		if oerr != nil {
			return nil, false, fmt.Errorf("query %s: the index changed while it was read, and reopening it failed: %w", q.QueryID, oerr)
		}
		_ = st.Close()
		l.sys.Store, r.Index = fresh, fresh
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("query %s: %w", q.QueryID, err)
	}
	return rr, false, nil
}

// Ask answers a question here: its contexts as Search finds them, then the
// answer ladder (the providers, the extractive model, the passages), its
// tokens given to onToken as they come. The answer is returned as soon as
// it is final; its follow-up questions come after it, to onFollowUps
// (called once, unless stop is called first). Call stop when done with
// them. timeout bounds the whole.
func (l *Local) Ask(ctx context.Context, q *schemas.QuerySubmitted, timeout time.Duration, onToken func(*schemas.AnswerToken),
	onFollowUps func([]string)) (_ *schemas.AnswerDone, stop func(), _ error) {
	if l.sys.Answerer == nil {
		return nil, nil, errors.New("local ask: this reader was opened for search only (open it with LocalOptions.Answer)")
	}
	q.DetectLang()
	ctx, cancel := context.WithTimeout(l.sys.cfg.Log.WithContext(ctx), timeout)
	rq, err := l.query(ctx, q)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	a := *l.sys.Answerer
	a.Emit = func(ctx context.Context, t *schemas.AnswerToken) error {
		if onToken != nil {
			onToken(t)
		}
		return nil
	}
	done := a.Respond(ctx, rq)
	later := *done // FollowUp writes to it while the caller reads done
	later.TimingsMS = maps.Clone(done.TimingsMS)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ev := a.FollowUp(ctx, rq, &later)
		if onFollowUps != nil {
			onFollowUps(ev.FollowUps)
		}
	}()
	return done, cancel, nil
}

// Close waits for follow-up questions still being generated (stop them
// first with Ask's stop) and closes what OpenLocal opened.
func (l *Local) Close() error {
	l.wg.Wait()
	errs := l.sys.closeParts()
	for _, remove := range l.sys.unmetric {
		remove()
	}
	return errors.Join(errs...)
}
