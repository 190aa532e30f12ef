package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/source"
	"github.com/exocortex/exocortex/workers/stage"
)

// This file is the folder source as check, repair and status see it
// (workers/source): the folders ingest recorded (or those named) walked
// against what was sent, and the resends and deletions of a repair through
// ingest's normal path (workers/files).

// inventory is the folder source opened for one check or status.
type inventory struct {
	state   bus.KV
	publish files.Publish
	bus     *bus.Bus
	log     zerolog.Logger
}

var _ source.Source = (*inventory)(nil)

// openInventory opens the folder source for check and status (the role's Source).
func openInventory(ctx context.Context, d *stage.Deps) (source.Source, error) {
	inv := &inventory{bus: d.Bus, log: d.Log}
	if d.KV != nil {
		state, err := d.KV(ctx, stage.BucketSources)
		if err != nil {
			return nil, err
		}
		inv.state = state
	}
	if d.Publish != nil {
		inv.publish = func(ctx context.Context, ev *schemas.DocChanged) error { return d.Publish(ctx, ev, "") }
	}
	return inv, nil
}

func (inv *inventory) Name() string { return RoleName }

// Sent lists the files the source state remembers sending.
func (inv *inventory) Sent(ctx context.Context) ([]source.Doc, error) {
	remembered, err := files.RememberedDocs(ctx, inv.state)
	if err != nil {
		return nil, err
	}
	out := make([]source.Doc, len(remembered))
	for i, r := range remembered {
		out[i] = source.Doc{ID: r.DocID, Kind: r.Source, Where: r.Path, Path: r.Path, Hash: r.Hash, Version: r.Version, Sent: true}
	}
	return out, nil
}

// folderScope is what one check walks.
type folderScope struct {
	explicit bool
	roots    []string
	dirs     map[string]bool // recorded roots that are folders
	forget   map[string]bool
}

// inScope says whether path is among what an explicit check compares.
func (s *folderScope) inScope(path string) bool {
	if !s.explicit {
		return true
	}
	for _, r := range s.roots {
		if path == r || under(path, r) {
			return true
		}
	}
	return false
}

func under(path, root string) bool { return strings.HasPrefix(path, root+string(filepath.Separator)) }

// scope is the paths given, or the roots ingest recorded.
func (inv *inventory) scope(ctx context.Context, scope source.Scope, h *source.Holding) (*folderScope, error) {
	sc := &folderScope{explicit: scope.Explicit, roots: scope.Paths, dirs: map[string]bool{}, forget: map[string]bool{}}
	if !sc.explicit {
		recorded, err := files.Roots(ctx, inv.state)
		if err != nil {
			return nil, err
		}
		for _, r := range recorded {
			sc.roots = append(sc.roots, r.Path)
			sc.dirs[r.Path] = r.Dir
		}
		if len(sc.roots) == 0 && len(scope.Sent) > 0 {
			h.Notes = append(h.Notes, "no ingested folders are recorded (ingest records them from now on): "+
				"each remembered file is compared, but new files are not looked for; give the folders: exocortex check DIR...")
		}
	}
	for _, p := range scope.Forget {
		sc.forget[p] = true
	}
	return sc, nil
}

// Held walks the roots in scope, then looks at each remembered file no
// walk reached; a missing root is a problem (or, forgotten or a single
// file, gone for good).
func (inv *inventory) Held(ctx context.Context, scope source.Scope) (*source.Holding, error) {
	h := &source.Holding{Compared: true, GoneText: "file is gone"}
	sc, err := inv.scope(ctx, scope, h)
	if err != nil {
		return nil, err
	}
	h.Roots, h.InScope = sc.roots, sc.inScope
	unread := map[string]bool{}
	walk := inv.missingRoots(sc, scope.Sent, h, unread)
	seen := map[string]bool{}
	walked := 0
	for _, r := range walk {
		err := notes.Walk([]string{r}, func(d *schemas.DocChanged) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			seen[d.DocID] = true
			h.Docs = append(h.Docs, source.Doc{ID: d.DocID, Where: d.Path, Hash: d.Hash, Group: r})
			walked++
			if scope.Progress != nil {
				scope.Progress(walked)
			}
			return nil
		}, func(path string, err error) {
			p := notes.Canonical(path)
			for _, rm := range scope.Sent {
				if rm.Path == p {
					unread[rm.ID] = true
				}
			}
			h.Notes = append(h.Notes, fmt.Sprintf("%s: not compared: %v", path, err))
		})
		if err != nil {
			return nil, fmt.Errorf("check: read %s: %w", r, err)
		}
	}
	inv.readRemembered(scope.Sent, sc, h, seen, unread)
	for id := range unread {
		h.Unread = append(h.Unread, id)
	}
	return h, nil
}

// missingRoots finds the roots that are gone and returns those to walk.
func (inv *inventory) missingRoots(sc *folderScope, sent []source.Doc, h *source.Holding, unread map[string]bool) []string {
	var walk []string
	for _, r := range sc.roots {
		if _, err := os.Stat(r); err != nil {
			if !sc.dirs[r] || sc.forget[r] {
				// A file ingested alone that is gone, or a folder the user
				// says is gone for good: its documents are gone.
				h.Forget = append(h.Forget, r)
				continue
			}
			h.Problems = append(h.Problems, source.Problem{Where: r,
				Detail: "ingested folder is missing (unmounted, moved or deleted?); its documents are left as they are " +
					"('exocortex check --repair --forget " + r + "' deletes them from the index)"})
			for _, rm := range sent {
				if rm.Path == r || under(rm.Path, r) {
					unread[rm.ID] = true
				}
			}
			continue
		}
		walk = append(walk, r)
	}
	return walk
}

// readRemembered looks at each remembered file no walk reached.
func (inv *inventory) readRemembered(sent []source.Doc, sc *folderScope, h *source.Holding, seen, unread map[string]bool) {
	for _, rm := range sent {
		if seen[rm.ID] || unread[rm.ID] || !sc.inScope(rm.Path) {
			continue
		}
		content, err := os.ReadFile(rm.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			h.Gone = append(h.Gone, rm.ID)
		case err != nil:
			unread[rm.ID] = true
			h.Notes = append(h.Notes, fmt.Sprintf("%s: not compared: %v", rm.Path, err))
		default:
			h.Docs = append(h.Docs, source.Doc{ID: rm.ID, Where: rm.Path, Hash: files.ContentHash(content)})
		}
	}
}

// Claim takes the index's documents with an absolute path (and those with
// no row at all: nothing else can claim them).
func (inv *inventory) Claim(d source.Doc) (string, bool) {
	if d.Kind == "" && d.Path == "" {
		return d.ID, true
	}
	if !filepath.IsAbs(d.Path) {
		return "", false
	}
	return d.Path, true
}

// Look reads a file only the index holds; with no path to look at,
// nothing can bring it back (gone).
func (inv *inventory) Look(_ context.Context, d source.Doc) (*source.Doc, error) {
	if !filepath.IsAbs(d.Path) {
		return nil, nil
	}
	content, err := os.ReadFile(d.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &source.Doc{ID: d.ID, Where: d.Path, Hash: files.ContentHash(content)}, nil
}

// groups are the folders (or files alone) docs are read from, in order.
func groups(docs []source.Doc) (paths []string, byPath map[string][]source.Doc) {
	byPath = map[string][]source.Doc{}
	for _, d := range docs {
		p := d.Group
		if p == "" {
			p = d.Where
		}
		if _, ok := byPath[p]; !ok {
			paths = append(paths, p)
		}
		byPath[p] = append(byPath[p], d)
	}
	return paths, byPath
}

// Resend sends docs again: new and changed files through ingest's normal
// path over their folders; forced, walked from their folders (a file
// outside every folder alone), each at a version above its Floor.
func (inv *inventory) Resend(ctx context.Context, docs []source.Doc, force bool, tick func()) (source.Resent, error) {
	var res source.Resent
	paths, _ := groups(docs)
	if len(paths) == 0 {
		return res, nil
	}
	if !force {
		st, ferrs, err := files.Sync(ctx, paths, inv.state, inv.publish, files.SyncOptions{
			OnSent: func(ev *schemas.DocChanged) {
				if ev.Deleted {
					res.Deleted = append(res.Deleted, ev.DocID)
				}
				tick()
			},
		})
		if err != nil {
			return res, fmt.Errorf("repair: ingest %v: %w", paths, err)
		}
		for _, fe := range ferrs {
			inv.log.Warn().Str("path", fe.Path).Str("error", fe.Err).Msg("repair: file skipped")
		}
		res.Sent = st.Sent
		return res, nil
	}
	floors := map[string]int64{}
	for _, d := range docs {
		floors[d.ID] = d.Floor
	}
	for _, p := range paths {
		n, err := files.Resend(ctx, []string{p}, inv.state, inv.publish, func(id string) (int64, bool) {
			floor, ok := floors[id]
			if ok {
				delete(floors, id) // once, even if walked twice
				tick()
			}
			return floor, ok
		}, func(path string, err error) {
			inv.log.Warn().Str("path", path).Err(err).Msg("repair: file skipped")
		})
		if err != nil {
			return res, fmt.Errorf("repair: resend from %s: %w", p, err)
		}
		res.Sent += n
	}
	res.Missed = len(floors) // not found again where they were
	return res, nil
}

// Remove sends the deletion of each file that is gone and forgets it,
// then forgets the roots gone for good.
func (inv *inventory) Remove(ctx context.Context, docs []source.Doc, forget []string, tick func()) (int, error) {
	n := 0
	for _, d := range docs {
		kind := d.Kind
		if kind == "" {
			kind = schemas.SourceMarkdown
		}
		if err := files.Delete(ctx, inv.state, inv.publish, d.ID, kind, d.Path, d.Hash, d.Floor); err != nil {
			return n, fmt.Errorf("repair: delete %s: %w", d.Where, err)
		}
		n++
		tick()
	}
	for _, root := range forget {
		if err := files.ForgetRoot(ctx, inv.state, root); err != nil {
			return n, fmt.Errorf("repair: %w", err)
		}
	}
	return n, nil
}

// Status is the folder watcher's state as it last reported it.
func (inv *inventory) Status(ctx context.Context) (*source.Status, error) {
	st, err := ReadStatus(ctx, inv.bus)
	if st == nil {
		return nil, err
	}
	return &source.Status{Key: "watch", Value: st, Lines: st.lines()}, nil
}

// lines are the watcher's state for status.
func (st *Status) lines() []string {
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	}
	state := "running"
	if st.Stopped {
		state = "stopped"
	}
	if st.Error != "" {
		state += " (" + st.Error + ")"
	}
	out := []string{fmt.Sprintf("watch: %s; last reconciliation %s; %d sent, %d deleted, %d failed", state, ago(st.LastReconcile), st.Sent, st.Deleted, st.Failed)}
	for _, f := range st.Folders {
		mode := f.Mode
		if f.Why != "" {
			mode += " (" + f.Why + ")"
		}
		docs := fmt.Sprintf("%d documents", f.Documents)
		if f.Documents == 1 {
			docs = "1 document"
		}
		out = append(out, fmt.Sprintf("  %s: %s, %s, last event %s", f.Path, mode, docs, ago(f.LastEvent)))
	}
	return out
}
