package maintenance

import (
	"context"
	"fmt"
	"sort"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/source"
	"github.com/exocortex/exocortex/workers/stage"
)

// repairAll checks, repairs what differs, waits for the pipeline to settle
// and checks again.
func (t *checkTarget) repairAll(ctx context.Context, opts CheckOptions) (*RepairResult, error) {
	if err := t.settle(ctx, opts); err != nil {
		return nil, err
	}
	c, err := t.check(ctx, opts)
	if err != nil {
		return nil, err
	}
	res := &RepairResult{Before: c.report}
	if c.report.Clean() {
		res.After = c.report
		return res, nil
	}
	if err := t.repair(ctx, c, res, opts); err != nil {
		return res, err
	}
	if err := t.settle(ctx, opts); err != nil {
		return res, fmt.Errorf("after the repair: %w", err)
	}
	after, err := t.check(ctx, opts)
	if err != nil {
		return res, fmt.Errorf("check after the repair: %w", err)
	}
	res.After = after.report
	return res, nil
}

// repairRun is one repair: what it sends with, what it found to do, and
// what it did.
type repairRun struct {
	t         *checkTarget
	c         *checked
	res       *RepairResult
	opts      CheckOptions
	manifests bus.KV
	log       zerolog.Logger
	step      int
	// need is the repair of each document, ids their ids in order.
	need map[string]string
	ids  []string
	// deletedBySync are documents a source's resend deleted already.
	deletedBySync map[string]bool
}

func (r *repairRun) publish(ctx context.Context, ev *schemas.DocChanged) error {
	_, err := r.t.bus.Publish(ctx, ev, r.t.trace)
	return err
}

func (r *repairRun) tick() {
	r.step++
	r.t.progress(r.opts, CheckProgress{Phase: "repair", Done: r.step, Total: len(r.c.report.Differences)})
}

// repair sends what each difference calls for: the normal ingest path for
// new and changed sources, a forced resend for documents the index lacks
// parts of, the normal deletion path for documents whose source is gone,
// and removes vectors and manifests nothing owns. Vectors go first, so
// that a chunk resent after gets its vector back.
func (t *checkTarget) repair(ctx context.Context, c *checked, res *RepairResult, opts CheckOptions) error {
	r := &repairRun{t: t, c: c, res: res, opts: opts, log: t.log.With().Str("trace_id", t.trace).Logger(), deletedBySync: map[string]bool{}}
	var err error
	if r.manifests, err = t.bus.KV(ctx, stage.BucketChunks); err != nil {
		return err
	}
	r.needs()
	for _, step := range []func(context.Context) error{r.dropOrphanVectors, r.rewriteLexicalPoints, r.sendAgain,
		r.deleteGone, r.dropManifests} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	r.log.Info().Int("ingested", res.Ingested).Int("resent", res.Resent).Int("deleted", res.Deleted).
		Int("dropped", res.Dropped).Int("rewritten", res.Rewritten).Int("unrepaired", res.Unrepaired).Msg("check: repair sent")
	return nil
}

// dropOrphanVectors removes the vectors of chunks the index does not hold.
func (r *repairRun) dropOrphanVectors(ctx context.Context) error {
	// Vectors of chunks the index does not hold: nothing else would remove
	// them. First, so that a chunk resent below gets its vector back.
	if len(r.c.orphanVectors) > 0 && r.t.vec != nil {
		if err := r.t.vec.Delete(ctx, r.c.orphanVectors); err != nil {
			return fmt.Errorf("repair: delete %d orphan vectors: %w", len(r.c.orphanVectors), err)
		}
		r.res.Dropped += len(r.c.orphanVectors)
		r.tick()
	}
	return nil
}

// rewriteLexicalPoints rewrites the points without a current lexical vector and passage.
func (r *repairRun) rewriteLexicalPoints(ctx context.Context) error {
	// Points without a current lexical vector and passage: rewritten in
	// place from the index, keeping their dense vectors.
	if len(r.c.relex) > 0 {
		n, err := r.t.rewriteLexical(ctx, r.c.relex)
		r.res.Rewritten += n
		if err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		r.tick()
	}
	return nil
}

// needs says what each document needs, once per document (r.need, r.ids).
func (r *repairRun) needs() {
	// What each document needs, once per document.
	r.need = map[string]string{}
	for _, d := range r.c.report.Differences {
		switch d.Repair {
		case RepairNone:
			r.res.Unrepaired++
			continue
		case RepairDrop, RepairLexical:
			continue // below
		}
		if d.DocID == "" {
			continue
		}
		// A deletion or an ingest supersedes a resend.
		if prev := r.need[d.DocID]; prev == "" || prev == RepairResend {
			r.need[d.DocID] = d.Repair
		}
	}
	r.ids = make([]string, 0, len(r.need))
	for id := range r.need {
		r.ids = append(r.ids, id)
	}
	sort.Strings(r.ids)
}

// sendAgain sends each source's documents again: new and changed ones
// through its normal path, then forced resends of those the index lacks
// parts of, each at a version above what the stages hold.
func (r *repairRun) sendAgain(ctx context.Context) error {
	for _, o := range r.c.sources {
		for _, force := range []bool{false, true} {
			want := RepairIngest
			if force {
				want = RepairResend
			}
			docs := r.docsOf(ctx, o, want, force)
			if len(docs) == 0 {
				continue
			}
			res, err := o.src.Resend(ctx, docs, force, r.tick)
			if err != nil {
				return err
			}
			if force {
				r.res.Resent += res.Sent
			} else {
				r.res.Ingested += res.Sent
			}
			for _, id := range res.Deleted {
				r.deletedBySync[id] = true
			}
			r.res.Deleted += len(res.Deleted)
			r.res.Unrepaired += res.Missed
		}
	}
	return nil
}

// docsOf are the documents of source o that need repair want, in id order;
// with floor, each with the newest version the stages hold of it.
func (r *repairRun) docsOf(ctx context.Context, o *openSource, want string, floor bool) []source.Doc {
	var out []source.Doc
	for _, id := range r.ids {
		f := r.c.docs[id]
		if r.need[id] != want || f.owner != o || (want == RepairDelete && r.deletedBySync[id]) {
			continue
		}
		out = append(out, r.repairDoc(ctx, f, floor))
	}
	return out
}

// repairDoc is what a source is given to resend or delete f: as it was
// sent, else as the index holds it.
func (r *repairRun) repairDoc(ctx context.Context, f *docFacts, floor bool) source.Doc {
	d := source.Doc{ID: f.id, Kind: f.source(), Where: f.name(), Path: f.name()}
	switch {
	case f.sent != nil:
		d.Hash, d.Path, d.Version, d.Sent = f.sent.Hash, f.sent.Path, f.sent.Version, true
	case f.row != nil:
		d.Hash, d.Path = f.row.Hash, f.row.Path
	}
	if f.held != nil {
		d.Group = f.held.Group
	}
	if floor {
		d.Floor = f.newest()
		if v, err := r.t.store.DeletedVersion(ctx, f.id); err == nil {
			d.Floor = max(d.Floor, v)
		}
	}
	return d
}

// deleteGone sends the deletion of documents whose source is gone, through
// their source (which forgets what it found gone for good too).
func (r *repairRun) deleteGone(ctx context.Context) error {
	for _, o := range r.c.sources {
		docs := r.docsOf(ctx, o, RepairDelete, true)
		if len(docs) == 0 && len(o.holding.Forget) == 0 {
			continue
		}
		n, err := o.src.Remove(ctx, docs, o.holding.Forget, r.tick)
		r.res.Deleted += n
		if err != nil {
			return err
		}
	}
	// Documents no source claims: a plain deletion.
	for _, d := range r.docsOf(ctx, nil, RepairDelete, true) {
		if err := r.publish(ctx, source.Deletion(d)); err != nil {
			return fmt.Errorf("repair: delete %s: %w", d.Where, err)
		}
		r.res.Deleted++
		r.tick()
	}
	return nil
}

// dropManifests drops the manifests nobody owns.
func (r *repairRun) dropManifests(ctx context.Context) error {
	// Manifests of documents nobody knows: nothing else would remove them.
	for _, k := range r.c.orphanKeys {
		if err := r.manifests.Delete(ctx, k); err != nil {
			return fmt.Errorf("repair: delete chunk manifest %s: %w", k, err)
		}
		r.res.Dropped++
		r.tick()
	}
	return nil
}

// rewriteLexical gives the points of ids the lexical vector and passage of
// their chunks in the index (retrieval.RefreshLexical, as the index stage
// writes them), in batches, keeping their dense vectors. It returns how
// many points were rewritten.
func (t *checkTarget) rewriteLexical(ctx context.Context, ids []string) (int, error) {
	r, ok := t.vec.(retrieval.LexicalRefresher)
	if !ok {
		return 0, fmt.Errorf("the %s vector store cannot rewrite lexical vectors", t.vec.Name())
	}
	const batch = 256
	done := 0
	for lo := 0; lo < len(ids); lo += batch {
		part := ids[lo:min(lo+batch, len(ids))]
		n, err := retrieval.RefreshLexical(ctx, r, t.store, part)
		done += n
		if err != nil {
			return done, fmt.Errorf("rewrite lexical vectors of %d points (first %s): %w", len(part), part[0], err)
		}
	}
	t.log.Info().Str("trace_id", t.trace).Int("points", done).Int("format", vectors.LexicalFormat).Msg("check: lexical vectors rewritten")
	return done, nil
}
