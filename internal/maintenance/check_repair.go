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
	"github.com/exocortex/exocortex/workers/files"
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
	sources   bus.KV
	manifests bus.KV
	log       zerolog.Logger
	step      int
	// need is the repair of each document, ids their ids in order.
	need map[string]string
	ids  []string
	// deletedBySync are documents an ingest deleted already.
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
	if r.sources, err = t.bus.KV(ctx, stage.BucketSources); err != nil {
		return err
	}
	if r.manifests, err = t.bus.KV(ctx, stage.BucketChunks); err != nil {
		return err
	}
	r.needs()
	for _, step := range []func(context.Context) error{r.dropOrphanVectors, r.rewriteLexicalPoints, r.ingestFiles, r.resendFiles,
		r.resyncSiYuan, r.deleteGone, r.dropManifests} {
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

// ingestFiles sends new and changed files through the normal ingest path.
func (r *repairRun) ingestFiles(ctx context.Context) error {
	// New and changed files: the normal ingest path over their folders.
	var syncPaths []string
	seenPath := map[string]bool{}
	for _, id := range r.ids {
		f := r.c.docs[id]
		if r.need[id] != RepairIngest || f.bridge {
			continue
		}
		p := f.root
		if p == "" {
			p = f.name()
		}
		if !seenPath[p] {
			seenPath[p] = true
			syncPaths = append(syncPaths, p)
		}
	}
	if len(syncPaths) > 0 {
		st, ferrs, err := files.Sync(ctx, syncPaths, r.sources, r.publish, files.SyncOptions{
			OnSent: func(ev *schemas.DocChanged) {
				if ev.Deleted {
					r.deletedBySync[ev.DocID] = true
				}
				r.tick()
			},
		})
		if err != nil {
			return fmt.Errorf("repair: ingest %v: %w", syncPaths, err)
		}
		for _, fe := range ferrs {
			r.log.Warn().Str("path", fe.Path).Str("error", fe.Err).Msg("repair: file skipped")
		}
		r.res.Ingested += st.Sent
		r.res.Deleted += st.Deleted
	}
	return nil
}

// resendFiles resends files, forced, at a version above what the stages hold.
func (r *repairRun) resendFiles(ctx context.Context) error {
	// Forced resends of files, walked from their folders (a file outside
	// every folder alone), each at a version above what the stages hold.
	floors := map[string]int64{}
	byPath := map[string][]string{}
	var paths []string
	for _, id := range r.ids {
		f := r.c.docs[id]
		if r.need[id] != RepairResend || f.bridge || f.bridgeState != nil {
			continue
		}
		floor := f.newest()
		if v, err := r.t.store.DeletedVersion(ctx, id); err == nil {
			floor = max(floor, v)
		}
		floors[id] = floor
		p := f.root
		if p == "" {
			p = f.name()
		}
		if _, ok := byPath[p]; !ok {
			paths = append(paths, p)
		}
		byPath[p] = append(byPath[p], id)
	}
	for _, p := range paths {
		n, err := files.Resend(ctx, []string{p}, r.sources, r.publish, func(id string) (int64, bool) {
			floor, ok := floors[id]
			if ok {
				delete(floors, id) // once, even if walked twice
				r.tick()
			}
			return floor, ok
		}, func(path string, err error) {
			r.log.Warn().Str("path", path).Err(err).Msg("repair: file skipped")
		})
		if err != nil {
			return fmt.Errorf("repair: resend from %s: %w", p, err)
		}
		r.res.Resent += n
	}
	r.res.Unrepaired += len(floors) // not found again where they were
	return nil
}

// resyncSiYuan resends SiYuan documents through the bridge's own path.
func (r *repairRun) resyncSiYuan(ctx context.Context) error {
	// SiYuan documents: through the bridge's own path.
	for _, id := range r.ids {
		f := r.c.docs[id]
		if !(f.bridge || f.bridgeState != nil) || r.need[id] == RepairDelete {
			continue
		}
		if r.c.src == nil {
			r.res.Unrepaired++
			continue
		}
		floor := f.newest()
		if v, err := r.t.store.DeletedVersion(ctx, id); err == nil {
			floor = max(floor, v)
		}
		force := r.need[id] == RepairResend
		if err := r.c.src.Resync(ctx, id, force, floor); err != nil {
			return fmt.Errorf("repair: resend SiYuan document %s: %w", id, err)
		}
		if force {
			r.res.Resent++
		} else {
			r.res.Ingested++
		}
		r.tick()
	}
	return nil
}

// deleteGone sends the deletion of documents whose source is gone.
func (r *repairRun) deleteGone(ctx context.Context) error {
	// Documents whose source is gone: the normal deletion path.
	for _, id := range r.ids {
		f := r.c.docs[id]
		if r.need[id] != RepairDelete || r.deletedBySync[id] {
			continue
		}
		var err error
		if f.bridgeState != nil && r.c.src != nil {
			err = r.c.src.Remove(ctx, id)
		} else {
			hash, path := "", f.name()
			if f.fileState != nil {
				hash, path = f.fileState.Hash, f.fileState.Path
			} else if f.row != nil {
				hash, path = f.row.Hash, f.row.Path
			}
			floor := f.newest()
			if v, e := r.t.store.DeletedVersion(ctx, id); e == nil {
				floor = max(floor, v)
			}
			src := f.source()
			if src == "" {
				src = schemas.SourceMarkdown
			}
			err = files.Delete(ctx, r.sources, r.publish, id, src, path, hash, floor)
		}
		if err != nil {
			return fmt.Errorf("repair: delete %s: %w", f.name(), err)
		}
		r.res.Deleted++
		r.tick()
	}
	return nil
}

// dropManifests forgets the roots gone for good and drops manifests nobody owns.
func (r *repairRun) dropManifests(ctx context.Context) error {
	// Manifests of documents nobody knows: nothing else would remove them.
	for _, root := range r.c.goneRoots {
		if err := files.ForgetRoot(ctx, r.sources, root); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
	}
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
