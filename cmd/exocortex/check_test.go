package main_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// damageDB runs a statement on the index database, as a stray tool or a
// damaged disk would, and fails when it changed nothing.
func damageDB(t *testing.T, data, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "exocortex.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(stmt, args...)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("%s %v: no row changed", stmt, args)
	}
}

type checkJSON struct {
	SourceDocs  int    `json:"source_docs"`
	Documents   int    `json:"documents"`
	Chunks      int    `json:"chunks"`
	VectorCheck string `json:"vector_check"`
	Differences []struct {
		Kind, Where, Detail, Repair string
	} `json:"differences"`
}

func TestCLICheckReportsEachDifferenceAndRepairFixesThem(t *testing.T) {
	data, vault, other := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar.\n")
	write(t, filepath.Join(vault, "b.md"), "# Ants\n\nAnts farm fungus underground.\n")
	write(t, filepath.Join(vault, "c.md"), "# Crows\n\nCrows use tools.\n")
	write(t, filepath.Join(vault, "gone.md"), "# Gone\n\nThis note will be deleted.\n")
	lone := filepath.Join(other, "lone.md")
	write(t, lone, "# Lone\n\nA note ingested on its own.\n")
	mustExo(t, "ingest", vault, lone, "--data", data)

	out, errOut, err := exo(t, "check", "--data", data)
	if err != nil || !strings.Contains(out, "no differences: the sources hold 5 documents") {
		t.Fatalf("check after a clean ingest: %v\n%s\n%s", err, out, errOut)
	}

	// A chunk row and a full-text row lost; a file edited, one added, one
	// deleted, and a file ingested alone deleted, none of it ingested.
	canon := func(p string) string { return notes.Canonical(p) }
	damageDB(t, data, `DELETE FROM chunks WHERE doc_id = ?`, notes.MarkdownDocID(canon(filepath.Join(vault, "a.md"))))
	damageDB(t, data, `DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)`, notes.MarkdownDocID(canon(filepath.Join(vault, "b.md"))))
	time.Sleep(10 * time.Millisecond)
	write(t, filepath.Join(vault, "c.md"), "# Crows\n\nCrows remember faces.\n")
	write(t, filepath.Join(vault, "d.md"), "# Deer\n\nDeer shed antlers.\n")
	gone, loneDoc := canon(filepath.Join(vault, "gone.md")), canon(lone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(lone); err != nil {
		t.Fatal(err)
	}

	out, errOut, err = exo(t, "check", "--data", data)
	if code := exitCode(err); code != 4 {
		t.Fatalf("check of a damaged index: exit %d (%v), want 4\n%s\n%s", code, err, out, errOut)
	}
	for _, want := range []string{
		canon(filepath.Join(vault, "a.md")) + ": 1 of 1 chunk is missing from the index",
		canon(filepath.Join(vault, "b.md")) + ": 1 of 1 chunk has no full-text row",
		canon(filepath.Join(vault, "c.md")) + ": changed since it was ingested",
		canon(filepath.Join(vault, "d.md")) + ": not indexed",
		gone + ": file is gone; the index still holds its document, 1 chunk",
		loneDoc + ": file is gone",
		"6 differences in 6 documents",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}

	// Given a folder, check compares that folder only.
	out, _, err = exo(t, "check", vault, "--data", data)
	if code := exitCode(err); code != 4 || strings.Contains(out, loneDoc) || !strings.Contains(out, "5 differences in 5 documents: the sources hold 4 documents ("+canon(vault)+")") {
		t.Errorf("check %s: exit %d\n%s", vault, code, out)
	}

	out, errOut, err = exo(t, "check", "--data", data, "--repair")
	if err != nil || !strings.Contains(out, "repair: 2 ingested, 2 resent, 2 deleted") ||
		!strings.Contains(out, "checked again after the pipeline settled:\nnote: vectors not checked: no embedding model\nno differences: the sources hold 4 documents") {
		t.Fatalf("check --repair: %v\n%s\n%s", err, out, errOut)
	}
	var rep checkJSON
	out = mustExo(t, "check", "--data", data, "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if len(rep.Differences) != 0 || rep.Documents != 4 || rep.Chunks != 4 || rep.SourceDocs != 4 || rep.VectorCheck != "off" {
		t.Errorf("check after the repair: %+v", rep)
	}
	if out := mustExo(t, "search", "faces", "--data", data, "--json"); !strings.Contains(out, "[faces]") {
		t.Errorf("the edited note is not searchable after the repair: %s", out)
	}
}

func TestCLICheckWorksWhileUpRunsAndFindsALostManifest(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar.\n")
	write(t, filepath.Join(vault, "b.md"), "# Ants\n\nAnts farm fungus underground.\n")
	startUp(t, data, nil)
	mustExo(t, "ingest", vault, "--data", data)
	if out := mustExo(t, "check", "--data", data); !strings.Contains(out, "no differences") {
		t.Fatalf("check while up runs: %s", out)
	}

	raw, err := os.ReadFile(filepath.Join(data, "nats.url"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{URL: strings.TrimSpace(string(raw)), Creds: bus.Credentials{NKeySeedFile: filepath.Join(data, "nats.nk")}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kv, err := b.KV(ctx, "KB_CHUNKS")
	if err != nil {
		t.Fatal(err)
	}
	a := notes.Canonical(filepath.Join(vault, "a.md"))
	if err := kv.Delete(ctx, chunk.ManifestKey(notes.MarkdownDocID(a))); err != nil {
		t.Fatal(err)
	}

	out, errOut, err := exo(t, "check", "--data", data, "--json")
	if code := exitCode(err); code != 4 {
		t.Fatalf("check with a lost manifest: exit %d, want 4\n%s\n%s", code, out, errOut)
	}
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if len(rep.Differences) != 1 || rep.Differences[0].Kind != "no-manifest" || rep.Differences[0].Where != a || rep.Differences[0].Repair != "resend" {
		t.Errorf("check: %+v", rep)
	}
	if out, errOut, err := exo(t, "check", "--data", data, "--repair"); err != nil || !strings.Contains(out, "1 resent") || !strings.HasSuffix(strings.TrimSpace(out), "the index holds 2 documents, 2 chunks") {
		t.Fatalf("check --repair while up runs: %v\n%s\n%s", err, out, errOut)
	}
	if raw, err := kv.Get(ctx, chunk.ManifestKey(notes.MarkdownDocID(a))); err != nil || raw == nil {
		t.Errorf("the manifest is not back after the repair: %v", err)
	}
}

func TestCLICheckComparesTheSiYuanKernelTheBridgeUsed(t *testing.T) {
	const box, doc = "20261121100831-kt25p1g", "20261121100831-xs0m89b"
	k := siyuantest.New(t, "kernel-token-123")
	k.AddNotebook(box, "Notes")
	if err := k.PutDoc(box, doc, "", "/Birds",
		siyuantest.Block{ID: "20261121100831-para001", Type: "p", Content: "Crows use tools to get food.", Markdown: "Crows use tools to get food."},
	); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EXOCORTEX_SIYUAN_TOKEN", "kernel-token-123")
	data := t.TempDir()
	up, upErr := startUp(t, data, nil, "--no-models", "--siyuan", k.URL())
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, err := exo(t, "check", "--data", data)
		if err == nil && strings.Contains(out, "no differences: the sources hold 1 document (SiYuan at "+k.URL()+"); the index holds 1 document, 1 chunk") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("check while the bridge runs: %v\n%s\n%s", err, out, upErr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = up.Wait()

	// Nothing runs: a note added in SiYuan reaches no one until the check.
	const fresh = "20261121100900-second1"
	if err := k.PutDoc(box, fresh, "", "/Ravens",
		siyuantest.Block{ID: "20261121100900-para002", Type: "p", Content: "Ravens play in the snow.", Markdown: "Ravens play in the snow."},
	); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := exo(t, "check", "--data", data, "--no-models")
	if code := exitCode(err); code != 4 || !strings.Contains(out, "siyuan "+fresh+" Notes/Ravens: in SiYuan, not indexed\n") {
		t.Fatalf("check after a note was added in SiYuan: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, err = exo(t, "check", "--data", data, "--no-models", "--repair")
	if err != nil || !strings.Contains(out, "repair: 1 ingested") || !strings.Contains(out, "no differences: the sources hold 2 documents") {
		t.Fatalf("check --repair: %v\n%s\n%s", err, out, errOut)
	}
	if out := mustExo(t, "search", "ravens", "--data", data, "--json"); !strings.Contains(out, "20261121100900-para002") {
		t.Errorf("the SiYuan note is not searchable after the repair: %s", out)
	}
}

func TestCLICheckFindsALostVectorRecordWhileUpRunsWithModels(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar.\n")
	write(t, filepath.Join(vault, "b.md"), "# Ants\n\nAnts farm fungus underground.\n")
	startUp(t, data, nil, "--models", modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true}))
	mustExo(t, "ingest", vault, "--data", data)
	// The vectors follow the chunks: wait until the index records both.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, err := exo(t, "check", "--data", data)
		if err == nil && strings.Contains(out, "no differences") {
			if !strings.Contains(out, "vectors checked from the index's records") {
				t.Errorf("check while up holds the vector store should say how vectors were checked:\n%s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("check while up runs with models: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b := notes.Canonical(filepath.Join(vault, "b.md"))
	damageDB(t, data, `DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE doc_id = ?)`, notes.MarkdownDocID(b))
	out, errOut, err := exo(t, "check", "--data", data)
	if code := exitCode(err); code != 4 || !strings.Contains(out, b+": 1 of 1 chunk has no vector") {
		t.Fatalf("check with a lost vector record: exit %d\n%s\n%s", code, out, errOut)
	}
	// The chunk is resent at a new version: its vector (from the embedding
	// cache) is stored again, not dropped as a duplicate of the first.
	if out, errOut, err := exo(t, "check", "--data", data, "--repair"); err != nil || !strings.Contains(out, "1 resent") || !strings.Contains(out, "settled:\nnote: vectors checked from the index's records") {
		t.Fatalf("check --repair: %v\n%s\n%s", err, out, errOut)
	}
}
