package llmtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

// body is the chat request of msgs, as the server decodes it.
func body(t *testing.T, msgs []llm.Message) llmtest.ChatBody {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"messages": msgs})
	var b llmtest.ChatBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// doc is a document of one-block contexts: id -> text, in order.
func doc(id string, blocks ...[2]string) research.Document {
	d := research.Document{DocID: id, Title: id}
	for _, b := range blocks {
		d.Contexts = append(d.Contexts, schemas.Context{Passage: schemas.Passage{DocID: id, BlockID: b[0], BlockIDs: []string{b[0]}, Text: b[1]}})
	}
	return d
}

var mixedDoc = doc("d1",
	[2]string{"b1", "The Aurora mobile app launch is planned for 15 March 2024."},
	[2]string{"b2", "The nightly backup of the Aurora server runs at 02:00."},
	[2]string{"b3", "For the Aurora team pancakes, mix flour, milk and water in the ratio 1:2:2."})

const mixedSub = "What do the notes say about the Aurora launch, the Aurora backup and the Aurora pancakes?"

// factStep asks the stand-in for one fact step and reads its reply.
func factStep(t *testing.T, r *llmtest.Research, sub string, known []schemas.Fact, d research.Document) research.FactStep {
	t.Helper()
	reply, fault, ok := r.Responder()(body(t, research.FactMessages(sub, sub, "en", known, d)))
	if !ok || fault != nil {
		t.Fatalf("the stand-in did not answer the fact step (ok %v, fault %+v)", ok, fault)
	}
	step, err := research.ParseFactStep(reply)
	if err != nil {
		t.Fatalf("fact step reply %q: %v", reply, err)
	}
	return step
}

func TestResearchKindsAreParsedByTheirNames(t *testing.T) {
	for _, name := range llmtest.ResearchKindNames() {
		k, err := llmtest.ParseResearchKind(name)
		if err != nil || k.String() != name {
			t.Errorf("%s: %v %v", name, k, err)
		}
	}
	if k, err := llmtest.ParseResearchKind("Neighbor_Block"); err != nil || k != llmtest.ResearchNeighbourBlock {
		t.Errorf("Neighbor_Block: %v %v", k, err)
	}
	if _, err := llmtest.ParseResearchKind("sloppy"); err == nil || !strings.Contains(err.Error(), "stumbling") {
		t.Errorf("an unknown kind: %v, want the kinds listed", err)
	}
}

func TestTheResearchStandInLabelsEveryFactItAlters(t *testing.T) {
	type want struct{ label, text, cited string }
	cases := []struct {
		name string
		kind llmtest.ResearchKind
		want []want
	}{
		{"a faithful model copies each sentence and cites its block", llmtest.ResearchFaithful, []want{
			{"faithful", "The Aurora mobile app launch is planned for 15 March 2024.", "b1"},
			{"faithful", "The nightly backup of the Aurora server runs at 02:00.", "b2"},
			{"faithful", "For the Aurora team pancakes, mix flour, milk and water in the ratio 1:2:2.", "b3"}}},
		{"change-number changes a year to 2428, a time to 02:03 and a ratio to 1:2:5, citing the true block", llmtest.ResearchChangeNumber, []want{
			{"changed_year", "The Aurora mobile app launch is planned for 15 March 2428.", "b1"},
			{"changed_time", "The nightly backup of the Aurora server runs at 02:03.", "b2"},
			{"changed_ratio", "For the Aurora team pancakes, mix flour, milk and water in the ratio 1:2:5.", "b3"}}},
		{"neighbour-block cites the next block, or the one before the last", llmtest.ResearchNeighbourBlock, []want{
			{"neighbour_block", "The Aurora mobile app launch is planned for 15 March 2024.", "b2"},
			{"neighbour_block", "The nightly backup of the Aurora server runs at 02:00.", "b3"},
			{"neighbour_block", "For the Aurora team pancakes, mix flour, milk and water in the ratio 1:2:2.", "b2"}}},
		{"add-clause adds a condition no note states", llmtest.ResearchAddClause, []want{
			{"added_clause", "The Aurora mobile app launch is planned for 15 March 2024, ", "b1"},
			{"added_clause", "The nightly backup of the Aurora server runs at 02:00, ", "b2"},
			{"added_clause", "For the Aurora team pancakes, mix flour, milk and water in the ratio 1:2:2, ", "b3"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: tc.kind, Rate: 1})
			step := factStep(t, r, mixedSub, nil, mixedDoc)
			labels := r.Labels()
			if len(step.New) != len(tc.want) || len(labels) != len(tc.want) {
				t.Fatalf("%d new facts, %d labels, want %d: %+v", len(step.New), len(labels), len(tc.want), step.New)
			}
			for _, w := range tc.want {
				i := slices.IndexFunc(step.New, func(f research.StepFact) bool { return strings.HasPrefix(f.Text, w.text) })
				if i < 0 {
					t.Errorf("no fact %q in %+v", w.text, step.New)
					continue
				}
				f := step.New[i]
				l := labels[slices.IndexFunc(labels, func(l llmtest.ResearchLabel) bool { return l.Text == f.Text })]
				if l.Label != w.label || f.BlockIDs[0] != w.cited || l.CitedBlock != w.cited || l.Supported == llmtest.ChangedLabel(w.label) {
					t.Errorf("fact %q cites %v labelled %+v; want %s citing %s", f.Text, f.BlockIDs, l, w.label, w.cited)
				}
				if l.SourceSentence == "" || !strings.Contains(mixedDoc.Contexts[int(l.SourceBlock[1]-'1')].Text, l.SourceSentence) {
					t.Errorf("label %+v: its source sentence is not in its source block", l)
				}
				if llmtest.ChangedLabel(w.label) && (l.Changed == "" || !strings.Contains(f.Text, l.Changed)) {
					t.Errorf("label %+v: want the changed words named", l)
				}
			}
		})
	}
}

func TestAddClauseInRussianAddsARussianCondition(t *testing.T) {
	r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: llmtest.ResearchAddClause, Rate: 1})
	d := doc("d2", [2]string{"r1", "Резервное копирование домашнего сервера запускается каждую ночь в 02:00."})
	step := factStep(t, r, "Когда запускается резервное копирование домашнего сервера?", nil, d)
	if len(step.New) != 1 || !strings.HasPrefix(step.New[0].Text, "Резервное копирование домашнего сервера запускается каждую ночь в 02:00, ") ||
		!strings.Contains(step.New[0].Text, "но только") && !strings.Contains(step.New[0].Text, "кроме выходных") {
		t.Fatalf("facts %+v", step.New)
	}
}

func TestDuplicateRepeatsAFactVerbatimQuotedAndAfterAccordingTo(t *testing.T) {
	for _, tc := range []struct {
		name, sentence, according string
	}{
		{"in English", "The project budget for Aurora is 12,000 EUR.", "According to the note, the project budget for Aurora is 12,000 EUR."},
		{"in Russian", "Бюджет проекта Аврора составляет 12 000 евро.", "Согласно заметке, бюджет проекта Аврора составляет 12 000 евро."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: llmtest.ResearchDuplicate, Rate: 1})
			step := factStep(t, r, "Какой бюджет у проекта Аврора? What is the budget of project Aurora?", nil, doc("d", [2]string{"b1", tc.sentence}))
			var texts, labels []string
			for _, f := range step.New {
				texts = append(texts, f.Text)
			}
			for _, l := range r.Labels() {
				labels = append(labels, l.Label)
			}
			core := strings.TrimSuffix(tc.sentence, ".")
			if !slices.Equal(texts, []string{tc.sentence, tc.sentence, "«" + core + "»", tc.according}) ||
				!slices.Equal(labels, []string{"faithful", "duplicate_verbatim", "duplicate_quoted", "duplicate_according"}) {
				t.Errorf("facts %q labelled %q", texts, labels)
			}
		})
	}
}

func TestALaterNoteThatSaysOtherwiseIsFlaggedOnlyByTheContradictKind(t *testing.T) {
	known := []schemas.Fact{{ID: "f1", Certainty: "medium", Text: "The Aurora mobile app launch is planned for 15 March 2025."},
		{ID: "f2", Certainty: "medium", Text: "Maria leads the backend of the Aurora app."}}
	later := doc("d2",
		[2]string{"c1", "The Aurora mobile app launch is planned for 2 June 2025, after the payment provider review."},
		[2]string{"c2", "Maria leads the backend of the Aurora app, as before."})
	sub := "When does the Aurora mobile app launch and who leads the backend?"
	for _, tc := range []struct {
		name         string
		kind         llmtest.ResearchKind
		contradicted []string
	}{
		{"the contradict kind lists the known fact as contradicted and returns the other side", llmtest.ResearchContradict, []string{"f1"}},
		{"a stumbling model notices it too", llmtest.ResearchStumbling, []string{"f1"}},
		{"a faithful model returns the other side as a plain new fact", llmtest.ResearchFaithful, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: tc.kind})
			if tc.kind == llmtest.ResearchStumbling {
				// Its first fact step is malformed by design.
				r.Responder()(body(t, research.FactMessages(sub, sub, "en", known, later)))
			}
			step := factStep(t, r, sub, known, later)
			if !slices.Equal(step.Contradicted, tc.contradicted) {
				t.Errorf("contradicted %q, want %q", step.Contradicted, tc.contradicted)
			}
			if !slices.ContainsFunc(step.New, func(f research.StepFact) bool {
				return f.Text == later.Contexts[0].Text && f.BlockIDs[0] == "c1"
			}) {
				t.Errorf("new %+v: want the other side, cited to its block", step.New)
			}
			if len(step.Updated) != 1 || step.Updated[0].ID != "f2" || step.Updated[0].BlockIDs[0] != "c2" {
				t.Errorf("updated %+v: want f2 confirmed by c2", step.Updated)
			}
			i := slices.IndexFunc(r.Labels(), func(l llmtest.ResearchLabel) bool { return l.Label == llmtest.RLabelOtherSide })
			if i < 0 || r.Labels()[i].OfID != "f1" || !r.Labels()[i].Supported {
				t.Errorf("labels %+v: want the other side of f1 labelled", r.Labels())
			}
		})
	}
}

func TestMalformedOnceBreaksTheFirstPlanAndFactRepliesOnly(t *testing.T) {
	r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: llmtest.ResearchMalformedOnce})
	plan := body(t, research.PlanMessages("Where do my notes disagree about Aurora?", "en", 2, 4))
	facts := body(t, research.FactMessages(mixedSub, mixedSub, "en", nil, mixedDoc))
	for i, want := range []bool{false, true, true} {
		reply, _, _ := r.Responder()(plan)
		if got := len(research.ParsePlan(reply, 4)) > 0; got != want {
			t.Errorf("plan reply %d %q: parsed %v, want %v", i+1, reply, got, want)
		}
		reply, _, _ = r.Responder()(facts)
		if _, err := research.ParseFactStep(reply); (err == nil) != want {
			t.Errorf("fact reply %d %q: %v", i+1, reply, err)
		}
	}
	if n := len(slices.DeleteFunc(r.Labels(), func(l llmtest.ResearchLabel) bool { return l.Label != llmtest.RLabelMalformed })); n != 2 {
		t.Errorf("%d malformed labels, want 2", n)
	}
}

func TestNeverJSONAnswersEveryStepInTheWrongShape(t *testing.T) {
	r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: llmtest.ResearchNeverJSON})
	finding := schemas.ResearchFinding{Question: "Aurora?", Facts: []schemas.Fact{{ID: "f1", Text: "The Aurora launch is planned for 15 March 2025.", Certainty: "high"}}}
	steps := map[string]llmtest.ChatBody{
		"plan":  body(t, research.PlanMessages("When does Aurora launch?", "en", 2, 4)),
		"facts": body(t, research.FactMessages(mixedSub, mixedSub, "en", nil, mixedDoc)),
		"draft": body(t, research.DraftPrompt("When does Aurora launch?", "en", []schemas.ResearchFinding{finding})),
	}
	asked := map[string][]string{"plan": {"sub_questions"}, "facts": {"new", "updated", "contradicted"}, "draft": {"themes"}}
	for step, b := range steps {
		for i := 0; i < 3; i++ {
			reply, _, _ := r.Responder()(b)
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(reply), &obj) == nil {
				for _, k := range asked[step] {
					if _, ok := obj[k]; ok {
						t.Errorf("%s reply %d %q has the key %q asked for", step, i+1, reply, k)
					}
				}
			}
		}
	}
	for _, l := range r.Labels() {
		if l.Label != llmtest.RLabelMalformed && l.Label != llmtest.RLabelWrongShape || l.Reply == "" {
			t.Errorf("label %+v", l)
		}
	}
	if got := r.Calls(); got["plan"] != 3 || got["facts"] != 3 || got["draft"] != 3 {
		t.Errorf("calls %v", got)
	}
}

func TestStumblingIsTheSameForTheSameSeed(t *testing.T) {
	run := func(seed uint64) []string {
		r := llmtest.NewResearch(llmtest.ResearchOptions{Kind: llmtest.ResearchStumbling, Seed: seed, MaxNew: 10})
		f := body(t, research.FactMessages(mixedSub, mixedSub, "en", nil, mixedDoc))
		r.Responder()(f) // malformed once
		r.Responder()(f)
		var out []string
		for _, l := range r.Labels()[1:] {
			out = append(out, l.Label+":"+l.Text)
		}
		return out
	}
	if a, b := run(1), run(1); !slices.Equal(a, b) {
		t.Errorf("seed 1 gave %q, then %q", a, b)
	}
	differ := false
	for seed := uint64(2); seed < 12 && !differ; seed++ {
		differ = !slices.Equal(run(1), run(seed))
	}
	if !differ {
		t.Error("ten seeds stumbled the same way")
	}
}

func TestTheStandInsReportPutsFactsThatDisagreeSideBySide(t *testing.T) {
	r := llmtest.NewResearch(llmtest.ResearchOptions{})
	for _, tc := range []struct {
		name, lang, facts, want string
		cites                   []string
	}{
		{"English facts with other dates", "en",
			"## Sub-question 1: When?\n<fact id=\"F1\" certainty=\"medium\">The Aurora mobile app launch is planned for 15 March 2025.</fact>\n" +
				"<fact id=\"F2\" certainty=\"medium\">Maria leads the backend.</fact>\n" +
				"<fact id=\"F3\" certainty=\"medium\">The Aurora mobile app launch is planned for 2 June 2025.</fact>\n",
			"The Aurora mobile app launch is planned for 15 March 2025 — but another note says: The Aurora mobile app launch is planned for 2 June 2025.",
			[]string{"F1", "F3"}},
		{"a recipe's ratios in two languages, one marked contradicted by the other", "ru",
			"## Sub-question 1: Пропорции?\n<fact id=\"F1\" certainty=\"medium\" contradicted_by=\"F2\">Смешайте муку, молоко и воду в пропорции 1:3:1.</fact>\n" +
				"<fact id=\"F2\" certainty=\"medium\">Mix flour, milk and water in the ratio 1:2:2.</fact>\n",
			"Смешайте муку, молоко и воду в пропорции 1:3:1 — но в другой заметке: Mix flour, milk and water in the ratio 1:2:2.",
			[]string{"F1", "F2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := "Question: Where do my notes disagree?\nLanguage: " + tc.lang + "\n\nFacts found in the notes, by sub-question:\n" + tc.facts
			reply, _, _ := r.Responder()(body(t, []llm.Message{{Role: "system", Content: research.ReportMarker}, {Role: "user", Content: user}}))
			var rep struct {
				Disagreements []struct {
					Text  string   `json:"text"`
					Facts []string `json:"facts"`
				} `json:"disagreements"`
			}
			if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(reply, "```json\n"), "\n```")), &rep); err != nil {
				t.Fatalf("%v: %s", err, reply)
			}
			if len(rep.Disagreements) != 1 || rep.Disagreements[0].Text != tc.want || !slices.Equal(rep.Disagreements[0].Facts, tc.cites) {
				t.Errorf("disagreements %+v, want %q citing %q", rep.Disagreements, tc.want, tc.cites)
			}
		})
	}
	if !slices.ContainsFunc(r.Labels(), func(l llmtest.ResearchLabel) bool { return l.Label == llmtest.RLabelReportDisagreement }) {
		t.Errorf("labels %+v: want the disagreement sentences labelled", r.Labels())
	}
}

func TestTheStandInTranslatesKnownQuestionsAndTheirSubQuestionsOnly(t *testing.T) {
	r := llmtest.NewResearch(llmtest.ResearchOptions{Translations: map[string]map[string]string{
		"Where do my notes disagree about the pancakes?": {"ru": "В чём мои заметки расходятся насчёт блинчиков?"}}})
	ask := func(q string) string {
		reply, _, _ := r.Responder()(body(t, []llm.Message{{Role: "system", Content: "Translate the question into Russian (ru)."}, {Role: "user", Content: q}}))
		return reply
	}
	for q, want := range map[string]string{
		"Where do my notes disagree about the pancakes?":                        "ru: В чём мои заметки расходятся насчёт блинчиков?",
		"What do the notes say: Where do my notes disagree about the pancakes?": "ru: Что в заметках сказано: В чём мои заметки расходятся насчёт блинчиков?",
		"What is the weather like?":                                             "",
	} {
		if got := ask(q); got != want {
			t.Errorf("%q: translated %q, want %q", q, got, want)
		}
	}
}

func TestTheResearchServerServesItsLabels(t *testing.T) {
	srv, r := llmtest.NewResearchServer(t, llmtest.ResearchOptions{Kind: llmtest.ResearchChangeNumber, Rate: 1})
	factStep(t, r, mixedSub, nil, mixedDoc)
	res, err := http.Get(srv.ResearchLabelsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	resp, _ := io.ReadAll(res.Body)
	var got struct{ Labels []llmtest.ResearchLabel }
	if err := json.Unmarshal(resp, &got); err != nil || len(got.Labels) != 3 || got.Labels[0].Label != llmtest.RLabelChangedYear {
		t.Fatalf("%v %s", err, resp)
	}
}
