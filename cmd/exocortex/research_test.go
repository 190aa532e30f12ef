package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// guideDB is the SiYuan user guide's "Database" document (a real .sy file).
const (
	guideBox = "20210808180117-6v0mkxr"
	guideDB  = "../../../shared/eval/siyuan-guide/20210808180117-6v0mkxr/20200923234011-ieuun1p/20210808180303-xaduj2o/20240208172514-9dsv6na.sy"
)

// guideBlocks reads the guide's Database document: its blocks, and the
// first paragraph under each heading that names a view (and the overview).
func guideBlocks(t *testing.T) (*schemas.DocChanged, []schemas.Block, map[string][]string) {
	t.Helper()
	path, err := filepath.Abs(guideDB)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the SiYuan guide is not beside the repository (%v)", err)
	}
	nb, err := notes.LoadNotebook(filepath.Join(filepath.Dir(path), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := notes.ParseSiYuan(path, raw, nb)
	if err != nil {
		t.Fatal(err)
	}
	var picked []schemas.Block
	section := map[string][]string{}
	heading := ""
	for _, b := range doc.Blocks {
		switch {
		case b.Type == schemas.BlockHeading:
			heading = b.Text
		case b.Type == schemas.BlockParagraph && heading != "" && (heading == "Overview" || strings.HasSuffix(heading, " View")) &&
			len(b.Text) > 40 && !strings.HasPrefix(b.Text, ":"):
			picked = append(picked, b)
			section[b.ID] = []string{doc.Title, heading}
			heading = "" // the first paragraph of each
		}
	}
	if len(picked) < 3 {
		t.Fatalf("the guide's Database document gave %d paragraphs under its view headings", len(picked))
	}
	return doc, picked, section
}

// fakeResearch plays the research stages for the CLI: it answers every
// kb.research.requested with progress on kb.research.progress.<id> and a
// report built from blocks, which it stores in KB_RESEARCH_REPORTS and
// publishes on kb.research.report. A question with FAIL gets a "failed"
// step instead; one with SILENT gets nothing.
type fakeResearch struct {
	b      *bus.Bus
	doc    *schemas.DocChanged
	blocks []schemas.Block
	path   map[string][]string
	mu     sync.Mutex
	reqs   []*schemas.ResearchRequested
}

func startFakeResearch(t *testing.T, b *bus.Bus) *fakeResearch {
	doc, blocks, path := guideBlocks(t)
	f := &fakeResearch{b: b, doc: doc, blocks: blocks, path: path}
	stop, err := b.Subscribe(schemas.SubjectResearchRequested, func(ev schemas.Event) {
		if req, ok := ev.(*schemas.ResearchRequested); ok {
			f.mu.Lock()
			f.reqs = append(f.reqs, req)
			f.mu.Unlock()
			go f.run(t, req)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return f
}

func (f *fakeResearch) requests() []*schemas.ResearchRequested {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*schemas.ResearchRequested(nil), f.reqs...)
}

func (f *fakeResearch) report(req *schemas.ResearchRequested) *schemas.ResearchReport {
	r := &schemas.ResearchReport{ResearchID: req.ResearchID, Question: req.Question, Lang: "en", Mode: schemas.ResearchSynthesis,
		Title: "Databases in SiYuan and their " + fmt.Sprint(len(f.blocks)-1) + " views", Tasks: 2, DocsRead: 4, LLMCalls: 7,
		Started: req.RequestedAt, Finished: time.Now().UTC(), Reasons: []string{"budget: task 2 stopped at its document budget"}}
	var sec schemas.ReportSection
	for i, b := range f.blocks {
		sentence := strings.SplitAfter(b.Text, ".")[0]
		r.Sources = append(r.Sources, schemas.Citation{BlockID: b.ID, DocID: f.doc.DocID, Title: f.doc.Title, SectionPath: f.path[b.ID],
			Quote: sentence, Link: "siyuan://blocks/" + b.ID, Number: i + 1})
		r.Facts = append(r.Facts, schemas.Fact{ID: fmt.Sprintf("f%d", i+1), Text: sentence, Certainty: schemas.CertaintyHigh, BlockIDs: []string{b.ID}})
		if i == 0 {
			r.Summary = []schemas.ReportSentence{{Text: sentence, Sources: []int{1}}}
			continue
		}
		sec.Sentences = append(sec.Sentences, schemas.ReportSentence{Text: sentence, Sources: []int{i + 1}})
	}
	sec.Title = "Views"
	r.Sections = []schemas.ReportSection{sec}
	r.Conclusion = []schemas.ReportSentence{{Text: "Every view shows the same data.", Sources: []int{1, 2}}}
	var md strings.Builder
	fmt.Fprintf(&md, "# %s\n\n", r.Title)
	for _, s := range append(append(r.Summary, sec.Sentences...), r.Conclusion...) {
		fmt.Fprintf(&md, "%s %v\n", s.Text, s.Sources)
	}
	r.Markdown = md.String()
	switch {
	case strings.Contains(req.Question, "EVIDENCE"):
		// The model's replies could not be used: the evidence-only report.
		r.Mode, r.Summary, r.Conclusion = schemas.ResearchEvidenceOnly, nil, nil
		r.Reasons = []string{"synthesis_failed: the model's fact replies could not be read (4 documents skipped, also when asked again); " +
			"the report shows the best passages of the 4 documents read"}
	case strings.Contains(req.Question, "FACTSLIST"):
		r.Reasons = append(r.Reasons, "report_fallback: the model's report was unusable: it is not the JSON report asked for; the report lists the verified facts")
	}
	if strings.Contains(req.Question, "HUGE") {
		// More than one NATS message holds: the event travels as a stub,
		// the stored report is whole.
		for i := 0; i < 3000; i++ {
			r.Facts = append(r.Facts, schemas.Fact{ID: fmt.Sprintf("x%d", i), Text: strings.Repeat("views share data ", 30), BlockIDs: []string{f.blocks[0].ID}})
		}
	}
	return r
}

func (f *fakeResearch) run(t *testing.T, req *schemas.ResearchRequested) {
	ctx := context.Background()
	progress := func(p schemas.ResearchProgress) {
		p.ResearchID = req.ResearchID
		if err := f.b.PublishCore(&p, req.ResearchID); err != nil {
			t.Errorf("progress: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // in order, as stages far apart send them
	}
	if strings.Contains(req.Question, "SILENT") {
		return
	}
	progress(schemas.ResearchProgress{Step: "plan", Tasks: 2, Message: "1. What is a database in SiYuan?\n2. Which views does it have?"})
	if strings.Contains(req.Question, "FAIL") {
		progress(schemas.ResearchProgress{Step: "failed", Message: "draft: every provider failed (3 deliveries)"})
		return
	}
	progress(schemas.ResearchProgress{Step: "task", TaskID: "t1", Task: 1, Tasks: 2, DocsRead: 1, DocsTotal: 3, FactsKept: 1})
	progress(schemas.ResearchProgress{Step: "task", TaskID: "t2", Task: 2, Tasks: 2, DocsRead: 3, DocsTotal: 3, FactsKept: 2, Done: true, Message: "done"})
	progress(schemas.ResearchProgress{Step: "task", TaskID: "t1", Task: 1, Tasks: 2, DocsRead: 3, DocsTotal: 3, FactsKept: 2, Done: true})
	progress(schemas.ResearchProgress{Step: "draft", Message: "drafting from 2 findings"})
	r := f.report(req)
	kv, err := f.b.KV(ctx, stage.BucketReports)
	if err == nil {
		err = research.SaveReport(ctx, kv, r)
	}
	if err != nil {
		t.Errorf("store report: %v", err)
		return
	}
	if _, err := f.b.Publish(ctx, r, req.ResearchID); err != nil {
		t.Errorf("publish report: %v", err)
	}
	progress(schemas.ResearchProgress{Step: "report", Done: true, Message: "report ready: 4 sources"})
}

// exoResearch runs the binary with extra environment variables.
func exoResearch(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_URL=", "EXOCORTEX_SIYUAN_CONFIG=",
		"EXOCORTEX_SIYUAN_REPORT_NOTEBOOK="), env...)
	err := cmd.Run()
	return o.String(), e.String(), exitCode(err)
}

const dbQuestion = "How do databases work in SiYuan and what views do they have?"

func TestCLIResearchShowsProgressPrintsTheReportAndReadsItBack(t *testing.T) {
	t.Parallel()
	b := stagetest.New(t)
	f := startFakeResearch(t, b)
	url := b.Server.ClientURL()
	dir := t.TempDir()
	outFile, saveDir := filepath.Join(dir, "report.md"), filepath.Join(dir, "saved")

	out, errOut, code := exoResearch(t, nil, "research", dbQuestion, "--nats", url, "--out", outFile, "--save", saveDir,
		"--sub-questions", "2", "--docs", "3", "--max-calls", "9", "--max-time", "90s")
	if code != 0 {
		t.Fatalf("research: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests published, want 1", len(reqs))
	}
	req := reqs[0]
	if req.Question != dbQuestion || req.Lang != "en" || req.NoLLM ||
		req.Budget != (schemas.ResearchBudget{SubQuestions: 2, DocsPerTask: 3, LLMCalls: 9, WallSeconds: 90}) {
		t.Errorf("request = %+v, want the question, its language and the budget flags", req)
	}
	want := f.report(req)
	if out != want.Markdown {
		t.Errorf("stdout is not the report's Markdown:\n%s\nwant:\n%s", out, want.Markdown)
	}
	for _, line := range []string{
		"research " + req.ResearchID,
		"plan ready: 2 sub-questions\n  1. What is a database in SiYuan?\n  2. Which views does it have?\n",
		"task 1/2: 1/3 documents read, 1 fact kept\n",
		"task 2/2 done: 3/3 documents read, 2 facts kept (done)\n",
		"task 1/2 done: 3/3 documents read, 2 facts kept\n",
		"draft: drafting from 2 findings\n",
		"report: report ready: 4 sources\n",
	} {
		if !strings.Contains(errOut, line) {
			t.Errorf("progress lacks %q:\n%s", line, errOut)
		}
	}
	// Both files are marked as a report by their front matter.
	if got, err := os.ReadFile(outFile); err != nil || !strings.HasPrefix(string(got), "---\nexocortex: report\nresearch_id: \"") ||
		!strings.HasSuffix(string(got), "---\n"+want.Markdown) {
		t.Errorf("--out wrote %q (%v), want the report's front matter, then its Markdown", got, err)
	}
	saved, err := os.ReadFile(filepath.Join(saveDir, want.Title+".md"))
	if err != nil {
		t.Fatalf("--save DIR: %v\n%s", err, errOut)
	}
	for _, c := range want.Sources {
		if !strings.Contains(string(saved), fmt.Sprintf("[%d](siyuan://blocks/%s)", c.Number, c.BlockID)) ||
			!strings.Contains(string(saved), fmt.Sprintf("](siyuan://blocks/%s) (block %s) — «%s»", c.BlockID, c.BlockID, c.Quote)) {
			t.Errorf("the saved report lacks a link to source %d (%s):\n%s", c.Number, c.BlockID, saved)
		}
	}
	_, body, marked := strings.Cut(string(saved), "\n---\n")
	if !strings.HasPrefix(string(saved), "---\nexocortex: report\n") || !marked || !strings.HasPrefix(body, "# "+want.Title+"\n") || !strings.Contains(string(saved), "## Views\n") ||
		!strings.Contains(string(saved), "- budget: task 2 stopped at its document budget") {
		t.Errorf("the saved report lacks its title, sections or notes:\n%s", saved)
	}

	// --json prints the report event; --no-llm asks for evidence_only; a
	// second run saves beside the first.
	out, errOut, code = exoResearch(t, nil, "research", dbQuestion, "--nats", url, "--json", "--save", saveDir, "--no-llm")
	var got schemas.ResearchReport
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("research --json: exit %d\n%s\n%s", code, out, errOut)
	}
	if len(f.requests()) != 2 || got.ResearchID != f.requests()[1].ResearchID || !f.requests()[1].NoLLM || got.Mode != schemas.ResearchSynthesis ||
		len(got.Sources) != len(want.Sources) || got.Sources[0].BlockID != want.Sources[0].BlockID || len(got.Facts) != len(want.Facts) {
		t.Errorf("research --json = %+v", got)
	}
	// A report larger than a NATS message is read from KB_RESEARCH_REPORTS.
	out, errOut, code = exoResearch(t, nil, "research", "HUGE "+dbQuestion, "--nats", url, "--json", "--timeout", "30s")
	got = schemas.ResearchReport{}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Facts) != len(want.Facts)+3000 || len(out) < 1<<20 {
		t.Errorf("a report of %d bytes: exit %d, %d facts\n%s", len(out), code, len(got.Facts), errOut)
	}
	if _, err := os.Stat(filepath.Join(saveDir, want.Title+" (2).md")); err != nil {
		t.Errorf("a second report of the same title overwrote the first or went missing: %v\n%s", err, errOut)
	}

	// list and status read the stored reports.
	out, errOut, code = exoResearch(t, nil, "research", "list", "--nats", url)
	if code != 0 || strings.Count(out, want.Title) != 3 || !strings.Contains(out, req.ResearchID) || !strings.Contains(out, got.ResearchID) ||
		!strings.Contains(out, "synthesis") || strings.Index(out, got.ResearchID) > strings.Index(out, req.ResearchID) {
		t.Errorf("research list (newest first): exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = exoResearch(t, nil, "research", "status", req.ResearchID, "--nats", url)
	for _, s := range []string{"research " + req.ResearchID + ": " + want.Title, "question: " + dbQuestion, "mode: synthesis",
		"2 sub-questions, 4 documents read, 7 language-model calls, 4 facts, 4 sources", "note: budget: task 2 stopped"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("research status lacks %q: exit %d\n%s\n%s", s, code, out, errOut)
		}
	}
	// A research with state and no report is in progress; one with neither is unknown.
	state, err := b.KV(context.Background(), stage.BucketResearch)
	if err != nil {
		t.Fatal(err)
	}
	if err := state.Put(context.Background(), "task.research-0123abcd.t1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if out, _, code := exoResearch(t, nil, "research", "status", "research-0123abcd", "--nats", url); code != 0 || !strings.Contains(out, "in progress") {
		t.Errorf("status of a research in progress: exit %d %s", code, out)
	}
	if _, errOut, code := exoResearch(t, nil, "research", "status", "research-ffff", "--nats", url); code != 1 || !strings.Contains(errOut, "no research research-ffff") {
		t.Errorf("status of an unknown research: exit %d %s", code, errOut)
	}
}

func TestCLIResearchExitCodes(t *testing.T) {
	t.Parallel()
	b := stagetest.New(t)
	f := startFakeResearch(t, b)
	url := b.Server.ClientURL()
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no question is a usage error", []string{"research", "--nats", url}, 2, "give a question"},
		{"a negative budget is a usage error", []string{"research", "q", "--docs", "-1", "--nats", url}, 2, "--docs -1"},
		{"status without an id is a usage error", []string{"research", "status", "--nats", url}, 2, "give one research id"},
		{"--save siyuan without a kernel is a usage error", []string{"research", "q", "--save", "siyuan", "--nats", url}, 2, "--save siyuan needs the kernel"},
		{"a research that fails says why", []string{"research", "FAIL please", "--nats", url}, 1, "research failed: draft: every provider failed"},
		{"a research that never reports times out naming what it waited for", []string{"research", "SILENT please", "--nats", url, "--timeout", "2s"}, 1,
			"no report on kb.research.report within 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := exoResearch(t, nil, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", code, tc.code, tc.says, errOut)
			}
		})
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests published, want 2 (usage errors publish nothing)", n)
	}
}

func TestCLIResearchExitsThreeWithTheReportWhenItFellBackFromTheSynthesis(t *testing.T) {
	t.Parallel()
	b := stagetest.New(t)
	startFakeResearch(t, b)
	url := b.Server.ClientURL()
	for _, tc := range []struct {
		name, question string
		code           int
		mode, says     string
	}{
		{"a synthesis exits 0", "How do views work?", 0, schemas.ResearchSynthesis, ""},
		{"an evidence-only report after unreadable replies exits 3 and says why", "EVIDENCE: how do views work?", 3, schemas.ResearchEvidenceOnly,
			"exocortex research: the report is a fallback: synthesis_failed: the model's fact replies could not be read"},
		{"a list of the verified facts after an unusable report exits 3 and says why", "FACTSLIST: how do views work?", 3, schemas.ResearchSynthesis,
			"exocortex research: the report is a fallback: report_fallback: the model's report was unusable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := exoResearch(t, nil, "research", tc.question, "--nats", url, "--json")
			var rep schemas.ResearchReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("the report is printed whatever the exit status: %v\n%s", err, out)
			}
			if code != tc.code || rep.Mode != tc.mode || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, mode %s; want %d, %s; stderr lacks %q:\n%s", code, rep.Mode, tc.code, tc.mode, tc.says, errOut)
			}
			if tc.code == 0 && strings.Contains(errOut, "fallback") {
				t.Errorf("a synthesis is called a fallback:\n%s", errOut)
			}
		})
	}
}

func TestCLIResearchSaveSiYuanWritesBlockRefsThatResolve(t *testing.T) {
	t.Parallel()
	b := stagetest.New(t)
	f := startFakeResearch(t, b)
	k := siyuantest.New(t, "tok")
	k.AddNotebook(guideBox, "SiYuan User Guide")
	k.AddNotebook("20261124100000-reports", "Reports")
	var blocks []siyuantest.Block
	for _, bl := range f.doc.Blocks {
		sb := siyuantest.Block{ID: bl.ID, Type: "p", Content: bl.Text, Markdown: bl.Text}
		if bl.Type == schemas.BlockHeading {
			sb.Type, sb.Subtype, sb.Markdown = "h", fmt.Sprintf("h%d", bl.Level), strings.Repeat("#", bl.Level)+" "+bl.Text
		}
		blocks = append(blocks, sb)
	}
	if err := k.PutDoc(guideBox, f.doc.DocID, "", "/Database", blocks...); err != nil {
		t.Fatal(err)
	}
	env := []string{"EXOCORTEX_SIYUAN_URL=" + k.URL(), "EXOCORTEX_SIYUAN_TOKEN=tok"}
	url := b.Server.ClientURL()

	// Without a notebook it says which there are, before any research.
	_, errOut, code := exoResearch(t, env, "research", dbQuestion, "--nats", url, "--save", "siyuan")
	if code != 2 || !strings.Contains(errOut, "20261124100000-reports (Reports)") || len(f.requests()) != 0 {
		t.Errorf("--save siyuan without a notebook: exit %d, %d requests\n%s", code, len(f.requests()), errOut)
	}
	_, errOut, code = exoResearch(t, append(env, "EXOCORTEX_SIYUAN_REPORT_NOTEBOOK=20261124100000-nosuch"), "research", dbQuestion, "--nats", url, "--save", "siyuan")
	if code != 1 || !strings.Contains(errOut, "no open notebook 20261124100000-nosuch") || len(f.requests()) != 0 {
		t.Errorf("--save siyuan into a missing notebook: exit %d\n%s", code, errOut)
	}

	out, errOut, code := exoResearch(t, append(env, "EXOCORTEX_SIYUAN_REPORT_NOTEBOOK=20261124100000-reports"), "research", dbQuestion, "--nats", url, "--save", "siyuan")
	if code != 0 || out == "" {
		t.Fatalf("research --save siyuan: exit %d\n%s\n%s", code, out, errOut)
	}
	m := regexp.MustCompile(`saved to SiYuan: document (\S+) siyuan://blocks/(\S+) \(/Research/`).FindStringSubmatch(errOut)
	if m == nil || m[1] != m[2] {
		t.Fatalf("no document id and link printed:\n%s", errOut)
	}
	id := m[1]
	want := f.report(f.requests()[0])
	c := siyuan.NewClient(k.URL(), "tok")
	ctx := context.Background()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	doc, err := c.SQL(ctx, "SELECT hpath, box FROM blocks WHERE id = '"+id+"' LIMIT 1")
	if err != nil || len(doc) != 1 || doc[0].Str("hpath") != "/Research/"+want.Title || doc[0].Str("box") != "20261124100000-reports" {
		t.Fatalf("the new document: %v %v", doc, err)
	}
	// Every citation is a block reference that resolves to the cited block,
	// whose text holds the quote; the sources list refers to each too.
	refs, err := c.SQL(ctx, `SELECT r.def_block_id, r.content, b.content AS text FROM refs r JOIN blocks b ON b.id = r.def_block_id
		WHERE r.root_id = '`+id+`' LIMIT 200`)
	if err != nil {
		t.Fatal(err)
	}
	cited, listed := map[string]int{}, map[string]int{}
	for _, r := range refs {
		if regexp.MustCompile(`^\d+$`).MatchString(r.Str("content")) {
			cited[r.Str("def_block_id")]++
		} else {
			listed[r.Str("def_block_id")]++
		}
	}
	for i, s := range want.Sources {
		var text string
		for _, r := range refs {
			if r.Str("def_block_id") == s.BlockID {
				text = r.Str("text")
			}
		}
		if cited[s.BlockID] == 0 || listed[s.BlockID] != 1 || !strings.Contains(text, s.Quote) {
			t.Errorf("source %d (%s): cited by %d refs, listed by %d, block text %q, want it to hold %q",
				i+1, s.BlockID, cited[s.BlockID], listed[s.BlockID], text, s.Quote)
		}
	}
	if len(cited)+len(listed) == 0 || len(refs) != 2*len(want.Sources)+2 { // the conclusion cites two
		t.Errorf("%d refs in the new document, want one per citation and one per source: %v", len(refs), refs)
	}
}
