package maintenance

import (
	"context"
	"fmt"
	"sort"

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

// repair sends what each difference calls for: the normal ingest path for
// new and changed sources, a forced resend for documents the index lacks
// parts of, the normal deletion path for documents whose source is gone,
// and removes vectors and manifests nothing owns.
func (t *checkTarget) repair(ctx context.Context, c *checked, res *RepairResult, opts CheckOptions) error {
	sources, err := t.bus.KV(ctx, stage.BucketSources)
	if err != nil {
		return err
	}
	manifests, err := t.bus.KV(ctx, stage.BucketChunks)
	if err != nil {
		return err
	}
	trace := t.trace
	log := t.log.With().Str("trace_id", trace).Logger()
	publish := func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := t.bus.Publish(ctx, ev, trace)
		return err
	}
	step := 0
	tick := func() {
		step++
		t.progress(opts, CheckProgress{Phase: "repair", Done: step, Total: len(c.report.Differences)})
	}

	// Vectors of chunks the index does not hold: nothing else would remove
	// them. First, so that a chunk resent below gets its vector back.
	if len(c.orphanVectors) > 0 && t.vec != nil {
		if err := t.vec.Delete(ctx, c.orphanVectors); err != nil {
			return fmt.Errorf("repair: delete %d orphan vectors: %w", len(c.orphanVectors), err)
		}
		res.Dropped += len(c.orphanVectors)
		tick()
	}

	// Points without a current lexical vector and passage: rewritten in
	// place from the index, keeping their dense vectors.
	if len(c.relex) > 0 {
		n, err := t.rewriteLexical(ctx, c.relex)
		res.Rewritten += n
		if err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		tick()
	}

	// What each document needs, once per document.
	need := map[string]string{}
	for _, d := range c.report.Differences {
		switch d.Repair {
		case RepairNone:
			res.Unrepaired++
			continue
		case RepairDrop, RepairLexical:
			continue // below
		}
		if d.DocID == "" {
			continue
		}
		// A deletion or an ingest supersedes a resend.
		if prev := need[d.DocID]; prev == "" || prev == RepairResend {
			need[d.DocID] = d.Repair
		}
	}
	ids := make([]string, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	// New and changed files: the normal ingest path over their folders.
	var syncPaths []string
	seenPath := map[string]bool{}
	for _, id := range ids {
		f := c.docs[id]
		if need[id] != RepairIngest || f.bridge {
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
	deletedBySync := map[string]bool{}
	if len(syncPaths) > 0 {
		st, ferrs, err := files.Sync(ctx, syncPaths, sources, publish, files.SyncOptions{
			OnSent: func(ev *schemas.DocChanged) {
				if ev.Deleted {
					deletedBySync[ev.DocID] = true
				}
				tick()
			},
		})
		if err != nil {
			return fmt.Errorf("repair: ingest %v: %w", syncPaths, err)
		}
		for _, fe := range ferrs {
			log.Warn().Str("path", fe.Path).Str("error", fe.Err).Msg("repair: file skipped")
		}
		res.Ingested += st.Sent
		res.Deleted += st.Deleted
	}

	// Forced resends of files, walked from their folders (a file outside
	// every folder alone), each at a version above what the stages hold.
	floors := map[string]int64{}
	byPath := map[string][]string{}
	var paths []string
	for _, id := range ids {
		f := c.docs[id]
		if need[id] != RepairResend || f.bridge || f.bridgeState != nil {
			continue
		}
		floor := f.newest()
		if v, err := t.store.DeletedVersion(ctx, id); err == nil {
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
		n, err := files.Resend(ctx, []string{p}, sources, publish, func(id string) (int64, bool) {
			floor, ok := floors[id]
			if ok {
				delete(floors, id) // once, even if walked twice
				tick()
			}
			return floor, ok
		}, func(path string, err error) {
			log.Warn().Str("path", path).Err(err).Msg("repair: file skipped")
		})
		if err != nil {
			return fmt.Errorf("repair: resend from %s: %w", p, err)
		}
		res.Resent += n
	}
	res.Unrepaired += len(floors) // not found again where they were

	// SiYuan documents: through the bridge's own path.
	for _, id := range ids {
		f := c.docs[id]
		if !(f.bridge || f.bridgeState != nil) || need[id] == RepairDelete {
			continue
		}
		if c.src == nil {
			res.Unrepaired++
			continue
		}
		floor := f.newest()
		if v, err := t.store.DeletedVersion(ctx, id); err == nil {
			floor = max(floor, v)
		}
		force := need[id] == RepairResend
		if err := c.src.Resync(ctx, id, force, floor); err != nil {
			return fmt.Errorf("repair: resend SiYuan document %s: %w", id, err)
		}
		if force {
			res.Resent++
		} else {
			res.Ingested++
		}
		tick()
	}

	// Documents whose source is gone: the normal deletion path.
	for _, id := range ids {
		f := c.docs[id]
		if need[id] != RepairDelete || deletedBySync[id] {
			continue
		}
		var err error
		if f.bridgeState != nil && c.src != nil {
			err = c.src.Remove(ctx, id)
		} else {
			hash, path := "", f.name()
			if f.fileState != nil {
				hash, path = f.fileState.Hash, f.fileState.Path
			} else if f.row != nil {
				hash, path = f.row.Hash, f.row.Path
			}
			floor := f.newest()
			if v, e := t.store.DeletedVersion(ctx, id); e == nil {
				floor = max(floor, v)
			}
			src := f.source()
			if src == "" {
				src = schemas.SourceMarkdown
			}
			err = files.Delete(ctx, sources, publish, id, src, path, hash, floor)
		}
		if err != nil {
			return fmt.Errorf("repair: delete %s: %w", f.name(), err)
		}
		res.Deleted++
		tick()
	}

	// Manifests of documents nobody knows: nothing else would remove them.
	for _, r := range c.goneRoots {
		if err := files.ForgetRoot(ctx, sources, r); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
	}
	for _, k := range c.orphanKeys {
		if err := manifests.Delete(ctx, k); err != nil {
			return fmt.Errorf("repair: delete chunk manifest %s: %w", k, err)
		}
		res.Dropped++
		tick()
	}
	log.Info().Int("ingested", res.Ingested).Int("resent", res.Resent).Int("deleted", res.Deleted).
		Int("dropped", res.Dropped).Int("rewritten", res.Rewritten).Int("unrepaired", res.Unrepaired).Msg("check: repair sent")
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
