package system_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/maintenance"
	"github.com/exocortex/exocortex/notes"

	"github.com/qdrant/go-client/qdrant"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
	"github.com/exocortex/exocortex/workers/retrieve"
)

// A retrieve worker on another machine with --vectors qdrant: its data
// directory has no SQLite file, and it still finds passages lexically (on
// the collection's lexical vectors) and by vector.
func TestARetrieveWorkerOnQdrantRunsWithoutTheSQLiteFile(t *testing.T) {
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	vc := vectors.Config{Kind: vectors.KindQdrant, Qdrant: vectors.QdrantConfig{Addr: fake.Addr(), Collection: "lexical"}}
	ctx := context.Background()

	// Every stage but retrieve, with the index, on one data directory.
	var others []string
	for _, n := range system.StageNames() {
		if n != retrieve.Stage().Name {
			others = append(others, n)
		}
	}
	dir := t.TempDir()
	main, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", ModelsDir: modelsDir, Vectors: vc,
		Stages: others, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = main.Stop() })
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\n## Corvids\n\nRavens and crows solve puzzles and use tools.\n\n## Owls\n\nOwls hunt at night and fly silently.\n")
	writeFile(t, filepath.Join(vault, "garden.md"), "# Garden\n\nTomatoes need sun, water and stakes.\n\nAphids hide under the leaves.\n")
	writeFile(t, filepath.Join(vault, "города.md"), "# Города\n\nМосква стоит на Москве-реке, Санкт-Петербург на Неве.\n")
	syncPaths(t, main.Bus, vault)
	if embedded, total := embeddedAll(t, main); embedded != total || total < 3 {
		t.Fatalf("%d of %d chunks embedded", embedded, total)
	}

	// The retrieve worker: another data directory, nothing in it.
	other := t.TempDir()
	worker, err := system.Start(ctx, system.Config{DataDir: other, NATSURL: main.Bus.Server.ClientURL(),
		Creds: bus.Credentials{NKeySeedFile: bus.NKeyFile(dir)}, ModelsDir: modelsDir, Vectors: vc,
		Stages: []string{retrieve.Stage().Name}, Log: testLog(t)})
	if err != nil {
		t.Fatalf("start a retrieve worker without the SQLite file: %v", err)
	}
	t.Cleanup(func() { _ = worker.Stop() })
	if worker.Store != nil {
		t.Fatal("the retrieve worker opened a SQLite store")
	}
	if _, err := os.Stat(system.DBPath(other)); !os.IsNotExist(err) {
		t.Fatalf("the retrieve worker's data directory has %s (%v)", system.DBPath(other), err)
	}

	// Lexical mode: a Russian word in another form than the note's, found
	// by its lemma on Qdrant, with the whole passage.
	res := ask(t, main, "Москва", schemas.QueryOptions{Mode: schemas.ModeLexical})
	if len(res.Contexts) == 0 || !strings.Contains(res.Contexts[0].Text, "Москва") || res.Contexts[0].Title != "Города" ||
		res.Contexts[0].BlockID == "" || res.Contexts[0].Lexical == nil {
		t.Fatalf("lexical Москва: mode %s, reasons %v, contexts %+v", res.Mode, res.Reasons, res.Contexts)
	}
	res = ask(t, main, "Москвы", schemas.QueryOptions{Mode: schemas.ModeLexical})
	if len(res.Contexts) == 0 || !strings.Contains(res.Contexts[0].Text, "Москва") {
		t.Fatalf("lexical Москвы (another form): %+v", res.Contexts)
	}
	// The full mode: both retrievers, and the reranker on the main
	// machine (the retrieve worker knows it is installed).
	res = ask(t, main, "crows use tools", schemas.QueryOptions{})
	if res.Mode != schemas.ModeRerank || len(res.Contexts) == 0 {
		t.Fatalf("mode %s with %d contexts, reasons %v", res.Mode, len(res.Contexts), res.Reasons)
	}
	i := slices.IndexFunc(res.Contexts, func(c schemas.Context) bool {
		return strings.Contains(c.Text, "crows") && c.Lexical != nil && c.Vector != nil
	})
	if i < 0 {
		t.Fatalf("no context about crows found by both retrievers: %+v", res.Contexts)
	}

	// A collection created before lexical vectors (no sparse vector): the
	// retrieve worker needs the SQLite file after all, and says why.
	old := vc
	old.Qdrant.Collection = "old"
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: fakePort(t, fake.Addr()), SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: "old",
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: uint64(main.Vectors.Dim()), Distance: qdrant.Distance_Cosine})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = system.Start(ctx, system.Config{DataDir: t.TempDir(), NATSURL: main.Bus.Server.ClientURL(),
		Creds: bus.Credentials{NKeySeedFile: bus.NKeyFile(dir)}, ModelsDir: modelsDir, Vectors: old,
		Stages: []string{retrieve.Stage().Name}, Log: testLog(t)})
	if err == nil || !strings.Contains(err.Error(), "no sparse vector") || !strings.Contains(err.Error(), "exocortex.db") {
		t.Fatalf("a retrieve worker on a collection without lexical vectors and no SQLite file: %v; want an error naming both", err)
	}
	withFile, err := system.Start(ctx, system.Config{DataDir: dir, NATSURL: main.Bus.Server.ClientURL(),
		ModelsDir: modelsDir, Vectors: old, Stages: []string{retrieve.Stage().Name}, Log: testLog(t)})
	if err != nil {
		t.Fatalf("a retrieve worker on a collection without lexical vectors, beside the SQLite file: %v", err)
	}
	defer withFile.Stop()
	if withFile.Store == nil {
		t.Error("the retrieve worker on a collection without lexical vectors did not open the SQLite file")
	}
}

func fakePort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A collection created before lexical vectors is migrated by deleting it
// and repairing: check --repair, run where the vector store is open, finds
// every chunk without a point and resends it, and the index stage writes
// the points again with their lexical vectors.
func TestAnOldQdrantCollectionGetsLexicalVectorsByRecreatingItAndRepairing(t *testing.T) {
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	ctx := context.Background()
	_, c, vc := fakeQdrantWithClient(t, "notes")
	dir, vault := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(vault, "города.md"), "# Города\n\nМосква стоит на Москве-реке, Санкт-Петербург на Неве.\n")
	writeFile(t, filepath.Join(vault, "garden.md"), "# Garden\n\nTomatoes need sun, water and stakes.\n")

	// The old collection: dense vectors only.
	sys := startNeural(t, dir, modelsDir, vc)
	if err := c.DeleteCollection(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
	err := c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: "notes",
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: uint64(sys.Vectors.Dim()), Distance: qdrant.Distance_Cosine})})
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}
	sys = startNeural(t, dir, modelsDir, vc)
	if ok, _ := sys.Vectors.(vectors.LexicalStore).HasLexical(); ok {
		t.Fatal("the old collection has lexical vectors")
	}
	syncPaths(t, sys.Bus, vault)
	_, total := embeddedAll(t, sys)
	// check says the collection cannot be searched lexically, and how to
	// change that; it is no difference (the retrieve stage searches the
	// SQLite file meanwhile).
	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, `collection notes has no sparse vector "lex"`) && strings.Contains(n, "delete the collection") &&
			strings.Contains(n, "Qdrant cannot add a sparse vector to an existing collection")
	}) {
		t.Fatalf("check of a collection without the sparse vector: %d differences, notes %q", len(rep.Differences), rep.Notes)
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	// The migration: delete the collection, start (a new one is created),
	// repair.
	if err := c.DeleteCollection(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
	sys = startNeural(t, dir, modelsDir, vc)
	t.Cleanup(func() { _ = sys.Stop() })
	ls := sys.Vectors.(vectors.LexicalStore)
	if ok, why := ls.HasLexical(); !ok {
		t.Fatalf("the new collection has no lexical vectors: %s", why)
	}
	res, err := maintenance.RepairSystem(ctx, sys, maintenance.CheckOptions{Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := sys.Vectors.Count(ctx); n != total || res.Resent == 0 {
		t.Fatalf("after the repair: %d points for %d chunks, %d chunks resent", n, total, res.Resent)
	}
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := (&retrieval.VectorIndex{Store: ls, Analyzer: a}).Search(ctx, "Москвы", store.SearchOptions{})
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Text, "Москва") {
		t.Fatalf("lexical search on the migrated collection: %+v, %v", hits, err)
	}
}

// downgradeLexical rewrites the points of the collection whose chunk id
// starts with one of the prefixes as an older exocortex wrote them: with
// keepLexical, the lexical vector and passage of the first format (no
// lex_format marker, the title without the document's labels: the points
// keep their vectors as they are, the marker goes); without, the dense
// vector alone, as before lexical search on Qdrant. It returns how many
// points it rewrote.
func downgradeLexical(t *testing.T, c *qdrant.Client, coll string, keepLexical bool, prefixes ...string) int {
	t.Helper()
	ctx := context.Background()
	refs, err := c.Scroll(ctx, &qdrant.ScrollPoints{CollectionName: coll, Limit: qdrant.PtrOf(uint32(10000)),
		WithPayload: qdrant.NewWithPayload(true)})
	if err != nil {
		t.Fatal(err)
	}
	var pids []*qdrant.PointId
	for _, r := range refs {
		id := r.GetPayload()["chunk_id"].GetStringValue()
		if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(id, p) }) {
			pids = append(pids, r.GetId())
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no point of %v in %s", prefixes, coll)
	}
	got, err := c.Get(ctx, &qdrant.GetPoints{CollectionName: coll, Ids: pids, WithPayload: qdrant.NewWithPayload(true),
		WithVectors: qdrant.NewWithVectors(true)})
	if err != nil {
		t.Fatal(err)
	}
	var pts []*qdrant.PointStruct
	for _, g := range got {
		named := g.GetVectors().GetVectors().GetVectors()
		if named == nil || named[""] == nil || named[vectors.QdrantLexicalVector] == nil {
			t.Fatalf("point %v has no dense and lexical vectors: %v", g.GetId(), g.GetVectors())
		}
		pl := g.GetPayload()
		if pl["lex_format"].GetIntegerValue() != vectors.LexicalFormat {
			t.Fatalf("point %v has lex_format %v, want %d", g.GetId(), pl["lex_format"], vectors.LexicalFormat)
		}
		delete(pl, "lex_format")
		dense := qdrant.NewVectorDense(named[""].GetDense().GetData())
		vecs := qdrant.NewVectorsDense(named[""].GetDense().GetData())
		if keepLexical {
			sp := named[vectors.QdrantLexicalVector].GetSparse()
			vecs = qdrant.NewVectorsMap(map[string]*qdrant.Vector{"": dense,
				vectors.QdrantLexicalVector: qdrant.NewVectorSparse(sp.GetIndices(), sp.GetValues())})
		} else {
			delete(pl, "passage")
		}
		pts = append(pts, &qdrant.PointStruct{Id: g.GetId(), Vectors: vecs, Payload: pl})
	}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: coll, Wait: qdrant.PtrOf(true), Points: pts}); err != nil {
		t.Fatal(err)
	}
	return len(pts)
}

// Points on Qdrant written before lexical search there (no lexical vector,
// no passage) and points of the first lexical format are differences to
// check, and check --repair rewrites them in place from the index, keeping
// the collection and the dense vectors; the retrieve stage's lexical search
// on Qdrant then finds them.
func TestCheckFindsQdrantPointsWithoutCurrentLexicalVectorsAndRepairRewritesThem(t *testing.T) {
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	ctx := context.Background()
	fake, c, vc := fakeQdrantWithClient(t, "notes")
	dir, vault := t.TempDir(), t.TempDir()
	birds, garden := filepath.Join(vault, "birds.md"), filepath.Join(vault, "garden.md")
	writeFile(t, birds, "# Birds\n\n## Owls\n\nOwls hunt at night and fly silently.\n")
	writeFile(t, garden, "---\ntags: [permaculture]\naliases:\n  - Огород\n---\n# Garden\n\nTomatoes need full sun.\n")
	writeFile(t, filepath.Join(vault, "города.md"), "# Города\n\nМосква стоит на Москве-реке.\n")
	sys := startNeural(t, dir, modelsDir, vc)
	t.Cleanup(func() { _ = sys.Stop() })
	syncPaths(t, sys.Bus, vault)
	_, total := embeddedAll(t, sys)
	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Settle: time.Minute})
	if err != nil || !rep.Clean() {
		t.Fatalf("check of a fresh collection: %v, %+v", err, rep)
	}
	lex := &retrieval.VectorIndex{Store: sys.Vectors.(vectors.LexicalStore), Analyzer: sys.Store.Analyzer()}
	find := func(q string) []string {
		t.Helper()
		hits, err := lex.Search(ctx, q, store.SearchOptions{})
		if err != nil {
			t.Fatalf("lexical search %q on qdrant: %v", q, err)
		}
		var docs []string
		for _, h := range hits {
			docs = append(docs, filepath.Base(h.Path))
		}
		return docs
	}
	// The document's labels are in its lexical vector, as in the full-text
	// index's title columns.
	if got := find("огородом"); !slices.Contains(got, "garden.md") {
		t.Fatalf("lexical search for a label of garden.md on qdrant: %v", got)
	}

	birdsID, gardenID := notes.MarkdownDocID(notes.Canonical(birds)), notes.MarkdownDocID(notes.Canonical(garden))
	old := downgradeLexical(t, c, "notes", false, birdsID+":")
	first := downgradeLexical(t, c, "notes", true, gardenID+":")
	if got := find("owls"); slices.Contains(got, "birds.md") {
		t.Fatalf("points without lexical vectors found lexically: %v", got)
	}
	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, d := range rep.Differences {
		kinds[d.Kind] = d.Where + ": " + d.Detail
		if d.Repair != maintenance.RepairLexical {
			t.Errorf("difference %+v: repair %q, want %q", d, d.Repair, maintenance.RepairLexical)
		}
	}
	wantMissing := fmt.Sprintf("%s: %s no lexical vector and no passage on qdrant", notes.Canonical(birds), ofChunksText(old))
	wantStale := fmt.Sprintf("%s: %s a lexical vector of an older format on qdrant (format 1, now %d)", notes.Canonical(garden), ofChunksText(first), vectors.LexicalFormat)
	if len(rep.Differences) != 2 || !strings.HasPrefix(kinds[maintenance.DiffNoLexical], wantMissing) || !strings.HasPrefix(kinds[maintenance.DiffStaleLexical], wantStale) {
		t.Fatalf("check of downgraded points: %v\nwant %q and %q", kinds, wantMissing, wantStale)
	}

	res, err := maintenance.RepairSystem(ctx, sys, maintenance.CheckOptions{Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != old+first || res.Resent != 0 || res.Ingested != 0 || !res.After.Clean() {
		t.Fatalf("repair: %d rewritten (want %d), %d resent, %d ingested; after: %+v", res.Rewritten, old+first, res.Resent, res.Ingested, res.After.Differences)
	}
	if n := fake.PointCount("notes"); n != total {
		t.Errorf("after the repair: %d points for %d chunks", n, total)
	}
	if got := find("owls"); len(got) == 0 || got[0] != "birds.md" {
		t.Errorf("lexical search for owls after the repair: %v", got)
	}
	if got := find("огородом"); !slices.Contains(got, "garden.md") {
		t.Errorf("lexical search for a label of garden.md after the repair: %v", got)
	}
}

// ofChunksText is check's "n of n chunk(s) has/have" for a document whose
// every chunk differs.
func ofChunksText(n int) string {
	if n == 1 {
		return "1 of 1 chunk has"
	}
	return fmt.Sprintf("%d of %d chunks have", n, n)
}

// fakeQdrantWithClient starts the fake Qdrant with a client of its own (to
// look at or alter the collection behind the system's back) and the vector
// store config of a collection on it.
func fakeQdrantWithClient(t *testing.T, collection string) (*qdrantfake.Server, *qdrant.Client, vectors.Config) {
	t.Helper()
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: fakePort(t, fake.Addr()), SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return fake, c, vectors.Config{Kind: vectors.KindQdrant, Qdrant: vectors.QdrantConfig{Addr: fake.Addr(), Collection: collection}}
}
