package siyuan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/source"
	"github.com/exocortex/exocortex/workers/stage"
)

// This file is the bridge as check, repair and status see it
// (workers/source): the kernel's documents against what was sent, and the
// resends and deletions of a repair through the bridge's own path.

// inventory is the bridge opened for one check or status.
type inventory struct {
	state   bus.KV
	publish Publish
	bus     *bus.Bus
	config  []any
	log     zerolog.Logger
	// src is the kernel compared by Held (nil: none, or unreadable).
	src *Source
}

var _ source.Source = (*inventory)(nil)

// openInventory opens the bridge for check and status (the role's Source).
func openInventory(ctx context.Context, d *stage.Deps) (source.Source, error) {
	inv := &inventory{bus: d.Bus, config: d.Config, log: d.Log}
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

// Sent lists the documents the bridge remembers sending.
func (inv *inventory) Sent(ctx context.Context) ([]source.Doc, error) {
	bridged, err := RememberedDocs(ctx, inv.state)
	if err != nil {
		return nil, err
	}
	out := make([]source.Doc, 0, len(bridged))
	for id, r := range bridged {
		out = append(out, source.Doc{ID: id, Kind: schemas.SourceSiYuan, Where: bridgeName(id, r.Notebook, r.HPath), Hash: r.Hash, Version: r.Version, Sent: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// kernel is the kernel a check compares: the one given, or the one the
// bridge last reported (its token from EXOCORTEX_SIYUAN_TOKEN); asked says
// it was given.
func (inv *inventory) kernel(ctx context.Context, scope source.Scope) (cfg *Config, asked bool, note string) {
	if c := stage.ConfigOf[*Config](&stage.Deps{Config: scope.Config}, nil); c != nil {
		return c, true, ""
	}
	if rc := stage.ConfigOf[*RoleConfig](&stage.Deps{Config: scope.Config}, nil); rc != nil {
		return &rc.Config, true, ""
	}
	if scope.Explicit || len(scope.Sent) == 0 {
		return nil, false, ""
	}
	if st, err := ReadStatus(ctx, inv.bus); err == nil && st != nil && st.URL != "" {
		return &Config{URL: st.URL, Token: os.Getenv("EXOCORTEX_SIYUAN_TOKEN")}, false, ""
	}
	return nil, false, fmt.Sprintf("%s from SiYuan not compared with the kernel (no bridge has run here): give --siyuan URL",
		pluralize(len(scope.Sent), "document", "documents"))
}

// Held lists the kernel's documents (when one is compared) and how each
// differs from what the bridge sent.
func (inv *inventory) Held(ctx context.Context, scope source.Scope) (*source.Holding, error) {
	h := &source.Holding{GoneText: "document is gone from SiYuan"}
	kernel, asked, note := inv.kernel(ctx, scope)
	if note != "" {
		h.Notes = append(h.Notes, note)
	}
	if kernel == nil {
		return h, nil
	}
	inv.src = New(*kernel, inv.state, inv.publish, inv.log)
	kdocs, err := inv.src.Compare(ctx)
	switch {
	case err != nil && (asked || ctx.Err() != nil):
		return nil, fmt.Errorf("check: read SiYuan at %s: %w", kernel.URL, err)
	case err != nil:
		// The kernel the bridge last used, not one asked for: say so
		// and check the rest.
		h.Notes = append(h.Notes, fmt.Sprintf("SiYuan at %s could not be read (%v): its %s compared with what was sent only",
			kernel.URL, err, pluralize(len(scope.Sent), "document", "documents")))
		inv.src = nil
		return h, nil
	}
	h.Compared, h.Address = true, kernel.URL
	held := map[string]bool{}
	for _, kd := range kdocs {
		held[kd.DocID] = true
		h.Docs = append(h.Docs, source.Doc{ID: kd.DocID, Kind: schemas.SourceSiYuan, Where: bridgeName(kd.DocID, kd.Notebook, kd.HPath), Drift: kd.Drift})
	}
	for _, d := range scope.Sent {
		if !held[d.ID] {
			h.Gone = append(h.Gone, d.ID)
		}
	}
	return h, nil
}

// Claim takes the index's documents of the kernel or of the files
// source without an absolute path: the kernel's (a file's path is
// absolute).
func (inv *inventory) Claim(d source.Doc) (string, bool) {
	if d.Kind == "" && d.Path == "" || filepath.IsAbs(d.Path) ||
		d.Kind != schemas.SourceSiYuan && d.Kind != schemas.SourceMarkdown && d.Kind != "" {
		return "", false
	}
	if d.Kind == schemas.SourceSiYuan {
		return bridgeName(d.ID, "", d.Title), true
	}
	return d.Path, true
}

// Look: a document the kernel did not list is gone from it.
func (inv *inventory) Look(context.Context, source.Doc) (*source.Doc, error) { return nil, nil }

// Resend reads each document from the kernel again and sends it through
// the bridge's path; with no kernel compared, each is missed.
func (inv *inventory) Resend(ctx context.Context, docs []source.Doc, force bool, tick func()) (source.Resent, error) {
	var res source.Resent
	for _, d := range docs {
		if inv.src == nil {
			res.Missed++
			continue
		}
		if err := inv.src.Resync(ctx, d.ID, force, d.Floor); err != nil {
			return res, fmt.Errorf("repair: resend SiYuan document %s: %w", d.ID, err)
		}
		res.Sent++
		tick()
	}
	return res, nil
}

// Remove sends the deletion of documents gone from the kernel: through the
// bridge when it sent them, else as a plain deletion.
func (inv *inventory) Remove(ctx context.Context, docs []source.Doc, _ []string, tick func()) (int, error) {
	n := 0
	for _, d := range docs {
		var err error
		if d.Sent && inv.src != nil {
			err = inv.src.Remove(ctx, d.ID)
		} else {
			err = inv.publish(ctx, source.Deletion(d))
		}
		if err != nil {
			return n, fmt.Errorf("repair: delete %s: %w", d.Where, err)
		}
		n++
		tick()
	}
	return n, nil
}

// Status is the bridge's state as it last reported it.
func (inv *inventory) Status(ctx context.Context) (*source.Status, error) {
	st, err := ReadStatus(ctx, inv.bus)
	if st == nil {
		return nil, err
	}
	return &source.Status{Key: "siyuan", Value: st, Lines: []string{st.line()}}, nil
}

// line is the bridge's state for status (a stopped bridge's is the state
// it left).
func (st *Status) line() string {
	state := "connected"
	switch {
	case st.Stopped:
		state = "stopped"
	case st.Polling:
		state = "following over the HTTP API every " + st.PollEvery + ", no /ws"
	case !st.Connected:
		state = "disconnected"
	}
	switch {
	case !st.Connected && !st.Stopped && st.Polling && st.Notice != "":
		state += " (" + st.Notice + ")"
	case !st.Connected && st.Error != "":
		state += " (" + st.Error + ")"
	}
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	}
	return fmt.Sprintf("siyuan %s: %s; last event %s, last reconciliation %s; %s synced, %d sent, %d deleted",
		st.URL, state, ago(st.LastEvent), ago(st.LastReconcile), pluralize(st.DocsSynced, "document", "documents"), st.Sent, st.Deleted)
}

// bridgeName is how a report names a kernel document.
func bridgeName(id, notebook, hpath string) string {
	title := strings.TrimPrefix(hpath, "/")
	if notebook != "" {
		title = notebook + "/" + title
	}
	if title == "" {
		return "siyuan " + id
	}
	return "siyuan " + id + " " + title
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
