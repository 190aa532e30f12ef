package main_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// The done-when tests of issue 26: the whole research pipeline (the
// binary's own embedded NATS and research stages over an ingested data
// directory) with the research stand-in, over the notes written to
// disagree. The reports are judged by the stand-in's labels and the notes'
// blocks (eval.ScoreResearch), never by the pipeline's own checks.

const (
	disagreeNotes = "../../eval/testdata/notes-disagree"
	disagreeSet   = "../../eval/testdata/research-disagree.json"
)

// disagreeRig is a data directory with the disagreeing notes ingested and
// the planted disagreements of the research set.
type disagreeRig struct {
	data   string
	set    *eval.ResearchSet
	blocks map[string]string
}

func newDisagreeRig(t *testing.T) *disagreeRig {
	t.Helper()
	data := t.TempDir()
	if _, errOut, err := exo(t, "ingest", disagreeNotes, "--data", data, "--no-models"); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	set, err := eval.LoadResearchSet(disagreeSet)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := eval.CollectBlocks(nil, []string{disagreeNotes})
	if err != nil {
		t.Fatal(err)
	}
	return &disagreeRig{data: data, set: set, blocks: blocks}
}

// holdsNoteSentence tells a text that holds a sentence of the notes (20
// characters or more).
func (rig *disagreeRig) holdsNoteSentence(text string) bool {
	text = strings.ToLower(text)
	for _, b := range rig.blocks {
		for _, s := range strings.FieldsFunc(strings.ToLower(b), func(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '\n' }) {
			if s = strings.TrimSpace(s); len([]rune(s)) >= 20 && strings.Contains(text, s) {
				return true
			}
		}
	}
	return false
}

func (rig *disagreeRig) question(t *testing.T, id string) eval.ResearchQuestion {
	t.Helper()
	for _, q := range rig.set.Questions {
		if q.ID == id {
			return q
		}
	}
	t.Fatalf("no question %s in %s", id, disagreeSet)
	return eval.ResearchQuestion{}
}

// researched is one research: its report, its score, the exit status and
// the progress lines.
type researched struct {
	rep    schemas.ResearchReport
	score  eval.ResearchScore
	code   int
	stderr string
}

// research runs 'exocortex research --json' with the stand-in as the
// provider and scores the report by the labels the stand-in made for it.
func (rig *disagreeRig) research(t *testing.T, srv *llmtest.Server, stand *llmtest.Research, q eval.ResearchQuestion) researched {
	t.Helper()
	before, reqs := len(stand.Labels()), len(srv.Requests())
	env := []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="}
	out, errOut, code := exoResearch(t, env, "research", q.Question, "--data", rig.data, "--no-models", "--json")
	var r researched
	r.code, r.stderr = code, errOut
	if err := json.Unmarshal([]byte(out), &r.rep); err != nil {
		t.Fatalf("research %q: exit %d, no JSON report (%v)\nstdout: %s\nstderr: %s", q.Question, code, err, out, errOut)
	}
	var labels []eval.ResearchLabel
	for _, l := range stand.Labels()[before:] {
		if l.Step == "facts" && l.Text != "" {
			labels = append(labels, eval.ResearchLabel{Text: l.Text, Label: l.Label, SourceBlock: l.SourceBlock,
				SourceSentence: l.SourceSentence, Supported: l.Supported, Changed: llmtest.ChangedLabel(l.Label), Fragment: l.Changed})
		}
	}
	r.score = eval.ScoreResearch(&r.rep, labels, rig.blocks, rig.set.Planted(q))
	r.score.Calls = len(srv.Requests()) - reqs
	t.Logf("%s (%s): mode %s, exit %d, %d calls; precision %d/%d; disagreements %d/%d (anywhere %d), missing %q; changed %d/%d %q; not stated %q; reasons %q\n%s",
		q.ID, q.Question, r.rep.Mode, code, r.score.Calls, r.score.StatedSentences, r.score.CitedSentences, r.score.Reported, r.score.Planted,
		r.score.Anywhere, r.score.Missing, len(r.score.ChangedReached), r.score.ChangedFacts, r.score.ChangedReached, r.score.NotStated,
		r.rep.Reasons, r.rep.Markdown)
	return r
}

// (a) A "where do my notes disagree" question reports both sides of every
// planted disagreement in the report's disagreement section, each side
// with a citation of a block that says it: two meeting notes with other
// launch dates and budgets, a backup note and its later update (Russian),
// the same recipe in English and Russian with other ratios.
func TestWhereMyNotesDisagreeReportsBothSidesOfEveryDisagreementWithACitationEach(t *testing.T) {
	t.Parallel()
	rig := newDisagreeRig(t)
	for _, tc := range []struct {
		name, question string
		kind           llmtest.ResearchKind
	}{
		{"an English question on two meeting notes, with a model that notices contradictions", "rd-en-01", llmtest.ResearchContradict},
		{"a Russian question on a backup note and its update, with a model that notices contradictions", "rd-ru-01", llmtest.ResearchContradict},
		{"an English question on a recipe in two languages, with a model that notices contradictions", "rd-en-02", llmtest.ResearchContradict},
		{"an English question on two meeting notes, with a stumbling model", "rd-en-01", llmtest.ResearchStumbling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, stand := llmtest.NewResearchServer(t, llmtest.ResearchOptions{Kind: tc.kind, Translations: rig.set.Translations()})
			q := rig.question(t, tc.question)
			r := rig.research(t, srv, stand, q)
			if r.rep.Mode != schemas.ResearchSynthesis {
				t.Errorf("mode %s, want synthesis; reasons %q", r.rep.Mode, r.rep.Reasons)
			}
			if r.score.Planted == 0 || r.score.Reported != r.score.Planted {
				t.Errorf("%d of %d planted disagreements reported with both sides cited in the disagreement section; missing %q",
					r.score.Reported, r.score.Planted, r.score.Missing)
			}
			for _, s := range r.rep.Disagreements {
				if len(s.Sources) == 0 {
					t.Errorf("a disagreement sentence cites nothing: %q", s.Text)
				}
			}
		})
	}
}

// (b) No changed fact reaches the report: the stand-in changes every
// number it can (2024 -> 2428, 02:00 -> 02:03, 1:2:2 -> 1:2:5) or adds a
// clause, each cited to the block that says otherwise; the report keeps
// the facts' true words or leaves them out.
func TestNoChangedFactReachesTheReport(t *testing.T) {
	t.Parallel()
	rig := newDisagreeRig(t)
	for _, tc := range []struct {
		name string
		opts llmtest.ResearchOptions
	}{
		{"numbers, times, years and ratios changed in half of the facts", llmtest.ResearchOptions{Kind: llmtest.ResearchChangeNumber}},
		{"a condition added to half of the facts", llmtest.ResearchOptions{Kind: llmtest.ResearchAddClause}},
		{"a stumbling model", llmtest.ResearchOptions{Kind: llmtest.ResearchStumbling, Seed: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Translations = rig.set.Translations()
			srv, stand := llmtest.NewResearchServer(t, tc.opts)
			changed, cited := 0, 0
			for _, id := range []string{"rd-en-01", "rd-ru-01", "rd-en-02"} {
				r := rig.research(t, srv, stand, rig.question(t, id))
				changed, cited = changed+r.score.ChangedFacts, cited+r.score.CitedSentences
				if len(r.score.ChangedReached) > 0 {
					t.Errorf("%s: changed facts in the report: %q", id, r.score.ChangedReached)
				}
				if r.score.CitedSentences > 0 && r.score.StatedSentences != r.score.CitedSentences {
					t.Errorf("%s: %d of %d cited sentences stated by their blocks; not stated: %q", id, r.score.StatedSentences,
						r.score.CitedSentences, r.score.NotStated)
				}
			}
			if changed < 3 {
				t.Fatalf("the stand-in changed %d facts; the test needs changed facts to mean anything", changed)
			}
			if cited < 3 {
				t.Errorf("%d cited sentences in the three reports: the faithful facts must still reach them", cited)
			}
		})
	}
}

// factTexts are the report's facts' texts, sorted.
func factTexts(rep schemas.ResearchReport) []string {
	var out []string
	for _, f := range rep.Facts {
		out = append(out, f.Text)
	}
	slices.Sort(out)
	return out
}

// (c) A plan reply and a fact reply that are malformed once (JSON cut
// short) still give the full report: the same sub-questions, the same
// facts and sections as a clean run.
func TestAPlanAndAFactReplyMalformedOnceGiveTheSameReportAsACleanRun(t *testing.T) {
	t.Parallel()
	rig := newDisagreeRig(t)
	for _, id := range []string{"rd-en-01", "rd-ru-01"} {
		t.Run(id, func(t *testing.T) {
			q := rig.question(t, id)
			cleanSrv, cleanStand := llmtest.NewResearchServer(t, llmtest.ResearchOptions{Kind: llmtest.ResearchFaithful, Translations: rig.set.Translations()})
			clean := rig.research(t, cleanSrv, cleanStand, q)
			srv, stand := llmtest.NewResearchServer(t, llmtest.ResearchOptions{Kind: llmtest.ResearchMalformedOnce, Translations: rig.set.Translations()})
			got := rig.research(t, srv, stand, q)
			malformed := 0
			for _, l := range stand.Labels() {
				if l.Label == llmtest.RLabelMalformed {
					malformed++
				}
			}
			if malformed != 2 {
				t.Fatalf("the stand-in sent %d malformed replies, want 2 (the first plan and fact replies)", malformed)
			}
			if clean.rep.Mode != schemas.ResearchSynthesis || len(clean.rep.Facts) == 0 {
				t.Fatalf("the clean run: mode %s with %d facts", clean.rep.Mode, len(clean.rep.Facts))
			}
			if got.rep.Mode != schemas.ResearchSynthesis || got.rep.Tasks != clean.rep.Tasks || len(got.rep.Sections) != len(clean.rep.Sections) {
				t.Errorf("malformed once: mode %s, %d tasks, %d sections; clean: %s, %d tasks, %d sections; reasons %q",
					got.rep.Mode, got.rep.Tasks, len(got.rep.Sections), clean.rep.Mode, clean.rep.Tasks, len(clean.rep.Sections), got.rep.Reasons)
			}
			if a, b := factTexts(got.rep), factTexts(clean.rep); !slices.Equal(a, b) {
				t.Errorf("malformed once gives %d facts, the clean run %d:\nmalformed once: %q\nclean: %q", len(a), len(b), a, b)
			}
			if extra := got.score.Calls - clean.score.Calls; extra < 2 || extra > 4 {
				t.Errorf("%d calls, clean run %d: want the 2 malformed replies asked again (and at most 2 more)", got.score.Calls, clean.score.Calls)
			}
		})
	}
}

// (d) A model that never answers in the shape asked (prose, JSON cut
// short, wrong keys) gives the evidence-only report: passages with
// citations and the reason, never "found nothing" over notes that answer.
func TestAModelThatNeverReturnsValidJSONGivesAnEvidenceOnlyReportWithCitationsAndAReason(t *testing.T) {
	t.Parallel()
	rig := newDisagreeRig(t)
	for _, tc := range []struct {
		id string
		// disagreements: the planted disagreements are passages with other
		// numbers or dates on one subject, shown side by side without a
		// model (the backup note's 02:00 and its update's 6 hours are not
		// values of one kind: only a model tells that change).
		disagreements bool
	}{{"rd-en-03", true}, {"rd-ru-01", false}} {
		id := tc.id
		t.Run(id, func(t *testing.T) {
			srv, stand := llmtest.NewResearchServer(t, llmtest.ResearchOptions{Kind: llmtest.ResearchNeverJSON, Translations: rig.set.Translations()})
			r := rig.research(t, srv, stand, rig.question(t, id))
			if r.rep.Mode != schemas.ResearchEvidenceOnly || r.code != 3 {
				t.Errorf("mode %s, exit %d; want evidence_only, exit 3", r.rep.Mode, r.code)
			}
			if strings.Contains(r.rep.Markdown, "found nothing") || len(r.rep.Sources) == 0 || r.score.CitedSentences == 0 {
				t.Fatalf("want cited passages, got %d sources, %d cited sentences:\n%s", len(r.rep.Sources), r.score.CitedSentences, r.rep.Markdown)
			}
			// A line that cites nothing frames the passages (how the notes
			// were searched, what a group answers); the notes' own words
			// never go uncited.
			for _, sec := range r.rep.Sections {
				for _, s := range sec.Sentences {
					if len(s.Sources) == 0 && rig.holdsNoteSentence(s.Text) {
						t.Errorf("section %q: a passage of the notes without a citation: %q", sec.Title, s.Text)
					}
				}
			}
			if !strings.HasPrefix(strings.Join(r.rep.Reasons, "\n"), "synthesis_failed: ") {
				t.Errorf("reasons %q: want synthesis_failed first", r.rep.Reasons)
			}
			if tc.disagreements && (r.score.Planted == 0 || r.score.Reported != r.score.Planted) {
				t.Errorf("%d of %d planted disagreements in the report's disagreements with both sides cited; missing %q",
					r.score.Reported, r.score.Planted, r.score.Missing)
			}
			for _, s := range r.rep.Disagreements {
				if len(s.Sides) != 2 || len(s.Sides[0].Sources) == 0 || len(s.Sides[1].Sources) == 0 || s.Sides[0].Updated == "" ||
					!s.Sides[1].Newer || s.Sides[0].Newer {
					t.Errorf("disagreement %q: want two sides, each cited and dated, the second the newer: %+v", s.Text, s.Sides)
				}
			}
			if r.score.StatedSentences != r.score.CitedSentences {
				t.Errorf("%d of %d passages stated by their cited blocks; not: %q", r.score.StatedSentences, r.score.CitedSentences, r.score.NotStated)
			}
			why := strings.Join(r.rep.Reasons, "\n")
			if why == "" || strings.Contains(why, "no_llm_provider") {
				t.Errorf("reasons %q: want why the model's replies were not used", r.rep.Reasons)
			}
			for _, l := range stand.Labels() {
				if l.Label != llmtest.RLabelMalformed && l.Label != llmtest.RLabelWrongShape {
					t.Errorf("the stand-in answered a %s call in the shape asked: %+v", l.Step, l)
				}
			}
		})
	}
}

// The same through 'exocortex up': the running system's research stages,
// with the never-JSON model as its provider, give the evidence-only report
// with the passages, both Aurora disagreements side by side and the reason,
// and the CLI attached to it exits 3.
func TestAModelThatNeverReturnsValidJSONGivesTheEvidenceThroughUp(t *testing.T) {
	t.Parallel()
	rig := newDisagreeRig(t)
	srv, stand := llmtest.NewResearchServer(t, llmtest.ResearchOptions{Kind: llmtest.ResearchNeverJSON, Translations: rig.set.Translations()})
	startUp(t, rig.data, []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="}, "--no-models")
	r := rig.research(t, srv, stand, rig.question(t, "rd-en-03"))
	if !strings.Contains(r.stderr, "plan ready") || r.score.Calls == 0 {
		t.Fatalf("the research did not run in up with the stand-in (%d calls):\n%s", r.score.Calls, r.stderr)
	}
	if r.rep.Mode != schemas.ResearchEvidenceOnly || r.code != 3 || !strings.HasPrefix(strings.Join(r.rep.Reasons, "\n"), "synthesis_failed: ") {
		t.Errorf("mode %s, exit %d, reasons %q; want evidence_only, exit 3, synthesis_failed first", r.rep.Mode, r.code, r.rep.Reasons)
	}
	if strings.Contains(r.rep.Markdown, "found nothing") || r.score.CitedSentences == 0 || r.score.StatedSentences != r.score.CitedSentences {
		t.Errorf("%d of %d cited passages stated by their blocks:\n%s", r.score.StatedSentences, r.score.CitedSentences, r.rep.Markdown)
	}
	if r.score.Planted == 0 || r.score.Reported != r.score.Planted {
		t.Errorf("%d of %d planted disagreements reported with both sides cited; missing %q", r.score.Reported, r.score.Planted, r.score.Missing)
	}
}

// eval --research --scripted KIND runs the six questions of the research
// set through the research pipeline and prints the figures of the issue
// under their JSON names; a bad kind is refused before any work.
func TestEvalResearchScriptedPrintsTheFiguresOfEveryQuestion(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	env := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}
	out, errOut, err := exoEnv(t, env, "eval", "--research", "--no-models", "--scripted", "stumbling", disagreeSet)
	if err != nil {
		t.Fatalf("eval --research: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("eval --research --no-models --scripted stumbling %s:\n%s", disagreeSet, out)
	for _, name := range []string{"report_sentence_precision", "disagreements_reported", "changed_facts_in_report", "repeated_facts", "calls_per_research"} {
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("no %s row:\n%s", name, out)
		}
	}
	for _, id := range []string{"rd-en-01", "rd-ru-01", "rd-en-02", "rd-ru-02", "rd-en-03", "rd-en-04"} {
		if !strings.Contains(out, "  "+id+" ") {
			t.Errorf("no line for question %s:\n%s", id, out)
		}
	}
	js, _, err := exoEnv(t, env, "eval", "--research", "--no-models", "--scripted", "faithful", "--json", disagreeSet)
	var sum eval.ResearchSummary
	if err != nil || json.Unmarshal([]byte(js), &sum) != nil || len(sum.Questions) != 6 || sum.CitedSentences == 0 || sum.CallsPerResearch == 0 {
		t.Fatalf("eval --research --json: %v\n%s", err, js)
	}
	if sum.Precision < 0.99 || sum.ChangedFacts != 0 {
		t.Errorf("a faithful stand-in: precision %.4f, %d changed facts; want 1 and 0", sum.Precision, sum.ChangedFacts)
	}
	if _, errOut, err := exoEnv(t, env, "eval", "--research", "--scripted", "sloppy", disagreeSet); err == nil || !strings.Contains(errOut, "stumbling") {
		t.Errorf("a bad kind: %v\n%s", err, errOut)
	}
}
