package chunk

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/chunking/chunkingtest"
	"github.com/exocortex/exocortex/schemas"
)

func msgOf(t *testing.T, doc *schemas.DocChanged, delivered uint64) *bus.Msg {
	t.Helper()
	doc.Type = schemas.TypeDocChangedV1
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &bus.Msg{Subject: schemas.SubjectDocChanged, Data: data, Delivered: delivered, TraceID: "trace-1"}
}

// outcome sorts a handler's events.
type outcome struct {
	chunks     []*schemas.ChunkCreated
	tombstones []*schemas.ChunkCreated
	structure  *schemas.DocStructure
}

func run(t *testing.T, h bus.Handler, doc *schemas.DocChanged, delivered uint64) outcome {
	t.Helper()
	m := msgOf(t, doc, delivered)
	events, err := h.Handle(context.Background(), m)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	// The events count as published: the manifest is saved.
	if err := m.Published(context.Background()); err != nil {
		t.Fatalf("Published: %v", err)
	}
	var out outcome
	for i, ev := range events {
		if ev.Env().TraceID != "trace-1" {
			t.Errorf("event %d: trace id %q", i, ev.Env().TraceID)
		}
		if v, ok := ev.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				t.Errorf("event %d: %v", i, err)
			}
		}
		switch e := ev.(type) {
		case *schemas.ChunkCreated:
			if out.structure != nil {
				t.Errorf("event %d: a chunk after the structure", i)
			}
			if e.DocVersion != doc.Version || e.DocID != doc.DocID {
				t.Errorf("event %d: doc %s version %d", i, e.DocID, e.DocVersion)
			}
			if e.Tombstone {
				out.tombstones = append(out.tombstones, e)
			} else {
				if len(out.tombstones) > 0 {
					t.Errorf("event %d: a chunk after a tombstone", i)
				}
				out.chunks = append(out.chunks, e)
			}
		case *schemas.DocStructure:
			if i != len(events)-1 {
				t.Errorf("event %d: the structure is not last", i)
			}
			out.structure = e
		default:
			t.Errorf("event %d: unexpected %T", i, ev)
		}
		schemas.Stamp(ev, "") // panics for an unregistered type
	}
	return out
}

func cloneDoc(d *schemas.DocChanged) *schemas.DocChanged {
	c := *d
	c.Blocks = slices.Clone(d.Blocks)
	return &c
}

func ids(cs []*schemas.ChunkCreated) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ChunkID
	}
	return out
}

func TestHandlerFirstRun(t *testing.T) {
	kv := bus.NewMemKV()
	h := NewHandler(chunking.DefaultConfig(), kv)
	doc := &chunkingtest.LongDoc("first", 8).Doc
	pieces := chunking.Split(doc, chunking.DefaultConfig())
	out := run(t, h, doc, 1)

	if len(out.chunks) != len(pieces) || len(out.tombstones) != 0 {
		t.Fatalf("%d chunks and %d tombstones, want %d and 0", len(out.chunks), len(out.tombstones), len(pieces))
	}
	for i, c := range out.chunks {
		p := pieces[i]
		if c.ChunkID != p.ID || c.Hash != p.Hash || c.Text != p.Text || c.Ordinal != i || c.Lang != p.Lang ||
			c.Tokens != p.Tokens || !slices.Equal(c.BlockIDs, p.BlockIDs) || !slices.Equal(c.SectionPath, p.SectionPath) ||
			!slices.Equal(c.Refs, p.Refs) || len(p.BlockSpans) == 0 || !slices.Equal(c.BlockSpans, p.BlockSpans) {
			t.Errorf("chunk %d differs from its piece", i)
		}
	}
	ds := out.structure
	if ds == nil {
		t.Fatal("no structure")
	}
	if ds.DocID != doc.DocID || ds.Title != doc.Title || ds.Hash != doc.Hash || ds.Version != doc.Version ||
		ds.Source != doc.Source || ds.Path != doc.Path || ds.Notebook != doc.Notebook ||
		!slices.Equal(ds.TitlePath, doc.TitlePath) || ds.Deleted {
		t.Errorf("structure metadata %+v", ds)
	}
	if !slices.Equal(ds.ChunkIDs, ids(out.chunks)) {
		t.Errorf("structure chunk ids differ from the chunks")
	}
	if len(ds.Blocks) != len(doc.Blocks) {
		t.Fatalf("%d block nodes for %d blocks", len(ds.Blocks), len(doc.Blocks))
	}
	for i, n := range ds.Blocks {
		b := doc.Blocks[i]
		if n.ID != b.ID || n.Type != b.Type || n.ParentID != b.ParentID || !slices.Equal(n.Refs, b.Refs) {
			t.Errorf("block node %d: %+v", i, n)
		}
		if n.ChunkID == "" {
			t.Errorf("block %s (%s) has no chunk", b.ID, b.Type)
			continue
		}
		if k := slices.Index(ds.ChunkIDs, n.ChunkID); k < 0 || (strings.TrimSpace(b.Text) != "" && !slices.Contains(out.chunks[k].BlockIDs, b.ID)) {
			t.Errorf("block %s points at chunk %s which does not cover it", b.ID, n.ChunkID)
		}
	}
	keys, _ := kv.Keys(context.Background())
	if !slices.Equal(keys, []string{"chunks.first"}) {
		t.Errorf("state keys %v", keys)
	}
}

func TestHandlerResendsEveryChunkOnceWhenTheManifestPredatesBlockSpans(t *testing.T) {
	ctx := context.Background()
	kv := bus.NewMemKV()
	h := NewHandler(chunking.DefaultConfig(), kv)
	doc := &chunkingtest.LongDoc("old", 6).Doc
	first := run(t, h, doc, 1)
	if len(first.chunks) < 3 {
		t.Fatalf("only %d chunks", len(first.chunks))
	}

	// A manifest as an older version wrote it: no "spans".
	data, err := kv.Get(ctx, ManifestKey(doc.DocID))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["spans"] != true {
		t.Fatalf("the manifest does not record spans: %s", data)
	}
	delete(raw, "spans")
	data, _ = json.Marshal(raw)
	if err := kv.Put(ctx, ManifestKey(doc.DocID), data); err != nil {
		t.Fatal(err)
	}

	// The same document again (a source re-sends it): every chunk, with spans.
	again := cloneDoc(doc)
	again.Version++
	out := run(t, h, again, 1)
	if !slices.Equal(ids(out.chunks), ids(first.chunks)) || len(out.tombstones) != 0 {
		t.Fatalf("re-sent %v (tombstones %d), want every chunk %v", ids(out.chunks), len(out.tombstones), ids(first.chunks))
	}
	for i, c := range out.chunks {
		if c.Hash != first.chunks[i].Hash || len(c.BlockSpans) == 0 {
			t.Errorf("chunk %s: hash changed or no spans", c.ChunkID)
		}
	}
	// Once: the next unchanged change sends nothing.
	third := cloneDoc(again)
	third.Version++
	if out := run(t, h, third, 1); len(out.chunks) != 0 {
		t.Errorf("a third change re-sent %d unchanged chunks", len(out.chunks))
	}
}

func TestHandlerChanges(t *testing.T) {
	base := chunkingtest.LongDoc("chg", 10)
	pieces := chunking.Split(&base.Doc, chunking.DefaultConfig())
	var all []string
	for _, p := range pieces {
		all = append(all, p.ID)
	}
	sectionOf := func(id string) []string {
		var out []string
		for _, p := range pieces {
			if len(p.SectionPath) > 3 && p.SectionPath[3] == id {
				out = append(out, p.ID)
			}
		}
		return out
	}

	if len(sectionOf("Раздел 5")) < 2 || len(sectionOf("Section 2")) < 2 {
		t.Fatalf("the fixture's sections are too small: %d and %d chunks", len(sectionOf("Раздел 5")), len(sectionOf("Section 2")))
	}

	tests := []struct {
		name      string
		change    func(doc *schemas.DocChanged)
		delivered uint64
		nothing   bool     // no events at all
		chunks    int      // changed chunks, -1: all
		tombs     []string // tombstoned chunk ids
		check     func(t *testing.T, out outcome)
	}{
		{
			name:   "an identical document emits only its structure",
			change: func(*schemas.DocChanged) {},
		},
		{
			name: "editing one paragraph emits one changed chunk and no tombstones",
			change: func(doc *schemas.DocChanged) {
				// A paragraph in the middle of a chunk, well away from the overlap.
				for _, p := range pieces[1:] {
					for _, id := range p.BlockIDs[:max(0, len(p.BlockIDs)-2)] {
						i := slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.ID == id })
						if b := &doc.Blocks[i]; b.Type == schemas.BlockParagraph && b.ParentID == "" {
							first := strings.Fields(b.Text)[0]
							b.Text = strings.Replace(b.Text, first, strings.ToUpper(first), 1) + " Edited"
							doc.Hash = "hash-2"
							doc.Version++
							return
						}
					}
				}
				panic("no paragraph to edit")
			},
			chunks: 1,
			check: func(t *testing.T, out outcome) {
				if !strings.Contains(out.chunks[0].Text, " Edited") {
					t.Errorf("the changed chunk lacks the edit")
				}
			},
		},
		{
			name: "deleting a section emits tombstones for its chunks only",
			change: func(doc *schemas.DocChanged) {
				from := slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.Text == "Раздел 5" })
				to := slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.Text == "Section 6" })
				doc.Blocks = slices.Delete(doc.Blocks, from, to)
				doc.Hash = "hash-2"
				doc.Version++
			},
			tombs: sectionOf("Раздел 5"),
		},
		{
			name: "renaming a heading re-emits the chunks below it with the new section path",
			change: func(doc *schemas.DocChanged) {
				i := slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.Text == "Section 2" })
				doc.Blocks[i].Text = "Section two"
				doc.Hash = "hash-2"
				doc.Version++
			},
			chunks: len(sectionOf("Section 2")),
			check: func(t *testing.T, out outcome) {
				for _, c := range out.chunks {
					if c.SectionPath[3] != "Section two" {
						t.Errorf("chunk %d: section path %q", c.Ordinal, c.SectionPath)
					}
				}
			},
		},
		{
			name: "an older version emits nothing",
			change: func(doc *schemas.DocChanged) {
				doc.Blocks = doc.Blocks[:5]
				doc.Hash = "hash-0"
				doc.Version--
			},
			nothing: true,
		},
		{
			name: "an equal version with another hash is processed",
			change: func(doc *schemas.DocChanged) {
				doc.Blocks[len(doc.Blocks)-1].Text += " Changed."
				doc.Hash = "hash-2"
			},
			chunks: 1,
		},
		{
			name:      "a redelivery of the last change emits every chunk again",
			change:    func(*schemas.DocChanged) {},
			delivered: 2,
			chunks:    -1,
		},
		{
			name: "a deleted document emits tombstones for every chunk",
			change: func(doc *schemas.DocChanged) {
				doc.Blocks = nil
				doc.Deleted = true
				doc.Hash = ""
				doc.Version++
			},
			tombs: all,
			check: func(t *testing.T, out outcome) {
				if !out.structure.Deleted || len(out.structure.ChunkIDs) != 0 || len(out.structure.Blocks) != 0 {
					t.Errorf("structure %+v", out.structure)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := bus.NewMemKV()
			h := NewHandler(chunking.DefaultConfig(), kv)
			first := run(t, h, cloneDoc(&base.Doc), 1)
			before, _ := kv.Get(context.Background(), ManifestKey(base.Doc.DocID))

			doc := cloneDoc(&base.Doc)
			tt.change(doc)
			delivered := max(tt.delivered, 1)
			if tt.nothing {
				events, err := h.Handle(context.Background(), msgOf(t, doc, delivered))
				if err != nil || len(events) != 0 {
					t.Errorf("Handle = %d events, %v; want none", len(events), err)
				}
				if after, _ := kv.Get(context.Background(), ManifestKey(doc.DocID)); string(after) != string(before) {
					t.Error("the manifest changed")
				}
				return
			}
			out := run(t, h, doc, delivered)
			want := tt.chunks
			if want < 0 {
				want = len(first.chunks)
			}
			if len(out.chunks) != want {
				t.Errorf("%d changed chunks, want %d", len(out.chunks), want)
			}
			if got := ids(out.tombstones); !slices.Equal(got, tt.tombs) && len(got)+len(tt.tombs) > 0 {
				t.Errorf("tombstones %v, want %v", got, tt.tombs)
			}
			old := map[string]string{}
			for _, c := range first.chunks {
				old[c.ChunkID] = c.Hash
			}
			for _, c := range out.tombstones {
				if c.Hash != old[c.ChunkID] || c.Text != "" {
					t.Errorf("tombstone %s: hash %s, want the old %s", c.ChunkID, c.Hash, old[c.ChunkID])
				}
			}
			if out.structure == nil {
				t.Fatal("no structure")
			}
			if tt.check != nil {
				tt.check(t, out)
			}
			// The next identical delivery is quiet again.
			if !doc.Deleted {
				if again := run(t, h, doc, 1); len(again.chunks)+len(again.tombstones) != 0 {
					t.Errorf("re-chunking the result emits %d chunks and %d tombstones", len(again.chunks), len(again.tombstones))
				}
			} else if keys, _ := kv.Keys(context.Background()); len(keys) != 0 {
				t.Errorf("state keys %v after the delete", keys)
			}
		})
	}
}

func TestHandlerSavesTheManifestOnlyOnceTheEventsArePublished(t *testing.T) {
	ctx := context.Background()
	kv := bus.NewMemKV()
	h := NewHandler(chunking.DefaultConfig(), kv)
	base := chunkingtest.LongDoc("pub", 6)
	key := ManifestKey(base.Doc.DocID)

	// The first change's events are never published (a full stream, a crash).
	m := msgOf(t, cloneDoc(&base.Doc), 1)
	events, err := h.Handle(ctx, m)
	if err != nil || len(events) < 3 {
		t.Fatalf("Handle = %d events, %v", len(events), err)
	}
	if raw, _ := kv.Get(ctx, key); raw != nil {
		t.Fatal("the manifest was saved before the events were published")
	}
	// A resend as a new message (a replayed dead letter) emits every chunk.
	first := run(t, h, cloneDoc(&base.Doc), 1)
	if len(first.chunks) != len(events)-1 {
		t.Fatalf("the resend emits %d chunks, want %d", len(first.chunks), len(events)-1)
	}

	// A deletion that is not published keeps the manifest: its resend
	// tombstones every chunk.
	del := &schemas.DocChanged{DocID: base.Doc.DocID, Deleted: true, Version: base.Doc.Version + 1}
	if _, err := h.Handle(ctx, msgOf(t, del, 1)); err != nil {
		t.Fatal(err)
	}
	if raw, _ := kv.Get(ctx, key); raw == nil {
		t.Fatal("the manifest was deleted before the tombstones were published")
	}
	if out := run(t, h, del, 1); len(out.tombstones) != len(first.chunks) {
		t.Errorf("the deletion's resend tombstones %d chunks, want %d", len(out.tombstones), len(first.chunks))
	}
	if raw, _ := kv.Get(ctx, key); raw != nil {
		t.Error("the published deletion left the manifest")
	}
}

func TestHandlerForcedChangeResendsEveryChunk(t *testing.T) {
	kv := bus.NewMemKV()
	h := NewHandler(chunking.DefaultConfig(), kv)
	base := chunkingtest.LongDoc("force", 6)
	first := run(t, h, cloneDoc(&base.Doc), 1)

	same := cloneDoc(&base.Doc)
	same.Version++
	if out := run(t, h, same, 1); len(out.chunks) != 0 {
		t.Fatalf("an unforced resend emits %d chunks, want none", len(out.chunks))
	}
	forced := cloneDoc(&base.Doc)
	forced.Version += 2
	forced.Force = true
	out := run(t, h, forced, 1)
	if !slices.Equal(ids(out.chunks), ids(first.chunks)) || len(out.tombstones) != 0 {
		t.Errorf("a forced resend emits chunks %v and %d tombstones, want %v and none", ids(out.chunks), len(out.tombstones), ids(first.chunks))
	}
}

func TestHandlerDeletedUnknownDocument(t *testing.T) {
	h := NewHandler(chunking.DefaultConfig(), bus.NewMemKV())
	out := run(t, h, &schemas.DocChanged{DocID: "ghost", Deleted: true, Version: 3}, 1)
	if len(out.chunks)+len(out.tombstones) != 0 || out.structure == nil || !out.structure.Deleted {
		t.Errorf("outcome %+v", out)
	}
}

func TestHandlerMalformedPayloadIsPermanent(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"a payload that is not JSON", "{not json"},
		{"a payload without a type", `{"doc_id":"x"}`},
		{"an event of another type", `{"type":"kb.chunk.created.v1","chunk_id":"c","doc_id":"d","hash":"h"}`},
		{"a document without an id", `{"type":"kb.doc.changed.v1","hash":"h"}`},
		{"a field nobody knows", `{"type":"kb.doc.changed.v1","doc_id":"x","hash":"h","color":"red"}`},
	}
	h := NewHandler(chunking.DefaultConfig(), bus.NewMemKV())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := h.Handle(context.Background(), &bus.Msg{Subject: schemas.SubjectDocChanged, Data: []byte(tt.data)})
			if err == nil || !bus.IsPermanent(err) || len(events) != 0 {
				t.Errorf("Handle = %d events, %v; want a permanent error", len(events), err)
			}
		})
	}
}

type brokenKV struct{ bus.KV }

var errStore = errors.New("store is down")

func (brokenKV) Get(context.Context, string) ([]byte, error) { return nil, errStore }

func TestHandlerStateErrorIsRetried(t *testing.T) {
	h := NewHandler(chunking.DefaultConfig(), brokenKV{bus.NewMemKV()})
	doc := &chunkingtest.LongDoc("kv", 1).Doc
	_, err := h.Handle(context.Background(), msgOf(t, doc, 1))
	if !errors.Is(err, errStore) || bus.IsPermanent(err) {
		t.Errorf("Handle error %v, want a retryable store error", err)
	}
}

func TestHandlerTreatsACorruptManifestAsMissing(t *testing.T) {
	kv := bus.NewMemKV()
	doc := &chunkingtest.LongDoc("bad", 1).Doc
	_ = kv.Put(context.Background(), ManifestKey(doc.DocID), []byte("{oops"))
	out := run(t, NewHandler(chunking.DefaultConfig(), kv), doc, 1)
	if len(out.chunks) != len(chunking.Split(doc, chunking.DefaultConfig())) {
		t.Errorf("%d chunks", len(out.chunks))
	}
}

func TestNewHandlerPanicsOnAnInvalidConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	NewHandler(chunking.Config{MinTokens: 10, MaxTokens: 5}, bus.NewMemKV())
}

func TestManifestKey(t *testing.T) {
	valid := regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)
	tests := []struct {
		name  string
		docID string
		want  string // "" when only validity is checked
	}{
		{"a SiYuan id is kept", "20240101120000-abcdefg", "chunks.20240101120000-abcdefg"},
		{"a path is made safe and hashed", "notes/My Note.md", ""},
		{"a Cyrillic name is made safe and hashed", "заметки/Идея.md", ""},
		{"dots cannot make empty tokens", "../..", ""},
		{"a long id is shortened", strings.Repeat("x/", 200), ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := ManifestKey(tt.docID)
			if tt.want != "" && key != tt.want {
				t.Errorf("ManifestKey(%q) = %q, want %q", tt.docID, key, tt.want)
			}
			if !valid.MatchString(key) || strings.Contains(key, "..") || strings.HasSuffix(key, ".") || len(key) > 100 {
				t.Errorf("ManifestKey(%q) = %q is not a good KV key", tt.docID, key)
			}
			if other, ok := seen[key]; ok {
				t.Errorf("%q and %q share the key %q", tt.docID, other, key)
			}
			seen[key] = tt.docID
		})
	}
	t.Run("ids that differ only in unsafe runes get different keys", func(t *testing.T) {
		if a, b := ManifestKey("a b"), ManifestKey("a_b"); a == b {
			t.Errorf("both are %q", a)
		}
		if a, b := ManifestKey("a b"), ManifestKey("a.b"); a == b {
			t.Errorf("both are %q", a)
		}
	})
}

// TestHandlerCutsLongTitlesInEveryEvent: a note whose title (and first
// heading) is a megabyte used to send that megabyte in every chunk event,
// past NATS's limits; every event now carries at most
// schemas.MaxTitleRunes characters of it, and the chunks' text still holds
// the whole heading and the rest of the note.
func TestHandlerCutsLongTitlesInEveryEvent(t *testing.T) {
	for _, tc := range []struct{ name, word, body string }{
		{"an English note with a 1 MB title", "Title ", "Cats sleep most of the day and hunt at dusk."},
		{"a Russian note with a 1 MB title", "Заголовок ", "Кошки спят большую часть дня и охотятся в сумерках."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			title := strings.Repeat(tc.word, (1<<20)/len(tc.word))
			d := chunkingtest.NewDoc("huge-title", 1)
			d.Heading(1, title)
			d.Para(tc.body)
			d.Heading(2, strings.Repeat(tc.word, 400)) // a long heading below, too
			d.Para(tc.body)
			doc := &d.Doc
			doc.Title, doc.TitlePath = title, []string{"notes", title}
			out := run(t, NewHandler(chunking.DefaultConfig(), bus.NewMemKV()), doc, 1)
			if out.structure == nil || len(out.chunks) == 0 {
				t.Fatalf("no structure or no chunks")
			}
			cut := schemas.BoundTitle(title)
			if n := len([]rune(out.structure.Title)); n != schemas.MaxTitleRunes || out.structure.Title != cut {
				t.Errorf("the structure's title has %d characters, want %d", n, schemas.MaxTitleRunes)
			}
			var all strings.Builder
			for i, c := range out.chunks {
				raw, _ := json.Marshal(c)
				if len(raw) > 256<<10 {
					t.Errorf("chunk %d's event is %d bytes", i, len(raw))
				}
				for _, p := range c.SectionPath {
					if len([]rune(p)) > schemas.MaxTitleRunes {
						t.Errorf("chunk %d's section path holds %d characters", i, len([]rune(p)))
					}
				}
				all.WriteString(c.Text)
			}
			w := strings.TrimSpace(tc.word)
			if strings.Count(all.String(), w) < strings.Count(title, w) || strings.Count(all.String(), tc.body) < 2 {
				t.Errorf("the chunks lost part of the note: %d characters of text", len(all.String()))
			}
		})
	}
}
