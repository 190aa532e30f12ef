package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

const guideDir = "../../../shared/eval/siyuan-guide/20210808180117-6v0mkxr"

// guideDocs parses every document of the SiYuan guide.
func guideDocs(t *testing.T) []*schemas.DocChanged {
	t.Helper()
	nb, err := notes.LoadNotebook(guideDir)
	if err != nil {
		t.Fatal(err)
	}
	var docs []*schemas.DocChanged
	err = filepath.WalkDir(guideDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sy") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := notes.ParseSiYuan(path, raw, nb)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestResearchOnTheSiYuanGuideWithTheScriptedProvider runs the whole
// research flow (plan, investigate, draft, report: the stages the command
// runs itself over the data directory) on the indexed SiYuan guide with
// the scripted provider that plans, extracts facts from the documents it
// is given and writes the report from the facts; then saves the report
// into a SiYuan notebook, where every citation is a block reference to the
// cited block.
func TestResearchOnTheSiYuanGuideWithTheScriptedProvider(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	data := t.TempDir()
	if _, errOut, err := exo(t, "ingest", "../../../shared/eval/siyuan-guide", "--data", data); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	p := llmtest.New(t)
	p.SetResponder(llmtest.Chain(llmtest.PlanFactsResponder(llmtest.PlanFactsOptions{}),
		llmtest.DraftReportResponder(llmtest.DraftReportOptions{})))
	env := []string{"EXOCORTEX_LLM_BASE_URL=" + p.URL(), "EXOCORTEX_LLM_MODEL=m"}

	out, errOut, code := exoResearch(t, env, "research", dbQuestion, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("research: exit %d\n%s", code, errOut)
	}
	var rep schemas.ResearchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("research --json: %v\n%s", err, out)
	}
	for _, want := range []string{"plan ready: ", " documents read, ", "draft: ", "report: "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no progress line with %q:\n%s", want, errOut)
		}
	}
	if rep.Mode != schemas.ResearchSynthesis || rep.Tasks < 3 || len(rep.Sections) == 0 || len(rep.Sources) == 0 || rep.DocsRead == 0 {
		t.Fatalf("report: mode %s, %d tasks, %d sections, %d sources, %d documents read; reasons %q",
			rep.Mode, rep.Tasks, len(rep.Sections), len(rep.Sources), rep.DocsRead, rep.Reasons)
	}
	t.Logf("the report:\n%s", rep.Markdown)
	// Every source is a block of the guide, and the Markdown has the
	// sections and the sources list with deep links.
	blocks := map[string]string{}
	docs := guideDocs(t)
	for _, d := range docs {
		for _, b := range d.Blocks {
			blocks[b.ID] = b.Text
		}
	}
	for i, s := range rep.Sources {
		if _, ok := blocks[s.BlockID]; !ok || s.Link != "siyuan://blocks/"+s.BlockID {
			t.Errorf("source %d %s (%s) is not a block of the guide", i+1, s.BlockID, s.Link)
		}
	}
	if !strings.Contains(rep.Markdown, "\n## "+rep.Sections[0].Title) || !strings.Contains(rep.Markdown, "\n## Sources") ||
		!strings.Contains(rep.Markdown, "siyuan://blocks/"+rep.Sources[0].BlockID) {
		t.Errorf("markdown lacks the sections or the sources:\n%s", rep.Markdown)
	}
	for _, f := range rep.Facts {
		if len(f.Citations) == 0 {
			t.Errorf("fact %s %q kept without a verified citation", f.ID, f.Text)
		}
	}

	// Saved into SiYuan: a new document whose references resolve.
	k := siyuantest.New(t, "tok")
	k.AddNotebook("20210808180117-6v0mkxr", "SiYuan User Guide")
	k.AddNotebook("20261124100000-reports", "Reports")
	for _, d := range docs {
		var bs []siyuantest.Block
		for _, b := range d.Blocks {
			sb := siyuantest.Block{ID: b.ID, Type: "p", Content: b.Text, Markdown: b.Text}
			if b.Type == schemas.BlockHeading {
				sb.Type, sb.Subtype, sb.Markdown = "h", fmt.Sprintf("h%d", b.Level), strings.Repeat("#", b.Level)+" "+b.Text
			}
			bs = append(bs, sb)
		}
		if err := k.PutDoc("20210808180117-6v0mkxr", d.DocID, "", "/"+d.Title, bs...); err != nil {
			t.Fatal(err)
		}
	}
	env = append(env, "EXOCORTEX_SIYUAN_URL="+k.URL(), "EXOCORTEX_SIYUAN_TOKEN=tok", "EXOCORTEX_SIYUAN_REPORT_NOTEBOOK=20261124100000-reports")
	_, errOut, code = exoResearch(t, env, "research", dbQuestion, "--data", data, "--save", "siyuan")
	m := regexp.MustCompile(`saved to SiYuan: document (\S+) `).FindStringSubmatch(errOut)
	if code != 0 || m == nil {
		t.Fatalf("research --save siyuan: exit %d\n%s", code, errOut)
	}
	c := siyuan.NewClient(k.URL(), "tok")
	ctx := context.Background()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	refs, err := c.SQL(ctx, `SELECT r.def_block_id, b.id AS found FROM refs r LEFT JOIN blocks b ON b.id = r.def_block_id WHERE r.root_id = '`+m[1]+`' LIMIT 500`)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) < len(rep.Sources) {
		t.Errorf("%d block references in the saved report, want at least one per source (%d)", len(refs), len(rep.Sources))
	}
	for _, r := range refs {
		if r.Str("found") != r.Str("def_block_id") {
			t.Errorf("a block reference to %s that resolves to nothing", r.Str("def_block_id"))
		}
	}
}

// Without a provider the research still gives a report: evidence_only,
// the passages that answer by part of the question (each part framed by a
// line), cited, and why.
func TestResearchWithoutAProviderPrintsAnEvidenceOnlyReport(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	data := t.TempDir()
	if _, errOut, err := exo(t, "ingest", "../../../shared/eval/siyuan-guide", "--data", data); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	env := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}
	out, errOut, code := exoResearch(t, env, "research", dbQuestion, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("research: exit %d\n%s", code, errOut)
	}
	var rep schemas.ResearchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("research --json: %v\n%s", err, out)
	}
	if rep.Mode != schemas.ResearchEvidenceOnly || len(rep.Sections) < 2 || len(rep.Sources) == 0 ||
		len(rep.Reasons) == 0 || !strings.HasPrefix(rep.Reasons[0], "no_llm_provider") {
		t.Fatalf("report: mode %s, %d sections, %d sources, reasons %q", rep.Mode, len(rep.Sections), len(rep.Sources), rep.Reasons)
	}
	if !strings.Contains(rep.Markdown, "No synthesis was written: no language model provider is configured") ||
		!strings.Contains(rep.Markdown, "[1]") || !strings.Contains(rep.Markdown, "siyuan://blocks/") {
		t.Errorf("markdown does not say why or cite:\n%s", rep.Markdown)
	}
	for _, s := range rep.Sections {
		cited := 0
		for i, sen := range s.Sentences {
			switch {
			case len(sen.Sources) > 0:
				cited++
			case i > 0:
				// Only the line that frames a section's passages cites nothing.
				t.Errorf("section %q: a passage without a source: %q", s.Title, sen.Text)
			}
		}
		if cited == 0 {
			t.Errorf("section %q has no cited passage: %+v", s.Title, s.Sentences)
		}
	}
}

// A model that never answers in the JSON asked for (plan, fact steps,
// outline, report alike) still gives a report: the plan is built from the
// question and the best documents' headings, the documents' best passages
// are kept, and the report is the evidence-only one with the reason, never
// "found nothing"; the exit status is 3 (a fallback).
func TestResearchWithAModelThatNeverAnswersInJSONGivesTheEvidenceWithTheReason(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	data := t.TempDir()
	if _, errOut, err := exo(t, "ingest", "../../../shared/eval/siyuan-guide", "--data", data); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	p := llmtest.New(t)
	p.SetAnswer("Sure! Databases in SiYuan are great, and they have several views.")
	env := []string{"EXOCORTEX_LLM_BASE_URL=" + p.URL(), "EXOCORTEX_LLM_MODEL=m"}
	out, errOut, code := exoResearch(t, env, "research", dbQuestion, "--data", data, "--json", "--sub-questions", "3", "--docs", "3")
	var rep schemas.ResearchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("research --json (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	if code != 3 || !strings.Contains(errOut, "the report is a fallback: synthesis_failed: ") {
		t.Errorf("exit %d; want 3 with the reason on stderr:\n%s", code, errOut)
	}
	if rep.Mode != schemas.ResearchEvidenceOnly || len(rep.Reasons) == 0 || !strings.HasPrefix(rep.Reasons[0], "synthesis_failed: ") ||
		len(rep.Sources) == 0 || strings.Contains(rep.Markdown, "found nothing") {
		t.Fatalf("mode %s, %d sources, reasons %q; want evidence_only with sources, synthesis_failed first\n%s", rep.Mode, len(rep.Sources), rep.Reasons, rep.Markdown)
	}
	if !strings.Contains(rep.Markdown, "No synthesis was written: the language model's replies were not the JSON asked for") ||
		!strings.Contains(rep.Markdown, "siyuan://blocks/") {
		t.Errorf("the Markdown does not say why or cite:\n%s", rep.Markdown)
	}
	if !strings.Contains(strings.Join(rep.Reasons, "\n"), "plan_fallback: the plan reply is not the JSON asked for after 3 attempts") ||
		!strings.Contains(errOut, "plan_fallback: ") {
		t.Errorf("nothing says the plan was built without the model: reasons %q\n%s", rep.Reasons, errOut)
	}
	if n := len(p.Requests()); rep.LLMCalls != n {
		t.Errorf("llm_calls %d, provider requests %d; want every call counted", rep.LLMCalls, n)
	}
	t.Logf("%d tasks, %d calls, %d sources; the report:\n%s", rep.Tasks, rep.LLMCalls, len(rep.Sources), rep.Markdown)
}
