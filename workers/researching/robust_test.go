package researching_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	rs "github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/researching"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// The kinds of research request, by their prompts' markers.
const (
	kindPlan   = "plan"
	kindFacts  = "facts"
	kindDraft  = "draft"
	kindReport = "report"
)

var docOpen = regexp.MustCompile(`<document id="([^"]*)"`)

// shaper answers with next, except where bad says to answer otherwise: it
// is asked with the request's kind, how many requests of that kind came
// before (retries included) and the request's last user message. next
// never sees the turns that ask again for JSON (a scripted responder reads
// the last user message as its prompt).
type shaper struct {
	next llmtest.Responder
	bad  func(kind string, before int, user string) (string, bool)

	mu    sync.Mutex
	count map[string]int
	asked int // requests that asked again with the parse error
}

func newShaper(next llmtest.Responder, bad func(kind string, before int, user string) (string, bool)) *shaper {
	return &shaper{next: next, bad: bad, count: map[string]int{}}
}

func (s *shaper) respond(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
	var system, user string
	clean := body
	clean.Messages = nil
	retry := false
	for _, m := range body.Messages {
		switch {
		case m.Role == "system":
			system += m.Content
		case m.Role == "assistant":
			continue
		case m.Role == "user" && strings.HasPrefix(m.Content, "Your reply was not valid JSON: "):
			retry = true
			continue
		case m.Role == "user":
			user = m.Content
		}
		clean.Messages = append(clean.Messages, m)
	}
	kind := ""
	switch {
	case strings.HasPrefix(system, rs.PlanMarker):
		kind = kindPlan
	case strings.HasPrefix(system, rs.FactsMarker):
		kind = kindFacts
	case strings.HasPrefix(system, rs.DraftMarker):
		kind = kindDraft
	case strings.HasPrefix(system, rs.ReportMarker):
		kind = kindReport
	}
	s.mu.Lock()
	before := s.count[kind]
	s.count[kind]++
	if retry {
		s.asked++
	}
	s.mu.Unlock()
	if s.bad != nil {
		if text, ok := s.bad(kind, before, user); ok {
			return text, nil, true
		}
	}
	return s.next(clean)
}

func (s *shaper) counts() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.count {
		out[k] = v
	}
	return out, s.asked
}

// Replies no repair can read.
const (
	proseEN = "Sure! I looked at everything carefully and I think the notes answer it well."
	proseRU = "Конечно! Я всё внимательно прочитал, и заметки хорошо отвечают на вопрос."
)

// fullRig runs the four research stages (plan, investigate, draft,
// report) on an embedded JetStream server over indexed notes, with the
// fake provider answering through a shaper.
type fullRig struct {
	t   *testing.T
	b   *bus.Bus
	st  *store.Store
	srv *llmtest.Server
	sh  *shaper

	mu    sync.Mutex
	tasks []*schemas.ResearchTask
}

func newFullRig(t *testing.T, notes map[string]string, sh *shaper, draft rs.DraftConfig) *fullRig {
	t.Helper()
	specs := append(researching.PlanSpecs(), researching.DraftReportSpecs()...)
	collect := bus.StageSpec{Name: "collect_tasks", Stream: stage.StreamResearch, Filters: []string{schemas.SubjectResearchTask}}
	r := &fullRig{t: t, b: stagetest.New(t, append(specs, collect)...), st: invIndexNotes(t, notes), sh: sh}
	var router *llm.Router
	if sh != nil {
		r.srv = llmtest.New(t)
		r.srv.SetResponder(sh.respond)
		router = invRouter(t, r.srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	state, err := r.b.KV(ctx, stage.BucketResearch)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := r.b.KV(ctx, stage.BucketReports)
	if err != nil {
		t.Fatal(err)
	}
	retriever := &retrieval.Retriever{Index: r.st}
	inv, err := researching.NewInvestigate(researching.InvestigateDeps{Router: router, Retriever: retriever, Docs: r.st,
		Analyzer: r.st.Analyzer(), State: state})
	if err != nil {
		t.Fatal(err)
	}
	dr, err := researching.NewDraft(rs.DraftDeps{Router: router, State: state, Config: draft})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := researching.NewReport(rs.ReportDeps{Router: router, Analyzer: r.st.Analyzer(), Blocks: rs.StoreBlocks{Store: r.st}, Reports: reports})
	if err != nil {
		t.Fatal(err)
	}
	handlers := map[string]bus.Handler{
		researching.StagePlan:        researching.NewPlan(researching.PlanDeps{Router: router, Retriever: retriever}),
		researching.StageInvestigate: inv, researching.StageDraft: dr, researching.StageReport: rep,
		collect.Name: bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
			task, err := bus.Decode[*schemas.ResearchTask](m)
			if err != nil {
				return nil, err
			}
			r.mu.Lock()
			r.tasks = append(r.tasks, task)
			r.mu.Unlock()
			return nil, nil
		}),
	}
	var wg sync.WaitGroup
	for _, spec := range append(specs, collect) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.b.RunStage(ctx, spec, handlers[spec.Name], bus.RunOptions{Workers: 2, Batch: 1,
				NakBase: 20 * time.Millisecond, NakMax: 100 * time.Millisecond}); err != nil {
				t.Errorf("stage %s: %v", spec.Name, err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r
}

// run asks a research and waits for its report.
func (r *fullRig) run(id, question string, budget schemas.ResearchBudget) *schemas.ResearchReport {
	r.t.Helper()
	ch := make(chan *nats.Msg, 4)
	sub, err := r.b.NC.ChanSubscribe(schemas.SubjectResearchReport, ch)
	if err != nil {
		r.t.Fatal(err)
	}
	defer sub.Unsubscribe()
	req := &schemas.ResearchRequested{ResearchID: id, Question: question, Budget: budget, RequestedAt: time.Now().UTC()}
	if _, err := r.b.Publish(context.Background(), req, "trace-"+id); err != nil {
		r.t.Fatal(err)
	}
	for deadline := time.After(60 * time.Second); ; {
		select {
		case m := <-ch:
			var rep schemas.ResearchReport
			if err := json.Unmarshal(m.Data, &rep); err != nil {
				r.t.Fatal(err)
			}
			if rep.ResearchID == id {
				return &rep
			}
		case <-deadline:
			r.t.Fatalf("no report of %s within 60s", id)
		}
	}
}

func (r *fullRig) taskQuestions(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, t := range r.tasks {
		if t.ResearchID == id && !slices.Contains(out, t.TaskID+" "+t.Question) {
			out = append(out, t.TaskID+" "+t.Question)
		}
	}
	sort.Strings(out)
	return out
}

func factTexts(rep *schemas.ResearchReport) []string {
	var out []string
	for _, f := range rep.Facts {
		out = append(out, f.Text)
	}
	sort.Strings(out)
	return out
}

func TestAPlanReplyMalformedOnceIsAskedAgainWithTheErrorAndGivesTheSameTasks(t *testing.T) {
	for _, tc := range []struct{ name, question, prose string }{
		{"English", "What do my notes say about ravens and kettles?", proseEN},
		{"Russian", "Что в моих заметках сказано о воронах и чайниках?", proseRU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := func(bad func(string, int, string) (string, bool)) ([]*schemas.ResearchTask, *shaper, *llmtest.Server) {
				srv := llmtest.New(t)
				sh := newShaper(llmtest.PlanFactsResponder(llmtest.PlanFactsOptions{}), bad)
				srv.SetResponder(sh.respond)
				return planTasks(t, researching.PlanDeps{Router: invRouter(t, srv)}, &schemas.ResearchRequested{ResearchID: "r", Question: tc.question}), sh, srv
			}
			clean, _, _ := plan(nil)
			got, sh, srv := plan(func(kind string, before int, _ string) (string, bool) {
				return tc.prose, kind == kindPlan && before == 0
			})
			if len(clean) < 3 || len(got) != len(clean) {
				t.Fatalf("%d tasks after a malformed reply, %d in a clean run", len(got), len(clean))
			}
			for i := range got {
				if got[i].Question != clean[i].Question || got[i].Why != clean[i].Why || got[i].PlanCalls != 2 {
					t.Errorf("task %d: %q (plan calls %d); want %q as in the clean run, 2 plan calls", i, got[i].Question, got[i].PlanCalls, clean[i].Question)
				}
			}
			reqs := srv.Requests()
			last := reqs[len(reqs)-1].Body.Messages
			if _, asked := sh.counts(); asked != 1 || len(reqs) != 2 || last[len(last)-2].Role != "assistant" || last[len(last)-2].Content != tc.prose ||
				!strings.HasPrefix(last[len(last)-1].Content, "Your reply was not valid JSON: the reply holds no JSON object. Reply with the JSON object only.") {
				t.Errorf("%d requests; the second should echo the bad reply and ask again with the parse error: %+v", len(reqs), last)
			}
		})
	}
}

func TestAPlanReplyThatNeverParsesIsBuiltFromTheQuestionAndTheBestDocumentsHeadings(t *testing.T) {
	st := invIndexNotes(t, crowNotes)
	srv := llmtest.New(t)
	srv.SetAnswer(proseEN)
	var progress []*schemas.ResearchProgress
	const q = "What do crows remember and how do crows use tools?"
	tasks := planTasks(t, researching.PlanDeps{Router: invRouter(t, srv), Retriever: &retrieval.Retriever{Index: st},
		Progress: func(p *schemas.ResearchProgress) { progress = append(progress, p) }},
		&schemas.ResearchRequested{ResearchID: "r-fb", Question: q, Budget: schemas.ResearchBudget{SubQuestions: 4}})
	var got []string
	for _, task := range tasks {
		got = append(got, task.Question)
		if task.PlanCalls != 3 || task.Mode != schemas.ResearchSynthesis || task.Of != len(tasks) {
			t.Errorf("task %+v: want 3 plan calls (two asked again), synthesis", task)
		}
	}
	want := []string{q, "Crows and tools: " + q, "Field notes on crows: " + q}
	if !slices.Equal(got, want) {
		t.Errorf("tasks %q; want the question, then one per heading of the best documents: %q", got, want)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d plan requests; want 3 (asked again twice)", n)
	}
	if len(progress) != 1 || !strings.Contains(progress[0].Message, "plan_fallback: the plan reply is not the JSON asked for after 3 attempts") ||
		!strings.Contains(progress[0].Message, "planned without the model") {
		t.Errorf("progress %+v; want the reason", progress)
	}
}

func TestAFactReplyMalformedOnceGivesTheSameReportFactsAsACleanRun(t *testing.T) {
	topics := invTopics[:2]
	run := func(bad func(string, int, string) (string, bool)) (*schemas.ResearchReport, *shaper, *fullRig) {
		sh := newShaper(llmtest.Chain(llmtest.PlanFactsResponder(llmtest.PlanFactsOptions{SubQuestions: subQuestions(topics)}),
			llmtest.DraftReportResponder(llmtest.DraftReportOptions{})), bad)
		rig := newFullRig(t, topicNotes(topics, 2), sh, rs.DraftConfig{})
		return rig.run("r-once", "What do my notes say about ravens and kettles?", schemas.ResearchBudget{}), sh, rig
	}
	clean, _, cleanRig := run(nil)
	// The first fact step's reply is prose; the second one's is JSON with
	// single quotes and trailing commas, which is repaired without asking.
	got, sh, rig := run(func(kind string, before int, user string) (string, bool) {
		if kind != kindFacts {
			return "", false
		}
		switch before {
		case 0:
			return proseEN, true
		}
		return "", false
	})
	if clean.Mode != schemas.ResearchSynthesis || len(clean.Facts) < 4 {
		t.Fatalf("clean run: mode %s, %d facts, reasons %q", clean.Mode, len(clean.Facts), clean.Reasons)
	}
	if got.Mode != schemas.ResearchSynthesis || !slices.Equal(factTexts(got), factTexts(clean)) {
		t.Errorf("facts after one malformed reply:\n%q\nclean run:\n%q", factTexts(got), factTexts(clean))
	}
	if !slices.Equal(rig.taskQuestions("r-once"), cleanRig.taskQuestions("r-once")) {
		t.Errorf("tasks %q; clean run %q", rig.taskQuestions("r-once"), cleanRig.taskQuestions("r-once"))
	}
	if _, asked := sh.counts(); asked != 1 || got.LLMCalls != clean.LLMCalls+1 || got.LLMCalls != len(rig.srv.Requests()) {
		t.Errorf("asked again %d times; llm_calls %d, clean %d, provider requests %d; want once, one call more, every request counted",
			asked, got.LLMCalls, clean.LLMCalls, len(rig.srv.Requests()))
	}
	if rs.Fallback(got) != "" {
		t.Errorf("the report is a fallback: %q", rs.Fallback(got))
	}
	t.Logf("clean run: %d facts, %d calls; one fact reply malformed: %d facts, %d calls", len(clean.Facts), clean.LLMCalls, len(got.Facts), got.LLMCalls)
}

func TestARepairableFactReplyNeedsNoSecondCall(t *testing.T) {
	for _, tc := range []struct{ name, shape string }{
		{"single quotes and trailing commas", "single"},
		{"a reply cut off before its closing brackets", "cut"},
		{"words around a fence", "prose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: []string{"How do crows use tools and what do crows remember?"}})
			var clean []schemas.Fact
			st := invIndexNotes(t, crowNotes)
			for _, shaped := range []bool{false, true} {
				sh := newShaper(pf.Responder(), nil)
				if shaped {
					sh.next = func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
						reply, f, ok := pf.Responder()(body)
						if !strings.Contains(body.Messages[0].Content, rs.FactsMarker) {
							return reply, f, ok
						}
						switch tc.shape {
						case "single":
							reply = strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(reply, `"`, `'`), "]", ",]"), "}", ",}")
						case "cut":
							reply = strings.TrimRight(reply, "]}")
						case "prose":
							reply = "Вот что добавляет документ:\n```json\n" + reply + "\n```\nГотово."
						}
						return reply, f, ok
					}
				}
				srv := llmtest.New(t)
				srv.SetResponder(sh.respond)
				h, err := researching.NewInvestigate(researching.InvestigateDeps{Router: invRouter(t, srv), Retriever: &retrieval.Retriever{Index: st},
					Docs: st, Analyzer: st.Analyzer(), State: bus.NewMemKV()})
				if err != nil {
					t.Fatal(err)
				}
				task := &schemas.ResearchTask{ResearchID: "r", TaskID: "t1", Of: 1, Question: "How do crows use tools and what do crows remember?",
					Lang: "en", Mode: schemas.ResearchSynthesis, Original: "Crows?"}
				evs, err := h.Handle(context.Background(), invMsg(t, task))
				if err != nil {
					t.Fatal(err)
				}
				f := evs[0].(*schemas.ResearchFinding)
				if _, asked := sh.counts(); asked != 0 || f.LLMCalls != len(f.DocsRead) {
					t.Errorf("asked again %d times, %d calls for %d documents; want one call each", asked, f.LLMCalls, len(f.DocsRead))
				}
				if !shaped {
					clean = f.Facts
					continue
				}
				if len(f.Facts) == 0 || len(f.Facts) != len(clean) {
					t.Fatalf("%d facts from repaired replies, %d from clean ones", len(f.Facts), len(clean))
				}
				for i := range clean {
					if f.Facts[i].Text != clean[i].Text || !slices.Equal(f.Facts[i].BlockIDs, clean[i].BlockIDs) {
						t.Errorf("fact %d: %q %v; clean %q %v", i, f.Facts[i].Text, f.Facts[i].BlockIDs, clean[i].Text, clean[i].BlockIDs)
					}
				}
			}
		})
	}
}

func TestAFactStepThatNeverParsesIsRedeliveredThenItsDocumentSkippedWithTheReason(t *testing.T) {
	topics := invTopics[:1]
	var mu sync.Mutex
	var badDoc string
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: subQuestions(topics)})
	sh := newShaper(pf.Responder(), func(kind string, _ int, user string) (string, bool) {
		if kind != kindFacts {
			return "", false
		}
		m := docOpen.FindStringSubmatch(user)
		mu.Lock()
		defer mu.Unlock()
		if badDoc == "" {
			badDoc = m[1]
		}
		return proseRU, m[1] == badDoc
	})
	e := newInvEnv(t, topicNotes(topics, 3), pf, 30*time.Second)
	e.srv.SetResponder(sh.respond)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	e.request("r-skip", "What do my notes say about ravens?", schemas.ResearchBudget{})
	f := e.await(1, 30*time.Second)["t1"]
	reasons := strings.Join(f.Reasons, "\n")
	if f.Status != schemas.TaskDone || len(f.DocsRead) != 3 || len(f.Facts) == 0 ||
		!strings.Contains(reasons, "fact_step_skipped: document "+badDoc) || !strings.Contains(reasons, "(2 deliveries)") {
		t.Fatalf("finding %s, docs %v, %d facts, reasons %q; want done with the unreadable document skipped and named", f.Status, f.DocsRead, len(f.Facts), f.Reasons)
	}
	counts, asked := sh.counts()
	// The bad document: three calls in each of two deliveries; the others one.
	if counts[kindFacts] != 6+2 || asked != 4 || f.LLMCalls != 8 {
		t.Errorf("fact step requests %d (asked again %d), finding llm_calls %d; want 8 (6 for the bad document), 4, 8", counts[kindFacts], asked, f.LLMCalls)
	}
	for _, fact := range f.Facts {
		if fact.DocID == badDoc {
			t.Errorf("a fact from the skipped document: %+v", fact)
		}
	}
	// Evidence in case the synthesis fails: the best passages of every
	// document read (at most two each, as an evidence_only task keeps).
	perDoc := map[string]int{}
	for _, e := range f.Evidence {
		perDoc[e.DocID]++
	}
	if len(perDoc) != 3 || len(f.Evidence) > 2*3 {
		t.Errorf("%d evidence passages from %d documents; want one or two of each of the 3 documents read", len(f.Evidence), len(perDoc))
	}
}

func TestUnreadableFactRepliesCountInTheCallBudget(t *testing.T) {
	topics := invTopics[:2]
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: subQuestions(topics)})
	sh := newShaper(pf.Responder(), func(kind string, _ int, _ string) (string, bool) { return proseEN, kind == kindFacts })
	e := newInvEnv(t, topicNotes(topics, 3), pf, 30*time.Second)
	e.srv.SetResponder(sh.respond)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	// 3 calls kept for plan, draft and report; 4 shared by 2 tasks.
	e.request("r-budget-bad", "What do my notes say about ravens and kettles?", schemas.ResearchBudget{LLMCalls: 7})
	total := 0
	for _, f := range e.await(2, 30*time.Second) {
		total += f.LLMCalls
		if f.LLMCalls != 2 || f.Status != schemas.TaskBudget || !strings.Contains(strings.Join(f.Reasons, "\n"), "fact_step_skipped: ") {
			t.Errorf("%s: %s, %d calls, reasons %q; want its share of 2 calls spent on one document's tries, then budget", f.Question, f.Status, f.LLMCalls, f.Reasons)
		}
	}
	if counts, _ := sh.counts(); counts[kindFacts] != total {
		t.Errorf("%d fact step requests, %d counted", counts[kindFacts], total)
	}
}

func TestAModelThatNeverAnswersInJSONGivesAnEvidenceOnlyReportWithCitationsAndTheReason(t *testing.T) {
	for _, tc := range []struct{ name, question, prose, lead string }{
		{"English", "What do crows remember about people?", proseEN, "No synthesis was written: the language model's replies were not the JSON asked for"},
		{"Russian", "Что вороны помнят о людях?", proseRU, "Синтез не написан: ответы языковой модели были не в нужном формате JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes := map[string]string{
				"crows.md":  crowNotes["crows-a.md"],
				"вороны.md": "# Вороны и люди\n\nВороны помнят лица людей, которые им угрожали, несколько лет подряд.\n\nВороны делают крючки из веточек.\n",
				"kettle.md": crowNotes["kettle.md"],
			}
			sh := newShaper(nil, func(string, int, string) (string, bool) { return tc.prose, true })
			rig := newFullRig(t, notes, sh, rs.DraftConfig{})
			rep := rig.run("r-never", tc.question, schemas.ResearchBudget{})
			if rep.Mode != schemas.ResearchEvidenceOnly || len(rep.Reasons) == 0 || !strings.HasPrefix(rep.Reasons[0], "synthesis_failed: the model's fact replies could not be read") {
				t.Fatalf("mode %s, reasons %q; want evidence_only, synthesis_failed first", rep.Mode, rep.Reasons)
			}
			if strings.Contains(rep.Markdown, "found nothing") || strings.Contains(rep.Markdown, "не нашло") || !strings.Contains(rep.Markdown, tc.lead) {
				t.Errorf("the Markdown should say why, not that nothing was found:\n%s", rep.Markdown)
			}
			cited := 0
			for _, sec := range rep.Sections {
				for _, s := range sec.Sentences {
					if len(s.Sources) > 0 {
						cited++
					}
				}
			}
			if cited == 0 || len(rep.Sources) == 0 || !strings.Contains(rep.Markdown, "[1]") {
				t.Errorf("no cited passage:\n%s", rep.Markdown)
			}
			if rs.Fallback(rep) != rep.Reasons[0] {
				t.Errorf("Fallback(rep) = %q; want the synthesis_failed reason", rs.Fallback(rep))
			}
			if n := len(rig.srv.Requests()); rep.LLMCalls != n || n == 0 {
				t.Errorf("report llm_calls %d, provider requests %d; want every call counted", rep.LLMCalls, n)
			}
			t.Logf("%d calls; the report:\n%s", rep.LLMCalls, rep.Markdown)
		})
	}
}

// gapNotes: ravens and kettles are planned; violins only a gap finds.
func gapNotes() map[string]string {
	notes := topicNotes(invTopics[:2], 2)
	for k, v := range topicNotes([]string{"violins"}, 2) {
		notes[k] = v
	}
	return notes
}

// withGaps adds gaps to the first outline the next responder writes.
func withGaps(gaps ...string) func(string, int, string) (string, bool) {
	return func(kind string, before int, user string) (string, bool) {
		if kind != kindDraft || before > 0 {
			return "", false
		}
		raw, _, _ := llmtest.DraftReportResponder(llmtest.DraftReportOptions{})(llmtest.ChatBody{Messages: []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{{Role: "system", Content: rs.DraftMarker}, {Role: "user", Content: user}}})
		var o map[string]any
		_ = json.Unmarshal([]byte(raw), &o)
		o["gaps"] = gaps
		b, _ := json.Marshal(o)
		return "Outline:\n```json\n" + string(b) + "\n```", true
	}
}

func TestGapsTheOutlineNamesAreResearchedAgainAndTheirFactsReachTheReport(t *testing.T) {
	const gap = "What do my notes say about violins?"
	sh := newShaper(llmtest.Chain(llmtest.PlanFactsResponder(llmtest.PlanFactsOptions{SubQuestions: subQuestions(invTopics[:2])}),
		llmtest.DraftReportResponder(llmtest.DraftReportOptions{})), withGaps(gap, "What do my notes say about ravens?", ""))
	rig := newFullRig(t, gapNotes(), sh, rs.DraftConfig{})
	rep := rig.run("r-gaps", "What do my notes say about ravens, kettles and violins?", schemas.ResearchBudget{})
	tasks := rig.taskQuestions("r-gaps")
	if !slices.Equal(tasks, []string{"g1 " + gap, "t1 What do my notes say about ravens?", "t2 What do my notes say about kettles?"}) {
		t.Fatalf("tasks %q; want the plan's two and one follow-up task (a gap already asked is not asked again)", tasks)
	}
	violins := 0
	for _, f := range rep.Facts {
		if strings.Contains(f.Text, "violins") {
			violins++
		}
	}
	counts, _ := sh.counts()
	if rep.Mode != schemas.ResearchSynthesis || rep.Tasks != 3 || violins == 0 || counts[kindDraft] != 1 {
		t.Errorf("mode %s, %d tasks, %d facts on violins, %d outline calls; want synthesis, 3 tasks, the gap's facts, one outline",
			rep.Mode, rep.Tasks, violins, counts[kindDraft])
	}
	if !slices.ContainsFunc(rep.Reasons, func(r string) bool { return strings.HasPrefix(r, "gaps_researched: the outline named 1 gaps") }) {
		t.Errorf("reasons %q; want the gap named", rep.Reasons)
	}
	if rep.LLMCalls != len(rig.srv.Requests()) {
		t.Errorf("llm_calls %d, provider requests %d", rep.LLMCalls, len(rig.srv.Requests()))
	}
	t.Logf("%d tasks (1 follow-up), %d facts (%d on violins), %d calls", rep.Tasks, len(rep.Facts), violins, rep.LLMCalls)
}

func TestGapsAreNotResearchedWhenTheCallBudgetIsSpentOrTheyAreTurnedOff(t *testing.T) {
	const gap = "What do my notes say about violins?"
	for _, tc := range []struct {
		name   string
		budget schemas.ResearchBudget
		cfg    rs.DraftConfig
		reason string
	}{
		// 1 plan + 2 x 2 fact steps + 1 outline = 6 of 7: one left, for the report.
		{"the budget leaves a call for the report only", schemas.ResearchBudget{LLMCalls: 7, DocsPerTask: 2}, rs.DraftConfig{}, "gaps_skipped: 1 follow-up questions, but the research's provider calls are spent"},
		{"gaps turned off", schemas.ResearchBudget{}, rs.DraftConfig{Gaps: -1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := newShaper(llmtest.Chain(llmtest.PlanFactsResponder(llmtest.PlanFactsOptions{SubQuestions: subQuestions(invTopics[:2])}),
				llmtest.DraftReportResponder(llmtest.DraftReportOptions{})), withGaps(gap))
			rig := newFullRig(t, gapNotes(), sh, tc.cfg)
			rep := rig.run("r-nogap", "What do my notes say about ravens, kettles and violins?", tc.budget)
			if tasks := rig.taskQuestions("r-nogap"); len(tasks) != 2 || rep.Tasks != 2 {
				t.Errorf("tasks %q; want the plan's two only", tasks)
			}
			if tc.reason != "" && !slices.ContainsFunc(rep.Reasons, func(r string) bool { return strings.HasPrefix(r, tc.reason) }) {
				t.Errorf("reasons %q; want %q", rep.Reasons, tc.reason)
			}
			if tc.budget.LLMCalls > 0 && rep.LLMCalls > tc.budget.LLMCalls {
				t.Errorf("llm_calls %d over the budget %d", rep.LLMCalls, tc.budget.LLMCalls)
			}
		})
	}
}

func TestARedeliveredFindingThatAskedForGapsPublishesTheSameTasksWithoutAskingAgain(t *testing.T) {
	srv := llmtest.New(t)
	sh := newShaper(llmtest.DraftReportResponder(llmtest.DraftReportOptions{}), withGaps("Where do crows sleep?", "Что едят вороны?"))
	srv.SetResponder(sh.respond)
	dr, err := rs.NewDrafter(rs.DraftDeps{Router: invRouter(t, srv), State: bus.NewMemKV()})
	if err != nil {
		t.Fatal(err)
	}
	f := &schemas.ResearchFinding{ResearchID: "r", TaskID: "t1", Of: 1, Question: "How do crows use tools?", Original: "Crows?", Lang: "en",
		Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone, LLMCalls: 2, PlanCalls: 1,
		Budget: schemas.ResearchBudget{LLMCalls: 20}, Deadline: time.Now().Add(time.Hour),
		Facts: []schemas.Fact{{ID: "f1", Text: "Crows use sticks.", BlockIDs: []string{"b1"}}}}
	var runs [][]schemas.Event
	for range 2 { // the second is the redelivery after a crash before the ack
		evs, err := dr.Next(context.Background(), f, false)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, evs)
	}
	for i, evs := range runs {
		var got []string
		for _, ev := range evs {
			task, ok := ev.(*schemas.ResearchTask)
			if !ok {
				t.Fatalf("run %d emitted %T", i, ev)
			}
			// 20 calls - 1 plan - 2 facts - 1 outline - 1 report = 15, shared by two.
			if !task.Gap || task.Of != 3 || task.Calls != 7 || task.Validate() != nil || !task.Deadline.Equal(f.Deadline) {
				t.Errorf("run %d: task %+v", i, task)
			}
			got = append(got, task.TaskID+" "+task.Question+" "+task.MsgID())
		}
		want := []string{"g1 Where do crows sleep? research-task:r:g1", "g2 Что едят вороны? research-task:r:g2"}
		if !slices.Equal(got, want) {
			t.Errorf("run %d: tasks %q; want %q", i, got, want)
		}
	}
	if counts, _ := sh.counts(); counts[kindDraft] != 1 {
		t.Errorf("%d outline calls; want one (the redelivery reads the record)", counts[kindDraft])
	}
	// The follow-up findings complete the research: the draft, with the
	// outline's call counted once.
	var draft *schemas.ResearchDraft
	for i, q := range []string{"Where do crows sleep?", "Что едят вороны?"} {
		g := *f
		g.TaskID, g.Index, g.Of, g.Question, g.Gap, g.LLMCalls = []string{"g1", "g2"}[i], 1+i, 3, q, true, 1
		evs, err := dr.Next(context.Background(), &g, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 {
			draft, _ = evs[0].(*schemas.ResearchDraft)
		}
	}
	if draft == nil || len(draft.Findings) != 3 || draft.LLMCalls != 1+2+1+1+1 || !strings.Contains(draft.Draft, "gaps") {
		t.Fatalf("draft %+v; want three findings and 6 calls (plan, 2 + 1 + 1 fact steps, outline)", draft)
	}
}
