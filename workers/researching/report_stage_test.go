package researching_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/researching"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// rpNotes are the notes the report tests cite: real documents, chunked and
// indexed as the pipeline does.
var rpNotes = map[string]string{
	"crows.md": `# Crows

## Tools

New Caledonian crows shape hooked tools from twigs to pull larvae out of dead wood.

Crows also bend pieces of wire into hooks when no twig is at hand.

## Memory

Crows remember the faces of people who threatened them for several years.

## Play

Young ravens slide down snowy roofs again and again, which looks like play.
`,
	"вороны.md": `# Вороны

## Орудия

Новокаледонские вороны делают крючки из веточек и достают ими личинок из старой древесины.

## Память

Вороны помнят лица людей, которые им угрожали, несколько лет подряд.
`,
}

type rpIndex struct {
	store  *store.Store
	blocks map[string]string // block id -> its own text
}

// rpIndexNotes chunks and indexes rpNotes into a fresh store.
func rpIndexNotes(t *testing.T) *rpIndex {
	t.Helper()
	dir := t.TempDir()
	var docs []*schemas.DocChanged
	for name, text := range rpNotes {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		doc, err := notes.ParseMarkdown(path, []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	return rpIndexDocs(t, docs)
}

// rpIndexDocs chunks and indexes documents into a fresh store, as the
// chunk and index stages do.
func rpIndexDocs(t *testing.T, docs []*schemas.DocChanged) *rpIndex {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := chunk.NewHandler(chunking.DefaultConfig(), bus.NewMemKV())
	var docIDs []string
	for _, doc := range docs {
		name := doc.DocID
		doc.Type = schemas.TypeDocChangedV1
		docIDs = append(docIDs, doc.DocID)
		raw, _ := json.Marshal(doc)
		evs, err := h.Handle(ctx, &bus.Msg{Subject: schemas.SubjectDocChanged, Data: raw, Delivered: 1})
		if err != nil {
			t.Fatalf("chunk %s: %v", name, err)
		}
		for _, ev := range evs {
			switch e := ev.(type) {
			case *schemas.ChunkCreated:
				if _, err := s.UpsertChunk(ctx, e); err != nil {
					t.Fatal(err)
				}
			case *schemas.DocStructure:
				if _, err := s.ApplyStructure(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ix := &rpIndex{store: s, blocks: map[string]string{}}
	var ids []string
	for _, d := range docIDs {
		chunks, err := s.DocChunkIDs(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := s.Passages(ctx, chunks)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			ids = append(ids, h.BlockIDs...)
		}
	}
	got, err := research.StoreBlocks{Store: s}.Blocks(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range got {
		ix.blocks[id] = c.Text
	}
	if len(ix.blocks) < 6 {
		t.Fatalf("indexed %d blocks, want the notes' paragraphs and headings", len(ix.blocks))
	}
	return ix
}

// fact is a fact resting on the block that holds words (its text says
// text); the block's citation carries title, section path and link.
func (ix *rpIndex) fact(t *testing.T, id, text, words, certainty string) schemas.Fact {
	t.Helper()
	for bid, bt := range ix.blocks {
		if strings.Contains(bt, words) && !strings.HasPrefix(strings.TrimSpace(bt), "#") {
			got, _ := research.StoreBlocks{Store: ix.store}.Blocks(context.Background(), []string{bid})
			c := got[bid]
			return schemas.Fact{ID: id, Text: text, Certainty: certainty, BlockIDs: []string{bid}, DocID: c.DocID,
				Citations: []schemas.Citation{{BlockID: bid, DocID: c.DocID, ChunkID: c.ChunkID, Title: c.Title,
					SectionPath: c.SectionPath, Quote: bt, Link: answer.Link(bid, c.Path)}}}
		}
	}
	t.Fatalf("no block holds %q", words)
	return schemas.Fact{}
}

type rpRig struct {
	b        *bus.Bus
	ix       *rpIndex
	provider *llmtest.Server
	router   *llm.Router

	mu       sync.Mutex
	progress []schemas.ResearchProgress
}

func rpRouter(t *testing.T, srv *llmtest.Server) *llm.Router {
	t.Helper()
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleFast: "m", llm.RoleStrategic: "m", llm.RoleLongContext: "m"}, Timeout: 5 * time.Second}}},
		llm.RouterOptions{Retries: -1, BreakerDelay: 50 * time.Millisecond, BreakerThreshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rpStart runs the draft and report stages (draftWorkers draft stages, each
// its own consumer pool) on an embedded JetStream server.
func rpStart(t *testing.T, opts llmtest.DraftReportOptions, withProvider bool, draftWorkers int) *rpRig {
	t.Helper()
	return rpStartOn(t, rpIndexNotes(t), opts, withProvider, draftWorkers)
}

func rpStartOn(t *testing.T, ix *rpIndex, opts llmtest.DraftReportOptions, withProvider bool, draftWorkers int) *rpRig {
	t.Helper()
	rig := &rpRig{b: stagetest.New(t, researching.DraftReportSpecs()...), ix: ix}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
	if withProvider {
		rig.provider = llmtest.New(t)
		rig.provider.SetResponder(llmtest.DraftReportResponder(opts))
		rig.router = rpRouter(t, rig.provider)
	}
	state, err := rig.b.KV(ctx, stage.BucketResearch)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := rig.b.KV(ctx, stage.BucketReports)
	if err != nil {
		t.Fatal(err)
	}
	progress := func(p *schemas.ResearchProgress) {
		rig.mu.Lock()
		rig.progress = append(rig.progress, *p)
		rig.mu.Unlock()
	}
	draft, err := researching.NewDraft(research.DraftDeps{Router: rig.router, State: state, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	report, err := researching.NewReport(research.ReportDeps{Router: rig.router, Analyzer: rig.ix.store.Analyzer(),
		Blocks: research.StoreBlocks{Store: rig.ix.store}, Reports: reports, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	specs := researching.DraftReportSpecs()
	var wg sync.WaitGroup
	run := func(spec bus.StageSpec, h bus.Handler, workers int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rig.b.RunStage(ctx, spec, h, bus.RunOptions{Workers: workers, Batch: 1,
				NakBase: 20 * time.Millisecond, NakMax: 50 * time.Millisecond}); err != nil {
				t.Errorf("stage %s: %v", spec.Name, err)
			}
		}()
	}
	run(specs[0], draft, draftWorkers)
	run(specs[1], report, 1)
	t.Cleanup(func() { cancel(); wg.Wait() })
	return rig
}

// research publishes the findings and waits for the report on
// kb.research.report.
func (rig *rpRig) research(t *testing.T, findings ...*schemas.ResearchFinding) *schemas.ResearchReport {
	t.Helper()
	ch := make(chan *nats.Msg, 4)
	sub, err := rig.b.NC.ChanSubscribe(schemas.SubjectResearchReport, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx := context.Background()
	for _, f := range findings {
		f.Type, f.Time = schemas.TypeResearchFindingV1, time.Now().UTC()
		f.ID = f.MsgID()
		if _, err := rig.b.Publish(ctx, f, "trace-"+f.ResearchID); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-ch:
		var rep schemas.ResearchReport
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.ResearchID != findings[0].ResearchID {
			t.Fatalf("report of research %s, want %s", rep.ResearchID, findings[0].ResearchID)
		}
		return &rep
	case <-time.After(20 * time.Second):
		t.Fatal("no report within 20s")
	}
	return nil
}

func (rig *rpRig) calls(marker string) int {
	n := 0
	for _, r := range rig.provider.Requests() {
		for _, m := range r.Body.Messages {
			if m.Role == "system" && strings.Contains(m.Content, marker) {
				n++
			}
		}
	}
	return n
}

// promptHas tells whether a request whose system message holds marker had
// want in its user message.
func (rig *rpRig) promptHas(t *testing.T, marker, want string) bool {
	t.Helper()
	for _, r := range rig.provider.Requests() {
		var sys, user string
		for _, m := range r.Body.Messages {
			switch m.Role {
			case "system":
				sys += m.Content
			case "user":
				user += m.Content
			}
		}
		if strings.Contains(sys, marker) && strings.Contains(user, want) {
			return true
		}
	}
	return false
}

func (rig *rpRig) steps() []string {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	var out []string
	for _, p := range rig.progress {
		s := p.Step
		if p.Done {
			s += "+done"
		}
		out = append(out, s)
	}
	return out
}

func allSentences(rep *schemas.ResearchReport) []schemas.ReportSentence {
	out := slices.Clone(rep.Summary)
	for _, s := range rep.Sections {
		out = append(out, s.Sentences...)
	}
	out = append(out, rep.Disagreements...)
	return append(out, rep.Conclusion...)
}

// checkCitations asserts that every sentence that states something cites
// sources, and that every source is a block of the index whose own text
// supports the sentence (the answer stage's verifier, run here on the
// block's text as the index holds it).
func checkCitations(t *testing.T, ix *rpIndex, rep *schemas.ResearchReport) {
	t.Helper()
	for i, c := range rep.Sources {
		if c.Number != i+1 || c.Title == "" || c.Link == "" {
			t.Errorf("source %d: %+v: want number %d, a title and a link", i+1, c, i+1)
		}
		if _, ok := ix.blocks[c.BlockID]; !ok {
			t.Errorf("source %d names block %s, which is not in the index", i+1, c.BlockID)
		}
	}
	check := func(text, updated string, sources []int) {
		if len(sources) == 0 {
			t.Errorf("sentence %q cites nothing", text)
		}
		for _, n := range sources {
			if n < 1 || n > len(rep.Sources) {
				t.Fatalf("sentence %q cites [%d] of %d sources", text, n, len(rep.Sources))
			}
			bid := rep.Sources[n-1].BlockID
			block := ix.blocks[bid]
			if len(updated) >= 10 {
				block += "\n(" + updated[:10] + ")" // a disagreement's side may say its note's date
			}
			ctx := schemas.Context{Passage: schemas.Passage{BlockID: bid, BlockIDs: []string{bid}, Text: block,
				BlockSpans: []schemas.BlockSpan{{ID: bid, Start: 0, End: len(block)}}}}
			v := answer.Verify(ix.store.Analyzer(), text+" [1]", []schemas.Context{ctx})
			if v.Supported != 1 || len(v.Unsupported) > 0 {
				t.Errorf("sentence %q cites [%d] = block %s, whose text %q does not support it", text, n, bid, block)
			}
		}
	}
	for _, s := range allSentences(rep) {
		if len(s.Sides) == 0 {
			check(s.Text, "", s.Sources)
		}
		// A disagreement: each side against its own blocks; its lead
		// (whose note, when) is the report's, not a claim of the notes.
		for _, sd := range s.Sides {
			if sd.Text == "" && len(sd.Sources) == 0 {
				continue // the unknown side of a one-sided disagreement: named, not stated
			}
			check(sd.Text, sd.Updated, sd.Sources)
		}
		if !strings.Contains(rep.Markdown, strings.TrimRight(s.Text, ".!?…")) && len(s.Sides) == 0 {
			t.Errorf("sentence %q is not in the Markdown", s.Text)
		}
	}
}

func TestReportKeepsOnlySentencesTheirFactsBlocksSupport(t *testing.T) {
	rig := rpStart(t, llmtest.DraftReportOptions{Miscite: true, Invent: true}, true, 1)
	ix := rig.ix
	hooks := ix.fact(t, "f1", "New Caledonian crows shape hooked tools from twigs to pull out larvae.", "hooked tools", schemas.CertaintyHigh)
	wire := ix.fact(t, "f2", "Crows bend pieces of wire into hooks when no twig is at hand.", "pieces of wire", schemas.CertaintyMedium)
	faces := ix.fact(t, "f1", "Crows remember the faces of people who threatened them for several years.", "faces of people", schemas.CertaintyHigh)
	// A fact whose block does not hold it: never in the report.
	bogus := ix.fact(t, "f2", "Crows migrate to Africa every winter in large flocks.", "faces of people", schemas.CertaintyLow)
	q := "What have I learned about crows?"
	findings := []*schemas.ResearchFinding{
		{ResearchID: "r1", TaskID: "t1", Index: 0, Of: 2, Question: "How do crows use tools?", Original: q, Lang: "en",
			Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{hooks, wire}, DocsRead: []string{hooks.DocID}, LLMCalls: 3},
		{ResearchID: "r1", TaskID: "t2", Index: 1, Of: 2, Question: "What do crows remember?", Original: q, Lang: "en",
			Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{faces, bogus}, DocsRead: []string{faces.DocID}, LLMCalls: 3},
	}
	rep := rig.research(t, findings...)

	if rep.Mode != schemas.ResearchSynthesis || rep.Lang != "en" || rep.Title != "Report: "+q {
		t.Fatalf("mode %q lang %q title %q", rep.Mode, rep.Lang, rep.Title)
	}
	checkCitations(t, ix, rep)
	if len(rep.Sections) != 2 || rep.Sections[0].Title != "How do crows use tools?" {
		t.Fatalf("sections: %+v", rep.Sections)
	}
	// The miscited sentence (the last fact's text cited to the first fact,
	// whose block is its neighbour in the note) is re-cited to the block
	// that states it, as answers are, and said so; checkCitations has
	// checked that block against it.
	for _, s := range rep.Sections[0].Sentences {
		if strings.Contains(s.Text, "faces") {
			for _, n := range s.Sources {
				if bid := rep.Sources[n-1].BlockID; bid != faces.BlockIDs[0] {
					t.Errorf("the miscited sentence %q still cites %s, want the faces block %s", s.Text, bid, faces.BlockIDs[0])
				}
			}
		}
	}
	if strings.Contains(rep.Markdown, "penguins") {
		t.Errorf("the invented sentence is in the report:\n%s", rep.Markdown)
	}
	var miscited, invented, unverified bool
	for _, r := range rep.Reasons {
		miscited = miscited || (strings.HasPrefix(r, "recited_sentence: ") && strings.Contains(r, "-> "+faces.BlockIDs[0]) && strings.Contains(r, "faces"))
		invented = invented || strings.HasPrefix(r, "unsupported_sentence: uncited: ") && strings.Contains(r, "penguins")
		unverified = unverified || strings.HasPrefix(r, "unsupported_fact: ") && strings.Contains(r, "Africa")
	}
	if !miscited || !invented || !unverified {
		t.Errorf("reasons %q: want the miscited sentence (%v), the invented one (%v) and the unverified fact (%v)", rep.Reasons, miscited, invented, unverified)
	}
	if strings.Contains(rep.Markdown, "Africa") || len(rep.Facts) != 3 {
		t.Errorf("the report holds %d facts (want the 3 verified ones) or the unverified one:\n%s", len(rep.Facts), rep.Markdown)
	}
	for _, f := range rep.Facts {
		if f.ID == "" || len(f.BlockIDs) == 0 {
			t.Errorf("fact %+v: want a report-wide id and its blocks", f)
		}
	}
	for _, want := range []string{"# Report: " + q, "## Executive summary", "## How do crows use tools?", "## Conclusion", "## Sources", " [1]", "1. Crows › Tools — [", "](file://", "crows.md#tools)"} {
		if !strings.Contains(rep.Markdown, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, rep.Markdown)
		}
	}
	if rep.Tasks != 2 || rep.LLMCalls != 6+2 || rep.DocsRead != 1 {
		t.Errorf("tasks %d llm calls %d docs read %d: want 2, 8 (6 of the findings, draft, report), 1", rep.Tasks, rep.LLMCalls, rep.DocsRead)
	}
	if d, r := rig.calls(research.DraftMarker), rig.calls(research.ReportMarker); d != 1 || r != 1 {
		t.Errorf("%d draft and %d report calls, want 1 of each", d, r)
	}

	// Stored, and listed.
	reports, _ := rig.b.KV(context.Background(), stage.BucketReports)
	stored, err := research.LoadReport(context.Background(), reports, "r1")
	if err != nil || stored == nil || stored.Markdown != rep.Markdown || len(stored.Facts) != 3 {
		t.Fatalf("stored report: %v %+v", err, stored)
	}
	list, err := research.ListReports(context.Background(), reports)
	if err != nil || len(list) != 1 || list[0].ResearchID != "r1" || list[0].Sources != len(rep.Sources) || list[0].Title != rep.Title {
		t.Fatalf("list: %v %+v", err, list)
	}
	if missing, err := research.LoadReport(context.Background(), reports, "nope"); err != nil || missing != nil {
		t.Fatalf("a research without a report: %v %+v", err, missing)
	}
	if got := rig.steps(); !slices.Equal(got, []string{"draft", "report+done"}) {
		t.Errorf("progress %q, want draft then report done", got)
	}

	// A redelivered draft gets the stored report, without asking the model.
	rp, err := research.NewReporter(research.ReportDeps{Router: rig.router, Analyzer: ix.store.Analyzer(), Reports: reports})
	if err != nil {
		t.Fatal(err)
	}
	again, err := rp.Write(context.Background(), &schemas.ResearchDraft{ResearchID: "r1", Question: q, Mode: schemas.ResearchSynthesis}, false)
	if err != nil || again.Markdown != rep.Markdown || rig.calls(research.ReportMarker) != 1 {
		t.Fatalf("redelivered draft: %v, same report %v, %d report calls", err, again != nil && again.Markdown == rep.Markdown, rig.calls(research.ReportMarker))
	}
}

func TestAFailingDraftCallRetriesThenTheReportIsWrittenWithoutAnOutline(t *testing.T) {
	fail := llmtest.Fail(503)
	rig := rpStart(t, llmtest.DraftReportOptions{DraftFault: &fail}, true, 1)
	hooks := rig.ix.fact(t, "f1", "New Caledonian crows shape hooked tools from twigs.", "hooked tools", schemas.CertaintyHigh)
	rep := rig.research(t, &schemas.ResearchFinding{ResearchID: "r-df", TaskID: "t1", Index: 0, Of: 1, Question: "Tools?",
		Original: "What tools do crows use?", Lang: "en", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{hooks}})
	checkCitations(t, rig.ix, rep)
	if d, r := rig.calls(research.DraftMarker), rig.calls(research.ReportMarker); d != 3 || r != 1 {
		t.Errorf("%d draft calls (want 3: one per delivery) and %d report calls (want 1)", d, r)
	}
	if len(rep.Sections) != 1 || !slices.ContainsFunc(rep.Reasons, func(r string) bool { return strings.HasPrefix(r, "draft_failed: ") }) {
		t.Fatalf("want the model's report and why it has no outline: %q\n%s", rep.Reasons, rep.Markdown)
	}
}

func TestReportOfARussianQuestionIsInRussian(t *testing.T) {
	rig := rpStart(t, llmtest.DraftReportOptions{}, true, 1)
	ix := rig.ix
	tools := ix.fact(t, "f1", "Новокаледонские вороны делают крючки из веточек и достают ими личинок.", "крючки из веточек", schemas.CertaintyHigh)
	faces := ix.fact(t, "f1", "Вороны помнят лица людей, которые им угрожали, несколько лет.", "помнят лица", schemas.CertaintyMedium)
	q := "Что я узнал о воронах?"
	rep := rig.research(t,
		&schemas.ResearchFinding{ResearchID: "r-ru", TaskID: "t1", Index: 0, Of: 2, Question: "Какие орудия делают вороны?", Original: q,
			Lang: "ru", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{tools}},
		&schemas.ResearchFinding{ResearchID: "r-ru", TaskID: "t2", Index: 1, Of: 2, Question: "Что помнят вороны?", Original: q,
			Lang: "ru", Mode: schemas.ResearchSynthesis, Status: schemas.TaskBudget, Facts: []schemas.Fact{faces}})
	checkCitations(t, ix, rep)
	if rep.Lang != "ru" || len(rep.Sections) != 2 || len(rep.Sources) != 2 {
		t.Fatalf("lang %q, %d sections, %d sources:\n%s", rep.Lang, len(rep.Sections), len(rep.Sources), rep.Markdown)
	}
	for _, want := range []string{"# Отчёт: " + q, "## Краткое изложение", "## Какие орудия делают вороны?", "## Заключение", "## Источники", "Вороны › Орудия — ["} {
		if !strings.Contains(rep.Markdown, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, rep.Markdown)
		}
	}
	if strings.Contains(rep.Markdown, "Executive summary") || strings.Contains(rep.Markdown, "Sources") {
		t.Errorf("English section names in a Russian report:\n%s", rep.Markdown)
	}
	if !slices.ContainsFunc(rep.Reasons, func(r string) bool { return strings.HasPrefix(r, "task_budget: ") }) {
		t.Errorf("reasons %q: want the task that ran out of budget", rep.Reasons)
	}
}

func TestAFailingProviderGivesTheReportOfTheFactsAfterItsRetries(t *testing.T) {
	fail := llmtest.Fail(500)
	rig := rpStart(t, llmtest.DraftReportOptions{ReportFault: &fail}, true, 1)
	ix := rig.ix
	hooks := ix.fact(t, "f1", "New Caledonian crows shape hooked tools from twigs.", "hooked tools", schemas.CertaintyHigh)
	rep := rig.research(t, &schemas.ResearchFinding{ResearchID: "r-fail", TaskID: "t1", Index: 0, Of: 1, Question: "Tools?",
		Original: "What tools do crows use?", Lang: "en", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{hooks}})
	checkCitations(t, ix, rep)
	if n := rig.calls(research.ReportMarker); n != 3 {
		t.Errorf("%d report calls, want 3 (one per delivery)", n)
	}
	if len(rep.Sections) != 1 || rep.Sections[0].Title != "Tools?" || len(rep.Summary) != 1 ||
		!slices.ContainsFunc(rep.Reasons, func(r string) bool { return strings.HasPrefix(r, "report_fallback: the model's report failed") }) {
		t.Fatalf("want the facts by sub-question and why: %+v", rep)
	}
	if !strings.Contains(rep.Markdown, "*The language model could not write the report") {
		t.Errorf("Markdown does not say why:\n%s", rep.Markdown)
	}
}

func TestAReportThatIsNotJSONIsAskedAgainTwiceThenGivesTheReportOfTheFacts(t *testing.T) {
	rig := rpStart(t, llmtest.DraftReportOptions{Prose: true}, true, 1)
	hooks := rig.ix.fact(t, "f1", "New Caledonian crows shape hooked tools from twigs.", "hooked tools", schemas.CertaintyHigh)
	rep := rig.research(t, &schemas.ResearchFinding{ResearchID: "r-prose", TaskID: "t1", Index: 0, Of: 1, Question: "Tools?",
		Original: "What tools do crows use?", Lang: "en", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{hooks}})
	checkCitations(t, rig.ix, rep)
	if strings.Contains(rep.Markdown, "all is well") || rig.calls(research.ReportMarker) != 3 ||
		!slices.ContainsFunc(rep.Reasons, func(r string) bool { return strings.HasPrefix(r, "report_fallback: the model's report was unusable") }) {
		t.Fatalf("want the facts report after three calls (two asked again) and why: %q\n%s", rep.Reasons, rep.Markdown)
	}
	var retries int
	for _, r := range rig.provider.Requests() {
		msgs := r.Body.Messages
		if last := msgs[len(msgs)-1]; last.Role == "user" && strings.HasPrefix(last.Content, "Your reply was not valid JSON: ") &&
			strings.HasSuffix(last.Content, "Reply with the JSON object only.") && msgs[len(msgs)-2].Role == "assistant" {
			retries++
		}
	}
	if retries != 2 || rep.LLMCalls != 1+3 {
		t.Errorf("%d requests asked again with the parse error, report llm_calls %d; want 2, and 4 (the outline, three report calls)", retries, rep.LLMCalls)
	}
	if research.Fallback(rep) == "" {
		t.Errorf("Fallback(rep) is empty; want the report_fallback reason")
	}
}

func TestTwoDraftWorkersWriteOneDraftFromAllFindings(t *testing.T) {
	rig := rpStart(t, llmtest.DraftReportOptions{}, true, 4)
	hooks := rig.ix.fact(t, "f1", "New Caledonian crows shape hooked tools from twigs.", "hooked tools", schemas.CertaintyHigh)
	const of = 6
	var findings []*schemas.ResearchFinding
	for i := range of {
		findings = append(findings, &schemas.ResearchFinding{ResearchID: "r-many", TaskID: fmt.Sprintf("t%d", i+1), Index: i, Of: of,
			Question: fmt.Sprintf("Sub-question %d?", i+1), Original: "Crows?", Lang: "en", Mode: schemas.ResearchSynthesis,
			Status: schemas.TaskDone, Facts: []schemas.Fact{hooks}})
	}
	rep := rig.research(t, findings...)
	// The report is in; give a second draft, if any, time to be asked for.
	time.Sleep(300 * time.Millisecond)
	if d := rig.calls(research.DraftMarker); d != 1 {
		t.Errorf("%d draft calls, want 1", d)
	}
	if rep.Tasks != of {
		t.Errorf("report of %d tasks, want %d", rep.Tasks, of)
	}
}

// rpGuide is the SiYuan user guide notebook in the shared eval data.
const rpGuide = "../../../shared/eval/siyuan-guide/20210808180117-6v0mkxr"

func TestAReportOnTheSiYuanGuideCitesItsBlocksWithDeepLinks(t *testing.T) {
	path := filepath.Join(rpGuide, "20200923234011-ieuun1p/20210808180303-xaduj2o/20240208172514-9dsv6na.sy")
	content, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the SiYuan guide is not here (%v): it lives in shared/eval/siyuan-guide", err)
	}
	nb, err := notes.LoadNotebook(rpGuide)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := notes.ParseSiYuan(path, content, nb)
	if err != nil {
		t.Fatal(err)
	}
	rig := rpStartOn(t, rpIndexDocs(t, []*schemas.DocChanged{doc}), llmtest.DraftReportOptions{Miscite: true}, true, 1)
	ix := rig.ix
	q := "How do databases work in SiYuan and what views do they have?"
	what := ix.fact(t, "f1", "Databases consist of content blocks or non-content block data and are presented in different views.", "presented in different views", schemas.CertaintyHigh)
	share := ix.fact(t, "f2", "Multiple views can be added to the same database, and all views share the same data.", "all views share the same data", schemas.CertaintyHigh)
	table := ix.fact(t, "f1", "The table view is the default database view, displaying data in a tabular row-and-column format.", "tabular row-and-column format", schemas.CertaintyHigh)
	kanban := ix.fact(t, "f2", "The kanban view displays data as cards in columns, each column a value of the grouping field.", "cards in columns", schemas.CertaintyMedium)
	rep := rig.research(t,
		&schemas.ResearchFinding{ResearchID: "guide", TaskID: "t1", Index: 0, Of: 2, Question: "What is a database in SiYuan?", Original: q,
			Lang: "en", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{what, share}},
		&schemas.ResearchFinding{ResearchID: "guide", TaskID: "t2", Index: 1, Of: 2, Question: "What views does a database have?", Original: q,
			Lang: "en", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{table, kanban}})
	checkCitations(t, ix, rep)
	if len(rep.Sections) != 2 || len(rep.Sources) != 4 || len(rep.Facts) != 4 {
		t.Fatalf("%d sections, %d sources, %d facts:\n%s", len(rep.Sections), len(rep.Sources), len(rep.Facts), rep.Markdown)
	}
	for _, c := range rep.Sources {
		if c.Link != "siyuan://blocks/"+c.BlockID {
			t.Errorf("source %s links to %q, want the block's siyuan:// link", c.BlockID, c.Link)
		}
	}
	for _, want := range []string{"Database › Views — [", "General Operations › Database › Views › Kanban View — [", "(siyuan://blocks/20260613162855-3g52lzy)"} {
		if !strings.Contains(rep.Markdown, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, rep.Markdown)
		}
	}
}

// rpDisagreeing are notes written to disagree: two meeting notes with
// different launch dates and a backup note with its later update.
var rpDisagreeing = map[string]string{
	"meeting-march.md": "# Meeting 12 March\n\n## Launch\n\nThe launch of Project Atlas is planned for May 2024.\n",
	"meeting-april.md": "# Meeting 2 April\n\n## Launch\n\nThe launch of Project Atlas is planned for June 2024.\n",
	"backup.md":        "# Backup setup\n\nThe home server backs up the photo library nightly at 02:00.\n",
	"backup-update.md": "# Backup update\n\nSince March the home server backs up the photo library every 6 hours.\n",
}

func TestAReportOnNotesThatDisagreeStatesBothSidesOfEachWithTheirOwnCitation(t *testing.T) {
	dir := t.TempDir()
	var docs []*schemas.DocChanged
	for name, text := range rpDisagreeing {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		doc, err := notes.ParseMarkdown(path, []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	rig := rpStartOn(t, rpIndexDocs(t, docs), llmtest.DraftReportOptions{}, true, 1)
	ix := rig.ix
	may := ix.fact(t, "f1", "The launch of Project Atlas is planned for May 2024.", "May 2024", schemas.CertaintyHigh)
	june := ix.fact(t, "f2", "The launch of Project Atlas is planned for June 2024.", "June 2024", schemas.CertaintyHigh)
	nightly := ix.fact(t, "f1", "The home server backs up the photo library nightly at 02:00.", "nightly", schemas.CertaintyHigh)
	sixHours := ix.fact(t, "f2", "Since March the home server backs up the photo library every 6 hours.", "every 6 hours", schemas.CertaintyHigh)
	may.ContradictedBy, may.Updated, june.Updated = []string{"f2"}, "2024-03-12T10:00:00Z", "2024-04-02T10:00:00Z"
	nightly.ContradictedBy, nightly.Updated, sixHours.Updated = []string{"f2"}, "2024-01-10T09:00:00Z", "2024-03-01T08:00:00Z"
	q := "Where do my notes disagree?"
	rep := rig.research(t,
		&schemas.ResearchFinding{ResearchID: "dis", TaskID: "t1", Index: 0, Of: 2, Question: "When is the launch?", Original: q, Lang: "en",
			Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{may, june}},
		&schemas.ResearchFinding{ResearchID: "dis", TaskID: "t2", Index: 1, Of: 2, Question: "How often are backups made?", Original: q, Lang: "en",
			Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, Facts: []schemas.Fact{nightly, sixHours}})
	checkCitations(t, ix, rep)
	if len(rep.Disagreements) != 2 || !strings.Contains(rep.Markdown, "## Where the notes disagree") {
		t.Fatalf("%d disagreements, want 2:\n%s", len(rep.Disagreements), rep.Markdown)
	}
	for i, pair := range [][2]schemas.Fact{{may, june}, {nightly, sixHours}} {
		s := rep.Disagreements[i]
		if len(s.Sides) != 2 {
			t.Fatalf("disagreement %q: %d sides", s.Text, len(s.Sides))
		}
		for k, f := range pair {
			if len(s.Sides[k].Sources) != 1 || rep.Sources[s.Sides[k].Sources[0]-1].BlockID != f.BlockIDs[0] {
				t.Errorf("side %d of %q cites %v, want the block of %q alone", k, s.Text, s.Sides[k].Sources, f.Text)
			}
		}
		if !s.Sides[1].Newer {
			t.Errorf("disagreement %q: the second side is the newer", s.Text)
		}
	}
	for _, want := range []string{"Meeting 12 March (2024-03-12): the launch of Project Atlas is planned for May 2024 [",
		"; the newer Meeting 2 April (2024-04-02): the launch of Project Atlas is planned for June 2024 [",
		"Backup setup (2024-01-10) said: the home server backs up the photo library nightly at 02:00 [",
		"; since 2024-03-01 (Backup update): Since March the home server backs up the photo library every 6 hours ["} {
		if !strings.Contains(rep.Markdown, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, rep.Markdown)
		}
	}
	// The report model was given the pairs.
	if !rig.promptHas(t, research.ReportMarker, `<disagreement facts="F1,F2" dates="2024-03-12,2024-04-02" newer="F2"/>`) ||
		!rig.promptHas(t, research.DraftMarker, `<disagreement facts="F3,F4" dates="2024-01-10,2024-03-01" newer="F4"/>`) {
		t.Error("the draft and report prompts lack the pairs")
	}
}
