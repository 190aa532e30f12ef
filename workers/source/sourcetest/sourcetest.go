// Package sourcetest is a source of notes for tests, and the example of
// what a new source is: this one folder (a role declaration whose service
// sends the notes it holds, and the workers/source interface check,
// repair and status go through) plus one line that adds Role to the
// catalog (registry.Catalog().With(nil, sourcetest.Role(notes))).
//
// It holds its notes in memory (Notes); its service sends them all once
// when it starts. It imports bus, schemas, workers/stage and
// workers/source only.
package sourcetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/source"
	"github.com/exocortex/exocortex/workers/stage"
)

// Name is the role's name, its documents' Source and its state's prefix.
const Name = "testnotes"

// StatusKey is where its running service reports.
const StatusKey = "testnotes_status"

const statePrefix = Name + "."

// Notes are the notes the source holds: text by document id.
type Notes struct {
	mu   sync.Mutex
	text map[string]string
}

// NewNotes holds the notes given (id, text, id, text...).
func NewNotes(pairs ...string) *Notes {
	n := &Notes{text: map[string]string{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		n.text[pairs[i]] = pairs[i+1]
	}
	return n
}

// Put adds or changes a note; Drop removes one.
func (n *Notes) Put(id, text string) { n.mu.Lock(); n.text[id] = text; n.mu.Unlock() }
func (n *Notes) Drop(id string)      { n.mu.Lock(); delete(n.text, id); n.mu.Unlock() }

func (n *Notes) get(id string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.text[id]
	return t, ok
}

func (n *Notes) ids() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.text))
	for id := range n.text {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Role declares the source over notes; up runs it always.
func Role(notes *Notes) stage.Declaration {
	return stage.Declaration{
		Name: Name,
		Kind: stage.KindSource,
		Serve: func(ctx context.Context, d *stage.Deps) (stage.Service, error) {
			src, err := open(ctx, d, notes)
			if err != nil {
				return nil, err
			}
			return &service{src: src}, nil
		},
		Source: func(ctx context.Context, d *stage.Deps) (source.Source, error) { return open(ctx, d, notes) },
	}
}

// Report is the state the service reports (status --json "testnotes").
type Report struct {
	Sent int `json:"sent"`
}

type service struct {
	src  *notesSource
	sent atomic.Int64
}

// Run sends every note once, then waits for ctx to end.
func (s *service) Run(ctx context.Context) error {
	for _, id := range s.src.notes.ids() {
		if err := s.src.send(ctx, id, false, 0); err != nil {
			return err
		}
		s.sent.Add(1)
	}
	<-ctx.Done()
	return nil
}

func (s *service) StatusKey() string { return StatusKey }
func (s *service) Report() any       { return Report{Sent: int(s.sent.Load())} }

// notesSource is the source as check, repair and status see it.
type notesSource struct {
	notes   *Notes
	state   bus.KV
	publish func(ctx context.Context, ev schemas.Event, traceID string) error
	bus     *bus.Bus
}

func open(ctx context.Context, d *stage.Deps, notes *Notes) (*notesSource, error) {
	state, err := d.KV(ctx, stage.BucketSources)
	if err != nil {
		return nil, err
	}
	return &notesSource{notes: notes, state: state, publish: d.Publish, bus: d.Bus}, nil
}

// sentState is what the source remembers of a note it sent.
type sentState struct {
	Hash    string `json:"hash"`
	Version int64  `json:"version"`
}

func hashOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

func where(id string) string { return Name + " " + id }

// send publishes note id (force: marked Force above floor) and remembers it.
func (s *notesSource) send(ctx context.Context, id string, force bool, floor int64) error {
	text, ok := s.notes.get(id)
	if !ok {
		return fmt.Errorf("%s: no note %s", Name, id)
	}
	version := max(time.Now().UnixNano(), floor+1)
	ev := &schemas.DocChanged{DocID: id, Source: Name, Path: Name + "/" + id, Title: id, Hash: hashOf(text), Version: version, Force: force,
		Blocks: []schemas.Block{{ID: id + "-p1", Type: schemas.BlockParagraph, Text: text}}}
	if err := s.publish(ctx, ev, ""); err != nil {
		return err
	}
	raw, _ := json.Marshal(sentState{Hash: ev.Hash, Version: version})
	return s.state.Put(ctx, statePrefix+id, raw)
}

func (s *notesSource) Name() string { return Name }

func (s *notesSource) Sent(ctx context.Context) ([]source.Doc, error) {
	keys, err := s.state.Keys(ctx)
	if err != nil {
		return nil, err
	}
	var out []source.Doc
	for _, k := range keys {
		id, ok := strings.CutPrefix(k, statePrefix)
		if !ok {
			continue
		}
		raw, err := s.state.Get(ctx, k)
		if err != nil || raw == nil {
			continue
		}
		var st sentState
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("%s: read %s: %w", Name, k, err)
		}
		out = append(out, source.Doc{ID: id, Kind: Name, Where: where(id), Path: Name + "/" + id, Hash: st.Hash, Version: st.Version, Sent: true})
	}
	return out, nil
}

func (s *notesSource) Held(_ context.Context, scope source.Scope) (*source.Holding, error) {
	h := &source.Holding{Compared: true, GoneText: "note is gone"}
	if scope.Explicit {
		h.Compared = false
		return h, nil
	}
	for _, id := range s.notes.ids() {
		text, _ := s.notes.get(id)
		h.Docs = append(h.Docs, source.Doc{ID: id, Kind: Name, Where: where(id), Hash: hashOf(text)})
	}
	for _, d := range scope.Sent {
		if _, ok := s.notes.get(d.ID); !ok {
			h.Gone = append(h.Gone, d.ID)
		}
	}
	return h, nil
}

func (s *notesSource) Claim(d source.Doc) (string, bool) {
	if d.Kind != Name {
		return "", false
	}
	return where(d.ID), true
}

func (s *notesSource) Look(context.Context, source.Doc) (*source.Doc, error) { return nil, nil }

func (s *notesSource) Resend(ctx context.Context, docs []source.Doc, force bool, tick func()) (source.Resent, error) {
	var res source.Resent
	for _, d := range docs {
		if _, ok := s.notes.get(d.ID); !ok {
			res.Missed++
			continue
		}
		if err := s.send(ctx, d.ID, force, max(d.Floor, d.Version)); err != nil {
			return res, err
		}
		res.Sent++
		tick()
	}
	return res, nil
}

func (s *notesSource) Remove(ctx context.Context, docs []source.Doc, _ []string, tick func()) (int, error) {
	n := 0
	for _, d := range docs {
		if err := s.publish(ctx, source.Deletion(d), ""); err != nil {
			return n, err
		}
		if err := s.state.Delete(ctx, statePrefix+d.ID); err != nil {
			return n, err
		}
		n++
		tick()
	}
	return n, nil
}

func (s *notesSource) Status(ctx context.Context) (*source.Status, error) {
	var rep Report
	ok, err := stage.ReadReport(ctx, s.bus, StatusKey, &rep)
	if !ok {
		return nil, err
	}
	return &source.Status{Key: Name, Value: rep, Lines: []string{fmt.Sprintf("%s: %d sent", Name, rep.Sent)}}, nil
}
