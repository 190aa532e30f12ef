package researching_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/index"
	"github.com/exocortex/exocortex/workers/researching"
)

// guideNotebook is the SiYuan user guide in the shared eval data.
const guideNotebook = "../../../shared/eval/siyuan-guide/20210808180117-6v0mkxr"

// indexGuide indexes the whole guide notebook as ingestion does.
func indexGuide(t *testing.T) *store.Store {
	t.Helper()
	if _, err := os.Stat(guideNotebook); err != nil {
		t.Skipf("the SiYuan guide is not here (%v): it lives in shared/eval/siyuan-guide", err)
	}
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ch := chunk.NewHandler(chunking.DefaultConfig(), bus.NewMemKV())
	ix := index.NewHandler(st)
	err = notes.Walk([]string{guideNotebook}, func(doc *schemas.DocChanged) error {
		evs, err := ch.Handle(ctx, invMsg(t, doc))
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := ix.Handle(ctx, invMsg(t, ev)); err != nil {
				return err
			}
		}
		return nil
	}, func(path string, err error) { t.Errorf("%s: %v", path, err) })
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestOnTheSiYuanGuideEveryFactRestsOnABlockThatHoldsIt(t *testing.T) {
	st := indexGuide(t)
	const sub = "How do databases work in SiYuan and what views do they have?"
	srv := llmtest.New(t)
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{Invent: true})
	srv.SetResponder(pf.Responder())
	var progress []*schemas.ResearchProgress
	h, err := researching.NewInvestigate(researching.InvestigateDeps{Router: invRouter(t, srv), Retriever: &retrieval.Retriever{Index: st},
		Docs: st, Analyzer: st.Analyzer(), State: bus.NewMemKV(), Progress: func(p *schemas.ResearchProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	task := &schemas.ResearchTask{ResearchID: "guide", TaskID: "t1", Of: 1, Question: sub, Lang: "en", Mode: schemas.ResearchSynthesis,
		Deadline: time.Now().Add(time.Minute), Original: sub}
	evs, err := h.Handle(context.Background(), invMsg(t, task))
	if err != nil || len(evs) != 1 {
		t.Fatalf("investigate: %d events, %v", len(evs), err)
	}
	f := evs[0].(*schemas.ResearchFinding)
	if f.Status != schemas.TaskDone || len(f.DocsRead) != 8 || f.LLMCalls != 8 || len(f.Facts) < 8 {
		t.Fatalf("finding: %s, docs %d, calls %d, facts %d", f.Status, len(f.DocsRead), f.LLMCalls, len(f.Facts))
	}
	if f.Dropped < 8 {
		t.Errorf("dropped %d; want at least the 8 invented facts", f.Dropped)
	}
	for _, x := range f.Facts[:3] {
		t.Logf("%s [%s] %s -> %s", x.ID, x.Certainty, x.Text, x.Citations[0].Title)
	}
	titles := map[string]bool{}
	for _, x := range f.Facts {
		if len(x.Citations) == 0 {
			t.Errorf("fact %s has no citation", x.ID)
		}
		for _, c := range x.Citations {
			titles[c.Title] = true
			if c.Link != "siyuan://blocks/"+c.BlockID || len(c.SectionPath) == 0 {
				t.Errorf("citation %+v: want a SiYuan link and a section path", c)
			}
			held := map[string]bool{}
			for _, tok := range analysis.Tokenize(e2text(t, st, c)) {
				held[tok.Text] = true
			}
			for _, tok := range analysis.Tokenize(x.Text) {
				if !held[tok.Text] {
					t.Errorf("fact %s %q: block %s does not hold %q", x.ID, x.Text, c.BlockID, tok.Text)
					break
				}
			}
		}
	}
	if !titles["Database"] && !strings.Contains(strings.Join(keys(titles), "|"), "Database") {
		t.Errorf("cited documents %q; want the guide's database pages among them", keys(titles))
	}
	if len(progress) != 9 || progress[7].DocsRead != 8 || !progress[8].Done {
		t.Errorf("%d progress events; want one per document and one at the end", len(progress))
	}
}

func e2text(t *testing.T, st *store.Store, c schemas.Citation) string {
	t.Helper()
	hits, err := st.Passages(context.Background(), []string{c.ChunkID})
	if err != nil || len(hits) != 1 {
		t.Fatalf("chunk %s: %v", c.ChunkID, err)
	}
	var parts []string
	for _, s := range hits[0].BlockSpans {
		if s.ID == c.BlockID {
			parts = append(parts, hits[0].Text[s.Start:s.End])
		}
	}
	return strings.Join(parts, " ")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
