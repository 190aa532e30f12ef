package research_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

var (
	evOnce     sync.Once
	evAnalyzer *analysis.Analyzer
	evErr      error
)

func evAn(t *testing.T) *analysis.Analyzer {
	t.Helper()
	evOnce.Do(func() { evAnalyzer, evErr = analysis.New(analysis.Full) })
	if evErr != nil {
		t.Fatal(evErr)
	}
	return evAnalyzer
}

// evFact is a passage of note title (its block id), as an evidence_only
// task keeps it; updated is the note's date ("" unknown).
func evFact(id, block, title, text, updated string) schemas.Fact {
	return schemas.Fact{ID: id, Text: text, BlockIDs: []string{block}, DocID: "doc-" + title, Updated: updated,
		Citations: []schemas.Citation{{BlockID: block, DocID: "doc-" + title, Title: title, SectionPath: []string{title},
			Quote: text, Link: "file:///notes/" + title + ".md"}}}
}

// evReport builds the evidence_only report of question over the findings'
// facts (one finding per fact list), without a provider.
func evReport(t *testing.T, question, lang string, reasons []string, facts ...[]schemas.Fact) *schemas.ResearchReport {
	t.Helper()
	rp, err := research.NewReporter(research.ReportDeps{Analyzer: evAn(t), Reports: bus.NewMemKV(),
		Now: func() time.Time { return time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	d := &schemas.ResearchDraft{ResearchID: "r-ev", Question: question, Lang: lang, Mode: schemas.ResearchEvidenceOnly}
	for i, fs := range facts {
		q := question
		if len(facts) > 1 {
			q = fs[0].Reasoning // the sub-question, carried in by the test
		}
		d.Findings = append(d.Findings, schemas.ResearchFinding{ResearchID: "r-ev", TaskID: "t" + string(rune('1'+i)), Index: i,
			Of: len(facts), Question: q, Original: question, Lang: lang, Mode: schemas.ResearchEvidenceOnly, Status: schemas.TaskDone,
			Facts: fs, Reasons: reasons})
	}
	rep, err := rp.Build(context.Background(), d, true)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// passages are the report's sentences that cite, by section title.
func passages(rep *schemas.ResearchReport) map[string][]string {
	out := map[string][]string{}
	for _, s := range rep.Sections {
		for _, x := range s.Sentences {
			if len(x.Sources) > 0 {
				out[s.Title] = append(out[s.Title], x.Text)
			}
		}
	}
	return out
}

func sectionTitles(rep *schemas.ResearchReport) []string {
	var out []string
	for _, s := range rep.Sections {
		out = append(out, s.Title)
	}
	return out
}

func TestTheEvidenceReportGroupsTheAnsweringPassagesByThePartsOfTheQuestion(t *testing.T) {
	for _, tc := range []struct {
		name, lang, question string
		facts                []schemas.Fact
		wantTitles           []string
		wantLead             string
		want                 map[string][]string // section -> passages, best first
		absent               []string
	}{
		{name: "an English question that asks two things", lang: "en",
			question: "How often are backups made and where are the backups stored?",
			facts: []schemas.Fact{
				evFact("f1", "b-head", "Backups", "## Backups", ""),
				evFact("f2", "b-title", "Backups", "Backups", ""),
				evFact("f3", "b-often", "Backups", "Backups are made every night at 02:00 by a cron job.", ""),
				evFact("f4", "b-where", "Backups", "The backups are stored on the NAS in the basement.", ""),
				evFact("f5", "b-cat", "Cats", "The cat sleeps on the warm router all day.", ""),
				evFact("f6", "b-often", "Backups", "Backups are made every night at 02:00 by a cron job.", ""),
			},
			wantTitles: []string{"How often are backups made", "Where are the backups stored"},
			wantLead:   "What the notes say on “How often are backups made”:",
			want: map[string][]string{
				"How often are backups made":   {"Backups are made every night at 02:00 by a cron job."},
				"Where are the backups stored": {"The backups are stored on the NAS in the basement."},
			},
			absent: []string{"## Backups", "The cat sleeps"}},
		{name: "a Russian question that asks two things", lang: "ru",
			question: "Как часто делаются резервные копии и где хранятся резервные копии?",
			facts: []schemas.Fact{
				evFact("f1", "b-head", "Резервные копии", "# Резервные копии", ""),
				evFact("f2", "b-often", "Резервные копии", "Резервные копии делаются каждую ночь в 02:00 заданием cron.", ""),
				evFact("f3", "b-where", "Резервные копии", "Резервные копии хранятся на сетевом диске в подвале.", ""),
				evFact("f4", "b-cat", "Кошки", "Кошка спит на тёплом роутере весь день.", ""),
			},
			wantTitles: []string{"Как часто делаются резервные копии", "Где хранятся резервные копии"},
			wantLead:   "Что сказано в заметках о «Как часто делаются резервные копии»:",
			want: map[string][]string{
				"Как часто делаются резервные копии": {"Резервные копии делаются каждую ночь в 02:00 заданием cron."},
				"Где хранятся резервные копии":       {"Резервные копии хранятся на сетевом диске в подвале."},
			},
			absent: []string{"# Резервные копии", "Кошка спит"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := evReport(t, tc.question, tc.lang, nil, tc.facts)
			if got := sectionTitles(rep); !slices.Equal(got, tc.wantTitles) {
				t.Fatalf("sections %q, want %q\n%s", got, tc.wantTitles, rep.Markdown)
			}
			if lead := rep.Sections[0].Sentences[0]; lead.Text != tc.wantLead || len(lead.Sources) != 0 {
				t.Errorf("the first section opens with %+v, want the line %q citing nothing", lead, tc.wantLead)
			}
			got := passages(rep)
			for sec, want := range tc.want {
				if !slices.Equal(got[sec], want) {
					t.Errorf("section %q: passages %q, want %q", sec, got[sec], want)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(rep.Markdown, a) {
					t.Errorf("the report shows %q (a heading, a title or an unrelated passage):\n%s", a, rep.Markdown)
				}
			}
			if len(rep.Sources) != 2 {
				t.Errorf("%d sources, want the 2 answering blocks once each: %+v", len(rep.Sources), rep.Sources)
			}
			if !strings.Contains(rep.Markdown, "\n"+tc.wantLead+"\n\n- ") {
				t.Errorf("the Markdown does not put the framing line above its passages:\n%s", rep.Markdown)
			}
		})
	}
}

func TestTheEvidenceReportShowsAtMostNPassagesPerGroupBestFirst(t *testing.T) {
	q := "What do crows remember about people?"
	var facts []schemas.Fact
	for i, text := range []string{
		"Crows are black.",
		"Crows remember the faces of people who threatened them.",
		"Crows remember people who fed them for years.",
		"Crows remember the people and the places where they were caught.",
		"People say crows remember what people did to them.",
		"Crows remember people; people remember crows less.",
	} {
		facts = append(facts, evFact("f"+string(rune('1'+i)), "b"+string(rune('1'+i)), "Crows", text, ""))
	}
	rep := evReport(t, q, "en", nil, facts)
	got := passages(rep)["Crows"]
	if len(got) != 3 {
		t.Fatalf("%d passages, want 3 (EvidencePerTheme): %q", len(got), got)
	}
	if slices.Contains(got, "Crows are black.") {
		t.Errorf("a passage that does not answer is shown: %q", got)
	}
	if got[0] != "Crows remember the faces of people who threatened them." {
		t.Errorf("first passage %q: equal matches keep the retrieval's order", got[0])
	}
}

func TestTheEvidenceReportShowsDisagreeingNotesSideBySideWithTheirDates(t *testing.T) {
	for _, tc := range []struct {
		name, lang, question string
		facts                []schemas.Fact
		lead                 string
		sides                []string
	}{
		{name: "two English meeting notes give different launch dates and budgets", lang: "en",
			question: "When is the Aurora launch and what is its budget?",
			facts: []schemas.Fact{
				evFact("f1", "b-jan", "Meeting 10 January", "The Aurora launch is planned for 15 March 2025 with a budget of $40,000.", "2025-01-10T10:00:00Z"),
				evFact("f2", "b-feb", "Meeting 20 February", "The Aurora launch moved to 1 April 2025 and the budget is now $55,000.", "2025-02-20T10:00:00Z"),
			},
			lead: "These notes disagree on aurora launch budget: 15 March 2025 in one, 1 April 2025 in the other.",
			sides: []string{"“Meeting 10 January”, 2025-01-10: The Aurora launch is planned for 15 March 2025 with a budget of $40,000.",
				"“Meeting 20 February”, 2025-02-20, newer: The Aurora launch moved to 1 April 2025 and the budget is now $55,000."}},
		{name: "two Russian meeting notes give different launch dates", lang: "ru",
			question: "Когда запуск проекта Аврора и какой у него бюджет?",
			facts: []schemas.Fact{
				evFact("f1", "b-jan", "Встреча 10 января", "Запуск проекта Аврора назначен на 15 марта 2025 года, бюджет проекта 40 000 рублей.", "2025-01-10T10:00:00Z"),
				evFact("f2", "b-feb", "Встреча 20 февраля", "Запуск проекта Аврора перенесён на 1 апреля 2025 года, бюджет проекта 55 000 рублей.", "2025-02-20T10:00:00Z"),
			},
			lead: "Эти заметки расходятся — запуск проекта аврора: в одной 15 марта 2025 года, в другой 1 апреля 2025 года.",
			sides: []string{"«Встреча 10 января», 2025-01-10: Запуск проекта Аврора назначен на 15 марта 2025 года, бюджет проекта 40 000 рублей.",
				"«Встреча 20 февраля», 2025-02-20, новее: Запуск проекта Аврора перенесён на 1 апреля 2025 года, бюджет проекта 55 000 рублей."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := evReport(t, tc.question, tc.lang, nil, tc.facts)
			// One sentence a pair (as the synthesis' disagreements), the line
			// saying what they disagree on leading the older side; each side
			// its passage with its own citation, its note's time, the newer
			// marked.
			ds := rep.Disagreements
			if len(ds) != 1 || len(ds[0].Sides) != 2 {
				t.Fatalf("disagreements %+v, want one with both sides\n%s", ds, rep.Markdown)
			}
			sides := ds[0].Sides
			if !strings.HasPrefix(sides[0].Lead, tc.lead+" ") {
				t.Errorf("first side's lead %q, want it to start with %q", sides[0].Lead, tc.lead)
			}
			for i, want := range tc.sides {
				got := strings.TrimSpace(strings.TrimPrefix(sides[i].Lead, tc.lead) + " " + sides[i].Text)
				if got != want || len(sides[i].Sources) != 1 || sides[i].Updated != tc.facts[i].Updated || sides[i].Newer != (i == 1) {
					t.Errorf("side %d: %+v, want %q with its citation, dated %s, newer %v", i+1, sides[i], want, tc.facts[i].Updated, i == 1)
				}
			}
			if sides[0].Sources[0] == sides[1].Sources[0] || len(ds[0].Sources) != 2 {
				t.Errorf("sides cite %v and %v (the sentence %v); want each its own block", sides[0].Sources, sides[1].Sources, ds[0].Sources)
			}
			for _, sec := range rep.Sections {
				for _, s := range sec.Sentences {
					if len(s.Sources) > 0 {
						t.Errorf("section %q shows %q again", sec.Title, s.Text)
					}
				}
			}
			heading := map[string]string{"en": "## Where the notes disagree", "ru": "## Где заметки расходятся"}[tc.lang]
			if !strings.Contains(rep.Markdown, heading+"\n\n- "+tc.lead+" "+strings.TrimRight(tc.sides[0], ".")+" [1]. "+strings.TrimRight(tc.sides[1], ".")+" [2].\n") {
				t.Errorf("the Markdown does not show the sides together under %q:\n%s", heading, rep.Markdown)
			}
		})
	}
}

func TestPassagesWithOtherNumbersOnOtherSubjectsDoNotDisagree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts []schemas.Fact
	}{
		{"other units: a history kept 30 days, made every 10 minutes", []schemas.Fact{
			evFact("f1", "b1", "History", "File history is kept for 30 days by default.", ""),
			evFact("f2", "b2", "History", "File history is made every 10 minutes for changed documents.", ""),
		}},
		{"an example value is no claim", []schemas.Fact{
			evFact("f1", "b1", "History", "File history size is limited to 128MB by default.", ""),
			evFact("f2", "b2", "History", "To raise the file history size, set for example 256MB in the settings.", ""),
		}},
		{"numbers inside paths and names", []schemas.Fact{
			evFact("f1", "b1", "History", "File history of 2022-05-01-095621-clean is kept in the history folder.", ""),
			evFact("f2", "b2", "History", "File history of the uid 1000/gid 1000 user is kept in the history folder.", ""),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := evReport(t, "How is file history kept?", "en", nil, tc.facts)
			if len(rep.Disagreements) > 0 {
				t.Errorf("disagreements %+v; want none", rep.Disagreements)
			}
		})
	}
}

func TestFactsTheModelMarkedContradictedAreShownSideBySide(t *testing.T) {
	a := evFact("f1", "b1", "Backup setup", "Backups run nightly.", "2024-01-05T00:00:00Z")
	a.ContradictedBy = []string{"f2"}
	b := evFact("f2", "b2", "Backup update", "Backups now run every six hours.", "2024-06-01T00:00:00Z")
	rep := evReport(t, "How often do backups run?", "en", nil, []schemas.Fact{a, b})
	if ds := rep.Disagreements; len(ds) != 1 || len(ds[0].Sides) != 2 || !strings.HasPrefix(ds[0].Text, "These notes disagree: ") ||
		!strings.HasSuffix(ds[0].Text, "2024-06-01, newer: Backups now run every six hours.") || !ds[0].Sides[1].Newer {
		t.Errorf("disagreements %+v; want the contradicted pair, the newer said", rep.Disagreements)
	}
}

func TestTheEvidenceReportSaysWhetherTheQuestionWasSearchedInTheNotesLanguage(t *testing.T) {
	passage := evFact("f1", "b1", "Snapshots", "Data snapshots are saved in the workspace/repo/ folder.", "")
	for _, tc := range []struct {
		name, lang, question string
		reasons              []string
		facts                []schemas.Fact
		want                 string
		passages             int
	}{
		{name: "a Russian question over English notes without a translator", lang: "ru", question: "Где сохраняются снимки данных?",
			reasons: []string{"retrieval: translation_unavailable: the question is in ru and notes are in en, but no language-model provider can translate it"},
			want:    "Заметки написаны на английском, а вопрос по-английски не искали: перевести его было нечем"},
		{name: "a Russian question searched translated", lang: "ru", question: "Где сохраняются снимки данных?",
			reasons: []string{"retrieval: translated: en: Where are data snapshots saved?"}, facts: []schemas.Fact{passage},
			want: "Вопрос искали и по-английски: «Where are data snapshots saved?».", passages: 1},
		{name: "an English question over Russian notes without a translator", lang: "en", question: "Where are data snapshots saved?",
			reasons: []string{"retrieval: translation_unavailable: the question is in en and notes are in ru, but no language-model provider can translate it"},
			want:    "The notes are in Russian, and the question was not searched in Russian: nothing could translate it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := evReport(t, tc.question, tc.lang, tc.reasons, tc.facts)
			if !strings.Contains(rep.Markdown, tc.want) {
				t.Errorf("the report does not say %q:\n%s", tc.want, rep.Markdown)
			}
			n := 0
			for _, ps := range passages(rep) {
				n += len(ps)
			}
			if n != tc.passages {
				t.Errorf("%d passages, want %d:\n%s", n, tc.passages, rep.Markdown)
			}
		})
	}
}

func TestSentencesCutAtFullStopsButNotInsideNumbersOrAbbreviations(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"English", "Version 3.1 is out. It syncs, e.g. notes and assets! Really?", []string{"Version 3.1 is out.", "It syncs, e.g. notes and assets!", "Really?"}},
		{"Russian", "Копии делаются ночью, т.е. в 02:00. Хранятся «на диске». Всё", []string{"Копии делаются ночью, т.е. в 02:00.", "Хранятся «на диске».", "Всё"}},
		{"lines", "First line\nSecond line.", []string{"First line", "Second line."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := research.Sentences(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("Sentences(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestAPassageIsTheBestSentenceOfABlockNeverAHeading(t *testing.T) {
	a := evAn(t)
	d := doc("history",
		[2]string{"h1", "## File history"},
		[2]string{"p0", "File history"},
		[2]string{"p1", "SiYuan keeps many things. Every 10 minutes, a history is generated for the documents updated within these 10 minutes. It can be turned off."},
		[2]string{"p2", "The cat likes the warm laptop."},
	)
	pf := research.NewPassageFinder(a, []research.Document{d}, "How often is a file history generated for updated documents?")
	got := pf.Passages(d, 2)
	if len(got) != 1 || got[0].Block.BlockID != "p1" {
		t.Fatalf("passages %+v; want the one block that answers", got)
	}
	want := "Every 10 minutes, a history is generated for the documents updated within these 10 minutes. It can be turned off."
	if got[0].Text != want {
		t.Errorf("passage %q, want the answering sentence with its neighbour: %q", got[0].Text, want)
	}
	f := got[0].Fact("f1")
	if f.BlockIDs[0] != "p1" || f.Citations[0].Quote != want || f.Citations[0].Title != "history" {
		t.Errorf("fact %+v", f)
	}
}

func TestTranslatedQuestionsAreReadFromRetrievalsReasons(t *testing.T) {
	got := research.TranslatedQuestions([]string{"no_llm_provider: x", "retrieval: translated: en: Where are snapshots saved?",
		"translated: ru: Где снимки?", "retrieval: translated: en: Where are snapshots saved?"})
	if !slices.Equal(got, []string{"Where are snapshots saved?", "Где снимки?"}) {
		t.Errorf("TranslatedQuestions = %q", got)
	}
}

// The other side of a disagreement is shown even when it holds fewer of
// the question's words than the passages kept: the older note's launch
// date is paired with the newer note's, not left out.
func TestAPassageThatDisagreesWithAKeptOneIsShownBesideItThoughItMatchesTheQuestionLess(t *testing.T) {
	for _, tc := range []struct {
		name, lang, question string
		facts                []schemas.Fact
		pairs                [][2]string // the values of each side
	}{
		{name: "two English meeting notes, a launch date and a budget each", lang: "en",
			question: "Where do my notes disagree about Project Aurora's launch date and budget?",
			facts: []schemas.Fact{
				evFact("f1", "b-st-launch", "Steering meeting", "The Aurora mobile app launch is planned for 2 June 2025, after the payment provider review.", "2025-02-20T15:00:00Z"),
				evFact("f2", "b-st-budget", "Steering meeting", "The project budget for Aurora is 18,500 EUR, because the payment integration was added.", "2025-02-20T15:00:00Z"),
				evFact("f3", "b-ki-budget", "Kickoff meeting", "The project budget for Aurora is 12,000 EUR, including the design work.", "2025-01-14T10:00:00Z"),
				evFact("f4", "b-ki-launch", "Kickoff meeting", "The Aurora mobile app launch is planned for 15 March 2025.", "2025-01-14T10:00:00Z"),
			},
			pairs: [][2]string{{"12,000 EUR", "18,500 EUR"}, {"15 March 2025", "2 June 2025"}}},
		{name: "two Russian meeting notes, a launch date and a budget each", lang: "ru",
			question: "Где мои заметки расходятся насчёт даты запуска и бюджета проекта Аврора?",
			facts: []schemas.Fact{
				evFact("f1", "b-st-launch", "Совещание в феврале", "Запуск мобильного приложения Аврора запланирован на 2 июня 2025 года, после проверки платёжного провайдера.", "2025-02-20T15:00:00Z"),
				evFact("f2", "b-st-budget", "Совещание в феврале", "Бюджет проекта Аврора составляет 18 500 евро, потому что добавили платёжную интеграцию.", "2025-02-20T15:00:00Z"),
				evFact("f3", "b-ki-budget", "Совещание в январе", "Бюджет проекта Аврора составляет 12 000 евро, включая дизайн.", "2025-01-14T10:00:00Z"),
				evFact("f4", "b-ki-launch", "Совещание в январе", "Запуск мобильного приложения Аврора запланирован на 15 марта 2025 года.", "2025-01-14T10:00:00Z"),
			},
			pairs: [][2]string{{"12 000 евро", "18 500 евро"}, {"15 марта 2025 года", "2 июня 2025 года"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := evReport(t, tc.question, tc.lang, nil, tc.facts)
			for _, want := range tc.pairs {
				found := false
				for _, d := range rep.Disagreements {
					if len(d.Sides) == 2 && strings.Contains(d.Sides[0].Text, want[0]) && strings.Contains(d.Sides[1].Text, want[1]) &&
						len(d.Sides[0].Sources) == 1 && len(d.Sides[1].Sources) == 1 && d.Sides[1].Newer && !d.Sides[0].Newer {
						found = true
					}
				}
				if !found {
					t.Errorf("no disagreement %s (older, cited) beside %s (newer, cited):\n%s", want[0], want[1], rep.Markdown)
				}
			}
		})
	}
}

// A plan built without the model ("<heading>: <question>" sub-questions)
// gives no sub-topics: the passages are grouped by the question's parts,
// never under sub-questions that say the notes have no passage on them.
func TestSubQuestionsPlannedWithoutTheModelAreNoSubTopics(t *testing.T) {
	reasons := []string{"plan_fallback: the plan reply is not the JSON asked for after 3 attempts; planned without the model: the question and 1 headings of the best documents"}
	for _, tc := range []struct {
		name, lang, question, heading string
		launch, budget                schemas.Fact
		parts                         []string
	}{
		{name: "English", lang: "en", question: "When does the Aurora app launch and what is the project budget?", heading: "Backup setup",
			launch: evFact("f1", "b1", "Kickoff", "The Aurora app launch is planned for 15 March 2025.", ""),
			budget: evFact("f2", "b2", "Kickoff", "The project budget for Aurora is 12,000 EUR.", ""),
			parts:  []string{"When does the Aurora app launch", "What is the project budget"}},
		{name: "Russian", lang: "ru", question: "Когда запуск приложения Аврора и какой бюджет проекта?", heading: "Резервное копирование",
			launch: evFact("f1", "b1", "Встреча", "Запуск приложения Аврора назначен на 15 марта 2025 года.", ""),
			budget: evFact("f2", "b2", "Встреча", "Бюджет проекта Аврора составляет 12 000 евро.", ""),
			parts:  []string{"Когда запуск приложения Аврора", "Какой бюджет проекта"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := []schemas.Fact{tc.launch, tc.budget}
			first[0].Reasoning = tc.question
			other := tc.budget
			other.ID, other.Reasoning = "f3", tc.heading+": "+tc.question
			rep := evReport(t, tc.question, tc.lang, reasons, first, []schemas.Fact{other})
			var titles []string
			for _, sec := range rep.Sections {
				titles = append(titles, sec.Title)
			}
			if !slices.Equal(titles, tc.parts) {
				t.Errorf("sections %q; want the question's parts %q:\n%s", titles, tc.parts, rep.Markdown)
			}
			if strings.Contains(rep.Markdown, tc.heading+":") {
				t.Errorf("a sub-question planned without the model is a section:\n%s", rep.Markdown)
			}
		})
	}
}
