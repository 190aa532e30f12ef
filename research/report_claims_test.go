package research

import (
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

var (
	testAnalyzerOnce sync.Once
	testAnalyzer     *analysis.Analyzer
)

func analyzer(t *testing.T) *analysis.Analyzer {
	t.Helper()
	testAnalyzerOnce.Do(func() {
		a, err := analysis.New(analysis.Full)
		if err != nil {
			t.Fatal(err)
		}
		testAnalyzer = a
	})
	return testAnalyzer
}

// note is a block of a note as the index gives it: a context holding it alone.
type note struct {
	id, doc, chunk, title, text string
	section                     []string
}

func (n note) context() schemas.Context {
	return schemas.Context{Passage: schemas.Passage{ChunkID: n.chunk, DocID: n.doc, Title: n.title, SectionPath: n.section,
		BlockID: n.id, BlockIDs: []string{n.id}, Text: n.text, BlockSpans: []schemas.BlockSpan{{ID: n.id, Start: 0, End: len(n.text)}}}}
}

// claimNotes are the blocks the claim-check tests cite: in each language a
// backup note (two neighbouring blocks of one chunk), a launch note and a
// recipe.
var claimNotes = []note{
	{"en-backup", "backup.md", "backup.md:0", "Backups", "The home server backs up the photo library nightly at 02:00.", []string{"Backups"}},
	{"en-keep", "backup.md", "backup.md:0", "Backups", "Each backup of the photo library is kept for 30 days on the external disk.", []string{"Backups"}},
	{"en-launch", "meeting.md", "meeting.md:0", "Planning meeting", "The launch of Project Atlas is planned for May 2024.", []string{"Planning meeting"}},
	{"en-recipe", "bread.md", "bread.md:0", "Rye bread", "Mix rye flour, water and starter in the ratio 1:2:2.", []string{"Rye bread"}},
	{"ru-backup", "копии.md", "копии.md:0", "Резервные копии", "Домашний сервер копирует фотоархив каждую ночь в 02:00.", []string{"Резервные копии"}},
	{"ru-keep", "копии.md", "копии.md:0", "Резервные копии", "Каждая копия фотоархива хранится 30 дней на внешнем диске.", []string{"Резервные копии"}},
	{"ru-launch", "встреча.md", "встреча.md:0", "Встреча по планированию", "Запуск проекта «Атлас» намечен на май 2024 года.", []string{"Встреча по планированию"}},
	{"ru-recipe", "хлеб.md", "хлеб.md:0", "Ржаной хлеб", "Смешайте ржаную муку, воду и закваску в пропорции 1:2:2.", []string{"Ржаной хлеб"}},
}

func claimBuilder(t *testing.T, lang string, notes []note) *builder {
	t.Helper()
	blocks := map[string]schemas.Context{}
	for _, n := range notes {
		blocks[n.id] = n.context()
	}
	return &builder{a: analyzer(t), blocks: blocks, lang: lang, rep: &schemas.ResearchReport{Lang: lang}}
}

// factsOn numbers one fact per block (F1, F2 ...), its text the block's.
func factsOn(notes []note) map[string]numberedFact {
	out := map[string]numberedFact{}
	for i, n := range notes {
		id := "F" + string(rune('1'+i))
		out[id] = numberedFact{ID: id, Fact: schemas.Fact{ID: "f1", Text: n.text, BlockIDs: []string{n.id}, DocID: n.doc}}
	}
	return out
}

func TestReportSentencesPassTheClaimChecksOfAnswers(t *testing.T) {
	facts := factsOn(claimNotes) // F1 en-backup, F2 en-keep, F3 en-launch, F4 en-recipe, F5..F8 the Russian ones
	cases := []struct {
		name, lang, text string
		fact             string
		kept             bool
		cites            string // the block the kept sentence cites
		why              string // in the reason of a dropped sentence
	}{
		{"a sentence its block states is kept", "en", "The home server backs up the photo library nightly at 02:00.", "F1", true, "en-backup", ""},
		{"a changed year is dropped", "en", "The launch of Project Atlas is planned for May 2428.", "F3", false, "", "2428"},
		{"a changed time is dropped", "en", "The home server backs up the photo library nightly at 02:03.", "F1", false, "", "02:03"},
		{"a changed ratio is dropped", "en", "Mix rye flour, water and starter in the ratio 1:2:5.", "F4", false, "", "not_stated"},
		{"an added clause is dropped", "en", "The home server backs up the photo library nightly at 02:00, and every copy is encrypted with a key kept in the office safe.", "F1", false, "", "not_stated"},
		{"a sentence citing the neighbouring block is re-cited to it", "en", "Each backup of the photo library is kept for 30 days on the external disk.", "F1", true, "en-keep", ""},
		{"a changed number cited to the neighbour is still dropped", "en", "Each backup of the photo library is kept for 90 days on the external disk.", "F1", false, "", "unsupported"},
		{"предложение, которое блок утверждает, остаётся", "ru", "Домашний сервер копирует фотоархив каждую ночь в 02:00.", "F5", true, "ru-backup", ""},
		{"изменённый год отбрасывается", "ru", "Запуск проекта «Атлас» намечен на май 2428 года.", "F7", false, "", "2428"},
		{"изменённое время отбрасывается", "ru", "Домашний сервер копирует фотоархив каждую ночь в 02:03.", "F5", false, "", "02:03"},
		{"изменённая пропорция отбрасывается", "ru", "Смешайте ржаную муку, воду и закваску в пропорции 1:2:5.", "F8", false, "", "not_stated"},
		{"добавленное условие отбрасывается", "ru", "Домашний сервер копирует фотоархив каждую ночь в 02:00, если ноутбук подключён к сети офиса.", "F5", false, "", "not_stated"},
		{"предложение со ссылкой на соседний блок переносится на него", "ru", "Каждая копия фотоархива хранится 30 дней на внешнем диске.", "F5", true, "ru-keep", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := claimBuilder(t, c.lang, claimNotes)
			p, ok := b.sentence(replySentence{Text: c.text, Facts: []string{c.fact}}, facts)
			if ok != c.kept {
				t.Fatalf("kept %v, want %v (reasons %q)", ok, c.kept, b.rep.Reasons)
			}
			if c.kept {
				if len(p.blocks) != 1 || p.blocks[0] != c.cites {
					t.Fatalf("the sentence cites %q, want %q", p.blocks, c.cites)
				}
				return
			}
			if len(b.rep.Reasons) != 1 || !strings.HasPrefix(b.rep.Reasons[0], "unsupported_sentence: ") || !strings.Contains(b.rep.Reasons[0], c.why) {
				t.Fatalf("reasons %q: want one unsupported_sentence naming %q", b.rep.Reasons, c.why)
			}
		})
	}
}

func TestTheDraftsDisagreementsAreCheckedBeforeTheReportModelSeesThem(t *testing.T) {
	notes := []note{
		{"m1", "m1.md", "m1.md:0", "Meeting 1", "The launch of Project Atlas is planned for May 2024.", nil},
		{"m2", "m2.md", "m2.md:0", "Meeting 2", "The launch of Project Atlas is moved to June 2024.", nil},
	}
	b := claimBuilder(t, "en", notes)
	facts := []numberedFact{
		{ID: "F1", Fact: schemas.Fact{ID: "f1", Text: notes[0].text, BlockIDs: []string{"m1"}, ContradictedBy: []string{"f2"}, Updated: "2024-03-12T10:00:00Z"}},
		{ID: "F2", Fact: schemas.Fact{ID: "f2", Text: notes[1].text, BlockIDs: []string{"m2"}, Updated: "2024-04-02T10:00:00Z"}},
	}
	b.conflicts = disagreementPairs(facts)
	draft := `{"themes": [{"title": "Launch", "facts": ["F1", "F2"]}], "disagreements": [
		{"text": "The launch of Project Atlas was planned for May 2024, but is moved to June 2024.", "facts": ["F1", "F2"]},
		{"text": "The launch of Project Atlas was planned for May 2428, but is moved to June 2024.", "facts": ["F1", "F2"]},
		{"text": "The launch of Project Atlas is moved to June 2024.", "facts": ["F2"]}]}`
	got := b.checkDraft(draft, facts)
	if !strings.Contains(got, "May 2024") || strings.Contains(got, "2428") || strings.Count(got, `"text"`) != 1 || !strings.Contains(got, `"title":"Launch"`) {
		t.Fatalf("checked outline %s: want the themes and the one disagreement stated per side", got)
	}
	var changed, oneSided bool
	for _, r := range b.rep.Reasons {
		changed = changed || strings.HasPrefix(r, "draft_unsupported_disagreement: ") && strings.Contains(r, "2428")
		oneSided = oneSided || strings.HasPrefix(r, "draft_one_sided_disagreement: ")
	}
	if !changed || !oneSided {
		t.Errorf("reasons %q: want the changed year and the one-sided sentence named", b.rep.Reasons)
	}
	if prose := "Themes: launch."; b.checkDraft(prose, facts) != prose {
		t.Error("an outline that is not JSON is not given as it is")
	}
}
