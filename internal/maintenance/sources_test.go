package maintenance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/internal/maintenance"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/registry"
	"github.com/exocortex/exocortex/workers/source/sourcetest"
	"github.com/exocortex/exocortex/workers/stage"
)

// A new source is its own folder (workers/source/sourcetest) and one line
// adding its role to the catalog: the system starts it, status lists it,
// check compares it and repair fixes it, with no other file changed.
func TestANewSourceIsOneFolderAndOneLine(t *testing.T) {
	ctx := context.Background()
	notes := sourcetest.NewNotes("crows", "Crows use tools.", "owls", "Owls hunt at night.")
	cat := registry.Catalog().With(nil, sourcetest.Role(notes)) // the one line

	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, Catalog: &cat,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	if sys.Service(sourcetest.Name) == nil {
		t.Fatal("the system did not start the new source")
	}
	var st sourcetest.Report
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ok, _ := stage.ReadReport(ctx, sys.Bus, sourcetest.StatusKey, &st); ok && st.Sent == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source never reported sending its 2 notes (%+v)", st)
		}
	}

	// status lists it.
	listed := false
	for _, s := range system.SourceStates(ctx, cat, sys.Bus) {
		listed = listed || s.Key == sourcetest.Name && len(s.Lines) == 1 && s.Lines[0] == "testnotes: 2 sent"
	}
	if !listed {
		t.Errorf("status does not list the new source: %+v", system.SourceStates(ctx, cat, sys.Bus))
	}

	// check compares it: clean once its notes are indexed.
	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.SourceDocs != 2 || rep.Documents != 2 {
		t.Fatalf("check after the first sync: %d source documents, %d indexed, differences %v", rep.SourceDocs, rep.Documents, rep.Differences)
	}

	// A note added that the index lacks, and one the index holds that the
	// source no longer does.
	notes.Put("kites", "Kites hover over fields.")
	notes.Drop("owls")
	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rep.Differences {
		got = append(got, d.Kind+" "+d.String()+" ["+d.Repair+"]")
	}
	want := []string{
		"not-indexed testnotes kites: not indexed [ingest]",
		"source-gone testnotes owls: note is gone; the index still holds its document, 1 chunk, its chunk manifest, its source state [delete]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("check found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// repair fixes both through the source.
	res, err := maintenance.RepairSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ingested != 1 || res.Deleted != 1 || !res.After.Clean() || res.After.Documents != 2 {
		t.Fatalf("repair: %d ingested, %d deleted; after: %d documents, differences %v", res.Ingested, res.Deleted, res.After.Documents, res.After.Differences)
	}
}

// A document no source claims (one another program indexed, as eval does
// with its sets: a relative path and a source of its own) cannot be said
// to be gone by any source here: check leaves it alone and repair deletes
// nothing.
func TestCheckLeavesADocumentNoSourceClaimsAlone(t *testing.T) {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	doc := &schemas.DocChanged{DocID: "squad-0001", Source: "squad", Path: "xquad.ru/Article/0", Title: "Article", Version: 1, Hash: "h1",
		Blocks: []schemas.Block{{ID: "squad-0001-p", Type: "p", Text: "Сова охотится ночью."}}}
	if _, err := sys.Bus.Publish(ctx, doc, "test-trace"); err != nil {
		t.Fatal(err)
	}
	if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Documents != 1 {
		t.Fatalf("check: %d documents indexed, differences %v; want the one document and none", rep.Documents, rep.Differences)
	}
	res, err := maintenance.RepairSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 0 || res.After.Documents != 1 {
		t.Fatalf("repair deleted %d; %d documents after, want the one kept", res.Deleted, res.After.Documents)
	}
}
