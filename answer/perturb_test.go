package answer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// mixedNotes are the everyday Markdown notes of the second golden set:
// times, retention days, amounts, dates, names, an injected instruction.
const mixedNotes = "../eval/testdata/notes-mixed"

// noteContexts parses the notes and gives the contexts of each.
func noteContexts(t *testing.T, names ...string) []schemas.Context {
	t.Helper()
	root, err := filepath.Abs(mixedNotes)
	if err != nil {
		t.Fatal(err)
	}
	var out []schemas.Context
	for _, name := range names {
		path := filepath.Join(root, name)
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := notes.ParseMarkdown(path, content, root)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, docContexts(doc)...)
	}
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

// blockTexts are the contexts' blocks by id, for the scripted provider's
// labels.
func blockTexts(ctxs []schemas.Context) map[string]string {
	out := map[string]string{}
	for _, c := range ctxs {
		for _, b := range c.BlockSpans {
			out[b.ID] = c.Text[b.Start:b.End]
		}
	}
	return out
}

// TestEachPerturbationEndsInTheRightModeCitationsAndText runs every kind of
// the scripted provider's perturbation suite, in prose and in JSON, over
// Russian and English notes, and judges the answer by the provider's own
// label of each claim it made (never by the verifier's rules): a claim
// labelled supported is shown, cited to its source block, in mode llm; a
// claim labelled unsupported is never shown, and an answer made only of
// such claims is not given as llm. The client never sees a sentence the
// final answer lacks.
func TestEachPerturbationEndsInTheRightModeCitationsAndText(t *testing.T) {
	ctxs := noteContexts(t, "home-server-backup.md", "fotoarhiv-kopii.md", "remont-kuhni-byudzhet.md")
	type question struct {
		text, lang string
		label      string // the label the kind must give here (its perturbation applies)
	}
	en := func(q, label string) question { return question{q, "en", label} }
	ru := func(q, label string) question { return question{q, "ru", label} }
	cases := []struct {
		kind   llmtest.Behaviour
		qs     []question
		mode   string // of every question's answer
		reason string // a reason every answer gives
	}{
		{llmtest.Faithful, []question{en("When does the nightly backup run?", llmtest.LabelFaithful),
			ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelFaithful)}, schemas.AnswerLLM, ""},
		{llmtest.Translate, []question{ru("Во сколько запускается ночное резервное копирование?", llmtest.LabelTranslated)}, schemas.AnswerLLM, ""},
		{llmtest.OffByOneCitation, []question{en("When does the nightly backup run?", llmtest.LabelOffByOneCitation),
			ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelOffByOneCitation)}, schemas.AnswerLLM, answer.ReasonCorrected},
		{llmtest.ChangeNumber, []question{en("When does the nightly backup run?", llmtest.LabelChangedNumber),
			ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelChangedNumber)}, schemas.AnswerSearchOnly, answer.DropNotStated},
		{llmtest.ChangeDate, []question{ru("Когда подписывается договор на гарнитур и вносится предоплата?", llmtest.LabelChangedDate)}, schemas.AnswerSearchOnly, answer.DropNotStated},
		{llmtest.ChangeUnit, []question{en("How long are daily snapshots kept?", llmtest.LabelChangedUnit),
			ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelChangedUnit)}, schemas.AnswerSearchOnly, answer.DropNotStated},
		{llmtest.ChangeEntity, []question{en("Where is the offsite copy pushed every Sunday?", llmtest.LabelChangedEntity)}, schemas.AnswerSearchOnly, answer.DropNotStated},
		{llmtest.AppendCondition, []question{en("When does the nightly backup run?", llmtest.LabelAppendedCondition),
			ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelAppendedCondition)}, schemas.AnswerSearchOnly, answer.DropNotStated},
		{llmtest.InventedClause, []question{en("When does the nightly backup run?", llmtest.LabelInventedClause),
			ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelInventedClause)}, schemas.AnswerSearchOnly, answer.DropNotStated},
		{llmtest.Negate, []question{en("When does the nightly backup run?", llmtest.LabelNegated)}, schemas.AnswerSearchOnly, answer.DropPolarity},
		{llmtest.ObeyInjection, []question{en("When does the nightly backup run?", llmtest.LabelObeyedInjection)}, schemas.AnswerSearchOnly, answer.ReasonSetAside},
		{llmtest.WrongLanguage, []question{ru("Сколько дней хранятся старые версии файлов фотоархива?", llmtest.LabelWrongLanguage),
			en("When does the nightly backup run?", llmtest.LabelWrongLanguage)}, schemas.AnswerSearchOnly, answer.DropLanguage},
		{llmtest.Loop, []question{en("When does the nightly backup run?", llmtest.LabelLoop)}, schemas.AnswerSearchOnly, answer.ReasonLoop},
	}
	translations := map[string]map[string]string{
		"Во сколько запускается ночное резервное копирование?": {"en": "When does the nightly backup run?"},
	}
	for _, c := range cases {
		for _, structured := range []bool{false, true} {
			for _, q := range c.qs {
				name := c.kind.String() + "/" + q.lang + "/prose"
				if structured {
					name = c.kind.String() + "/" + q.lang + "/json"
				}
				t.Run(name, func(t *testing.T) {
					srv := llmtest.NewScripted(t, llmtest.ScriptOptions{Behaviour: c.kind, Translations: translations, Blocks: blockTexts(ctxs)})
					var toks tokens
					a := &answer.Answerer{Router: scriptedRouter(t, srv, structured), Analyzer: analyzer(t), Emit: toks.emit}
					rq := &schemas.QueryReranked{Query: schemas.Query{QueryID: "q1", Question: q.text, Lang: q.lang}, Mode: schemas.ModeHybrid, Contexts: ctxs}
					done := a.Answer(context.Background(), rq)
					claims := srv.Claims(q.text)
					if len(claims) == 0 || claims[0].Label != q.label {
						t.Fatalf("the provider's claims %+v: want the first labelled %s (the perturbation must apply here)", claims, q.label)
					}
					if done.Mode != c.mode {
						t.Fatalf("mode %s, want %s; answer %q; reasons %q", done.Mode, c.mode, done.Answer, done.Reasons)
					}
					if c.reason != "" && !strings.Contains(strings.Join(done.Reasons, "\n"), c.reason) {
						t.Errorf("the reasons do not say %s: %q", c.reason, done.Reasons)
					}
					judgeByLabels(t, done, claims)
					toks.check(t)
					if toks.text() != done.Answer {
						t.Errorf("the client saw %q, the answer is %q", toks.text(), done.Answer)
					}
					for _, tok := range toks.got {
						if tok.Restart {
							t.Errorf("a restart: the client saw text that was later withdrawn")
						}
					}
				})
			}
		}
	}
}

// judgeByLabels checks an llm answer against the provider's labels: each
// supported claim shown and cited to its source block, no unsupported claim
// shown.
func judgeByLabels(t *testing.T, done *schemas.AnswerDone, claims []llmtest.Claim) {
	t.Helper()
	if done.Mode != schemas.AnswerLLM {
		return // passages: the notes' own text, no claim of the model's
	}
	cited := map[string]bool{}
	for _, c := range done.Citations {
		cited[c.BlockID] = true
	}
	latest := claims[len(claims)-1].Request
	for _, cl := range claims {
		if cl.Request != latest {
			continue
		}
		body := strings.TrimSuffix(cl.Sentence, ".")
		shown := strings.Contains(answerWithoutMarkers(done.Answer), answerWithoutMarkers(body))
		switch {
		case cl.Supported && !shown:
			t.Errorf("a supported claim (%s) is not shown: %q in %q; reasons %q", cl.Label, body, done.Answer, done.Reasons)
		case cl.Supported && !cited[cl.SourceBlock]:
			t.Errorf("a supported claim (%s) is not cited to its source block %s: citations %+v", cl.Label, cl.SourceBlock, done.Citations)
		case !cl.Supported && shown:
			t.Errorf("a false claim (%s) is shown: %q", cl.Label, body)
		}
	}
}

func answerWithoutMarkers(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
