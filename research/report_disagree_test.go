package research

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// disagreeNotes: two meeting notes that give different launch dates, and a
// backup note with its later update, in English and in Russian.
var disagreeNotes = map[string][]note{
	"en": {
		{"en-m1", "m1.md", "m1.md:0", "Meeting 2024-03-12", "The launch of Project Atlas is planned for May 2024.", []string{"Meeting 2024-03-12"}},
		{"en-m2", "m2.md", "m2.md:0", "Meeting 2024-04-02", "The launch of Project Atlas is planned for June 2024.", []string{"Meeting 2024-04-02"}},
		{"en-b1", "backup.md", "backup.md:0", "Backup setup", "The home server backs up the photo library nightly at 02:00.", []string{"Backup setup"}},
		{"en-b2", "backup-update.md", "backup-update.md:0", "Backup update", "Since March the home server backs up the photo library every 6 hours.", []string{"Backup update"}},
	},
	"ru": {
		{"ru-m1", "в1.md", "в1.md:0", "Встреча 12 марта", "Запуск проекта «Атлас» намечен на май 2024 года.", []string{"Встреча 12 марта"}},
		{"ru-m2", "в2.md", "в2.md:0", "Встреча 2 апреля", "Запуск проекта «Атлас» намечен на июнь 2024 года.", []string{"Встреча 2 апреля"}},
		{"ru-b1", "копии.md", "копии.md:0", "Настройка копий", "Домашний сервер копирует фотоархив каждую ночь в 02:00.", []string{"Настройка копий"}},
		{"ru-b2", "копии-2.md", "копии-2.md:0", "Обновление копий", "Теперь домашний сервер копирует фотоархив каждые 6 часов.", []string{"Обновление копий"}},
	},
}

// disagreeFindings are one finding whose facts f1, f3 are contradicted by
// f2, f4 (as the fact step leaves them), each with its note's time.
func disagreeFindings(lang string) []schemas.ResearchFinding {
	n := disagreeNotes[lang]
	cite := func(x note) []schemas.Citation {
		return []schemas.Citation{{BlockID: x.id, DocID: x.doc, ChunkID: x.chunk, Title: x.title, SectionPath: x.section, Quote: x.text}}
	}
	fact := func(id string, x note, updated string, by ...string) schemas.Fact {
		return schemas.Fact{ID: id, Text: x.text, Certainty: schemas.CertaintyHigh, BlockIDs: []string{x.id}, Citations: cite(x),
			DocID: x.doc, ContradictedBy: by, Updated: updated}
	}
	return []schemas.ResearchFinding{{ResearchID: "r-" + lang, TaskID: "t1", Question: "Where do my notes disagree?", Lang: lang,
		Status: schemas.TaskDone, Facts: []schemas.Fact{
			fact("f1", n[0], "2024-03-12T10:00:00Z", "f2"),
			fact("f2", n[1], "2024-04-02T16:30:00Z"),
			fact("f3", n[2], "2024-01-10T09:00:00Z", "f4"),
			fact("f4", n[3], "2024-03-01T08:00:00Z"),
		}}}
}

// sideSentence finds the disagreement sentence that states the block.
func sideSentence(rep *schemas.ResearchReport, block string) *schemas.ReportSentence {
	for i, s := range rep.Disagreements {
		for _, sd := range s.Sides {
			for _, n := range sd.Sources {
				if rep.Sources[n-1].BlockID == block {
					return &rep.Disagreements[i]
				}
			}
		}
	}
	return nil
}

// checkSides asserts that each side of the disagreement sentence that holds
// old and new cites its own block alone, and that the Markdown states it.
func checkSides(t *testing.T, rep *schemas.ResearchReport, old, nw string, wants ...string) {
	t.Helper()
	s := sideSentence(rep, old)
	if s == nil || len(s.Sides) != 2 {
		t.Fatalf("no two-sided disagreement sentence for %s:\n%s", old, rep.Markdown)
	}
	for k, want := range []string{old, nw} {
		sd := s.Sides[k]
		if len(sd.Sources) != 1 || rep.Sources[sd.Sources[0]-1].BlockID != want {
			t.Errorf("side %d %+v cites %v, want block %s alone", k, sd, sd.Sources, want)
		}
	}
	if !s.Sides[1].Newer || s.Sides[0].Newer || s.Sides[1].Updated == "" {
		t.Errorf("sides %+v: the second is the newer and both carry their time", s.Sides)
	}
	md := sentenceMarkdown(*s)
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("disagreement %q lacks %q", md, want)
		}
	}
	if !strings.Contains(rep.Markdown, "- "+md) {
		t.Errorf("the Markdown does not list %q:\n%s", md, rep.Markdown)
	}
}

func buildWithoutModel(t *testing.T, lang string) *schemas.ResearchReport {
	t.Helper()
	blocks := map[string]schemas.Context{}
	for _, n := range disagreeNotes[lang] {
		blocks[n.id] = n.context()
	}
	r, err := NewReporter(ReportDeps{Analyzer: analyzer(t), Reports: bus.NewMemKV(), Blocks: mapBlocks(blocks)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Build(context.Background(), &schemas.ResearchDraft{ResearchID: "r-" + lang, Question: "Where do my notes disagree?",
		Lang: lang, Mode: schemas.ResearchSynthesis, Findings: disagreeFindings(lang)}, false)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type mapBlocks map[string]schemas.Context

func (m mapBlocks) Blocks(_ context.Context, ids []string) (map[string]schemas.Context, error) {
	out := map[string]schemas.Context{}
	for _, id := range ids {
		if c, ok := m[id]; ok {
			out[id] = c
		}
	}
	return out, nil
}

func TestWithoutAModelTheReportStatesEverySideOfEveryDisagreement(t *testing.T) {
	cases := []struct {
		lang                    string
		heading                 string
		launch, backup          []string
		launchOld, launchNew    string
		backupOld, backupNew    string
		notContradictionSection string
	}{
		{"en", "## Where the notes disagree",
			[]string{"The notes disagree: Meeting 2024-03-12 (2024-03-12): the launch of Project Atlas is planned for May 2024 [1];",
				"the newer Meeting 2024-04-02 (2024-04-02): the launch of Project Atlas is planned for June 2024 [2]."},
			[]string{"Backup setup (2024-01-10) said: the home server backs up the photo library nightly at 02:00 [3];",
				"since 2024-03-01 (Backup update): Since March the home server backs up the photo library every 6 hours [4]."},
			"en-m1", "en-m2", "en-b1", "en-b2", ""},
		{"ru", "## Где заметки расходятся",
			[]string{"Заметки расходятся: «Встреча 12 марта» (2024-03-12): Запуск проекта «Атлас» намечен на май 2024 года [1];",
				"более новая «Встреча 2 апреля» (2024-04-02): Запуск проекта «Атлас» намечен на июнь 2024 года [2]."},
			[]string{"«Настройка копий» (2024-01-10): Домашний сервер копирует фотоархив каждую ночь в 02:00 [3];",
				"с 2024-03-01 («Обновление копий»): Теперь домашний сервер копирует фотоархив каждые 6 часов [4]."},
			"ru-m1", "ru-m2", "ru-b1", "ru-b2", ""},
	}
	for _, c := range cases {
		t.Run("in "+c.lang, func(t *testing.T) {
			rep := buildWithoutModel(t, c.lang)
			if len(rep.Facts) != 4 || len(rep.Disagreements) != 2 || !strings.Contains(rep.Markdown, c.heading) {
				t.Fatalf("%d facts, %d disagreements (want 4 and 2):\n%s", len(rep.Facts), len(rep.Disagreements), rep.Markdown)
			}
			checkSides(t, rep, c.launchOld, c.launchNew, c.launch...)
			checkSides(t, rep, c.backupOld, c.backupNew, c.backup...)
		})
	}
}

func TestTheModelsDisagreementSentenceIsKeptOnlyWhenEachSideIsStatedByItsOwnBlock(t *testing.T) {
	cases := []struct {
		name, lang string
		sentence   replySentence
		kept       bool   // the model's sentence is the one in the report
		reason     string // the reason that names a sentence not kept
	}{
		{"both sides, each clause stated by its block", "en",
			replySentence{Text: "The notes disagree: the launch of Project Atlas is planned for May 2024, while the newer note plans the launch of Project Atlas for June 2024.", Facts: []string{"F1", "F2"}},
			true, ""},
		{"a side with its note's date", "en",
			replySentence{Text: "On 2024-03-12 the launch of Project Atlas was planned for May 2024, but on 2024-04-02 the launch of Project Atlas was planned for June 2024.", Facts: []string{"F1", "F2"}},
			true, ""},
		{"the stand-in's shape: a side, a dash, another note's side", "en",
			replySentence{Text: "The home server backs up the photo library nightly at 02:00 — but another note says: Since March the home server backs up the photo library every 6 hours.", Facts: []string{"F3", "F4"}},
			true, ""},
		{"one side only", "en",
			replySentence{Text: "The launch of Project Atlas is planned for June 2024.", Facts: []string{"F2"}},
			false, "one_sided_disagreement: "},
		{"both sides cited, one side's year changed", "en",
			replySentence{Text: "The launch of Project Atlas is planned for May 2428, while the newer note plans the launch of Project Atlas for June 2024.", Facts: []string{"F1", "F2"}},
			false, "unsupported_disagreement: "},
		{"both sides cited, both numbers in one clause", "en",
			replySentence{Text: "The launch of Project Atlas is planned for May 2024 and June 2024.", Facts: []string{"F1", "F2"}},
			false, "unsupported_disagreement: "},
		{"обе стороны, каждая своим блоком", "ru",
			replySentence{Text: "Запуск проекта «Атлас» намечен на май 2024 года, а в более новой заметке запуск проекта «Атлас» намечен на июнь 2024 года.", Facts: []string{"F1", "F2"}},
			true, ""},
		{"форма дублёра: сторона, тире, другая заметка", "ru",
			replySentence{Text: "Домашний сервер копирует фотоархив каждую ночь в 02:00 — но в другой заметке: Теперь домашний сервер копирует фотоархив каждые 6 часов.", Facts: []string{"F3", "F4"}},
			true, ""},
		{"только одна сторона", "ru",
			replySentence{Text: "Запуск проекта «Атлас» намечен на июнь 2024 года.", Facts: []string{"F2"}},
			false, "one_sided_disagreement: "},
		{"изменённое время одной стороны", "ru",
			replySentence{Text: "Домашний сервер копировал фотоархив каждую ночь в 02:03, а теперь домашний сервер копирует фотоархив каждые 6 часов.", Facts: []string{"F3", "F4"}},
			false, "unsupported_disagreement: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := claimBuilder(t, c.lang, disagreeNotes[c.lang])
			b.rep.Question = "Where do my notes disagree?"
			facts := numberFacts(disagreeFindings(c.lang))
			facts = b.verifyFacts(facts)
			b.conflicts = disagreementPairs(facts)
			if len(b.conflicts) != 2 {
				t.Fatalf("%d pairs, want 2", len(b.conflicts))
			}
			b.synthesis(reportReply{Title: "T", Disagreements: []replySentence{c.sentence}}, facts)
			rep := b.finish(b.rep.Time)
			// Never lose a disagreement: both pairs are in, each side cited.
			if len(rep.Disagreements) != 2 {
				t.Fatalf("%d disagreement sentences, want 2:\n%s", len(rep.Disagreements), rep.Markdown)
			}
			for _, s := range rep.Disagreements {
				if len(s.Sides) < 2 {
					t.Errorf("disagreement %q has %d sides", s.Text, len(s.Sides))
				}
				for _, sd := range s.Sides {
					if len(sd.Sources) == 0 {
						t.Errorf("side %q cites nothing", sd.Text)
					}
				}
			}
			text, _ := cleanSentence(c.sentence)
			if first := oneLine(rep.Disagreements[0].Text); c.kept && first != oneLine(text) {
				t.Errorf("the first disagreement is %q, want the model's %q (reasons %q)", first, text, rep.Reasons)
			}
			if !c.kept {
				if strings.Contains(rep.Markdown, text) {
					t.Errorf("the model's sentence %q is in the report:\n%s", text, rep.Markdown)
				}
				found := false
				for _, r := range rep.Reasons {
					found = found || strings.HasPrefix(r, c.reason)
				}
				if !found {
					t.Errorf("reasons %q lack %q", rep.Reasons, c.reason)
				}
			}
		})
	}
}

func TestThePromptsGiveThePairsWithTheirDates(t *testing.T) {
	findings := disagreeFindings("en")
	facts := numberFacts(findings)
	want := []string{`<disagreement facts="F1,F2" dates="2024-03-12,2024-04-02" newer="F2"/>`,
		`<disagreement facts="F3,F4" dates="2024-01-10,2024-03-01" newer="F4"/>`}
	for name, msgs := range map[string]string{
		"draft":  DraftPrompt("Where do my notes disagree?", "en", findings)[1].Content,
		"report": ReportPrompt("Where do my notes disagree?", "en", "", findings, facts)[1].Content,
	} {
		for _, w := range want {
			if !strings.Contains(msgs, w) {
				t.Errorf("the %s prompt lacks %s:\n%s", name, w, msgs)
			}
		}
	}
	// Undated sides: no newer one is named.
	findings[0].Facts[0].Updated, findings[0].Facts[1].Updated = "", ""
	if p := ReportPrompt("q", "en", "", findings, numberFacts(findings))[1].Content; !strings.Contains(p, `<disagreement facts="F1,F2" dates="," newer=""/>`) {
		t.Errorf("undated pair:\n%s", p)
	}
}

func TestAOneSidedDisagreementIsStatedWithTheSideItHasAndNamesTheOtherNote(t *testing.T) {
	for _, c := range []struct{ lang, want string }{
		{"en", "- The notes disagree: Meeting 2024-03-12 (2024-03-12): the launch of Project Atlas is planned for May 2024 [1]; Meeting 2024-04-02 says otherwise; what it says could not be checked against its blocks."},
		{"ru", "- Заметки расходятся: «Встреча 12 марта» (2024-03-12): Запуск проекта «Атлас» намечен на май 2024 года [1]; «Встреча 2 апреля» утверждает иное; это не удалось проверить по её блокам."},
	} {
		t.Run("in "+c.lang, func(t *testing.T) {
			n := disagreeNotes[c.lang]
			b := claimBuilder(t, c.lang, n)
			b.rep.Question = "Where do my notes disagree?"
			findings := disagreeFindings(c.lang)
			// The fact step kept no fact of the other note: it names the document.
			findings[0].Facts = []schemas.Fact{findings[0].Facts[0]}
			findings[0].Facts[0].ContradictedBy = []string{"doc:" + n[1].doc}
			facts := b.verifyFacts(numberFacts(findings))
			b.conflicts = disagreementPairs(facts)
			if len(b.conflicts) != 1 || b.conflicts[0].OtherDoc != n[1].doc {
				t.Fatalf("pairs %+v, want the one-sided one", b.conflicts)
			}
			p := reportPrompt("q", c.lang, "", findings, facts, b.conflicts)[1].Content
			if !strings.Contains(p, `<disagreement facts="F1" dates="2024-03-12" newer="" other_document="`+n[1].doc+`"/>`) {
				t.Errorf("the prompt lacks the one-sided disagreement:\n%s", p)
			}
			b.synthesis(reportReply{Title: "T", Disagreements: []replySentence{{Text: n[0].text, Facts: []string{"F1"}}}}, facts)
			rep := b.finish(b.rep.Time)
			if len(rep.Disagreements) != 1 || !strings.Contains(rep.Markdown, c.want) {
				t.Fatalf("Markdown lacks %q:\n%s", c.want, rep.Markdown)
			}
			if sd := rep.Disagreements[0].Sides; len(sd) != 2 || len(sd[0].Sources) != 1 || len(sd[1].Sources) != 0 || sd[1].Text != "" {
				t.Errorf("sides %+v: the known side cites its block, the other cites nothing and states nothing", sd)
			}
		})
	}
}
