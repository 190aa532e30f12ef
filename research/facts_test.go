package research_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

var (
	analyzerOnce sync.Once
	analyzer     *analysis.Analyzer
)

func fullAnalyzer(t *testing.T) *analysis.Analyzer {
	t.Helper()
	analyzerOnce.Do(func() {
		a, err := analysis.New(analysis.Full)
		if err != nil {
			t.Fatal(err)
		}
		analyzer = a
	})
	return analyzer
}

// datedDoc is doc with the note's own time.
func datedDoc(id, updated string, blocks ...[2]string) research.Document {
	d := doc(id, blocks...)
	d.Updated = updated
	return d
}

func ids(fs []schemas.Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// The stand-in model's kinds of error: a fact that changes what its block
// says is dropped, with the reason naming what the block lacks, and never
// kept with its value corrected.
func TestApplyDropsAFactWhoseBlockDoesNotStateItsValue(t *testing.T) {
	a := fullAnalyzer(t)
	for _, tc := range []struct {
		name, block, fact string
		keep              bool
		why               string
	}{
		{"en: the year as the note writes it is kept",
			"The Falcon launch is planned for March 2024.", "The Falcon launch is planned for March 2024.", true, ""},
		{"en: a changed year is dropped",
			"The Falcon launch is planned for March 2024.", "The Falcon launch is planned for March 2428.", false, `date "March 2428"`},
		{"ru: a changed year is dropped",
			"Запуск проекта Сокол запланирован на март 2024 года.", "Запуск проекта Сокол запланирован на март 2428 года.", false, `date "март 2428 года"`},
		{"en: a changed time is dropped",
			"The backup runs every night at 02:00 to the NAS.", "The backup runs every night at 02:03 to the NAS.", false, `time "02:03"`},
		{"ru: a changed time is dropped",
			"Резервное копирование запускается каждую ночь в 02:00 на NAS.", "Резервное копирование запускается каждую ночь в 02:03 на NAS.", false, `time "02:03"`},
		{"en: a changed ratio is dropped, though the block writes the number elsewhere",
			"Cook the rice with water in a ratio of 1:2:2 with a pinch of salt for 5 minutes.", "Cook the rice with water in a ratio of 1:2:5 with a pinch of salt.", false, `ratio "1:2:5"`},
		{"ru: a changed ratio is dropped, though the block writes the number elsewhere",
			"Варите рис с водой в пропорции 1:2:2 со щепоткой соли 5 минут.", "Варите рис с водой в пропорции 1:2:5 со щепоткой соли.", false, `ratio "1:2:5"`},
		{"en: an added clause is dropped",
			"The budget of the Falcon project is 40000 euros.", "The budget of the Falcon project is 40000 euros, which the board raised to cover hiring.", false, "clause"},
		{"ru: an added clause is dropped",
			"Бюджет проекта Сокол составляет 40000 евро.", "Бюджет проекта Сокол составляет 40000 евро, но совет директоров урезал его вдвое.", false, "clause"},
		{"en: an added condition is dropped",
			"The backup runs every night at 02:00 to the NAS.", "The backup runs every night at 02:00 to the NAS, but only when the laptop is plugged in.", false, `"only"`},
		{"ru: an added condition is dropped",
			"Резервное копирование запускается каждую ночь в 02:00 на NAS.", "Резервное копирование запускается каждую ночь в 02:00 на NAS, только если ноутбук подключён к сети.", false, `"только"`},
		{"en: a swapped name is dropped",
			"Anna approved the Falcon budget at the meeting.", "Boris approved the Falcon budget at the meeting.", false, `name "Boris"`},
		{"ru: a swapped name is dropped",
			"Бюджет проекта Сокол на встрече утвердила Анна.", "Бюджет проекта Сокол на встрече утвердил Борис.", false, `name "Борис"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs research.Facts
			ap := fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: tc.fact, Certainty: "high", BlockIDs: []string{"b1"}}}},
				doc("d1", [2]string{"b1", tc.block}))
			if tc.keep {
				if len(fs.List) != 1 || fs.List[0].Text != tc.fact {
					t.Fatalf("facts %+v (reasons %q); want the fact kept as written", fs.List, ap.Reasons)
				}
				return
			}
			if len(fs.List) != 0 || ap.Unsupported != 1 || fs.Dropped != 1 {
				t.Fatalf("facts %+v, applied %+v; want the fact dropped and counted", fs.List, ap)
			}
			if len(ap.Reasons) != 1 || !strings.Contains(ap.Reasons[0], "not_stated") || !strings.Contains(ap.Reasons[0], tc.why) {
				t.Errorf("reasons %q; want not_stated naming %s", ap.Reasons, tc.why)
			}
		})
	}
}

// An update is checked as a new fact is: one whose new text changes a
// value is dropped and the fact stays as it was.
func TestApplyDropsAnUpdateThatChangesAValue(t *testing.T) {
	a := fullAnalyzer(t)
	for _, tc := range []struct{ name, block, fact, update string }{
		{"en", "The Falcon launch is planned for 15 May 2025.", "The Falcon launch is planned for 15 May 2025.", "The Falcon launch is planned for 15 May 2052."},
		{"ru", "Запуск проекта Сокол назначен на 15 мая 2025 года.", "Запуск проекта Сокол назначен на 15 мая 2025 года.", "Запуск проекта Сокол назначен на 15 мая 2052 года."},
	} {
		t.Run(tc.name+": the fact keeps its value", func(t *testing.T) {
			var fs research.Facts
			fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: tc.fact, Certainty: "medium", BlockIDs: []string{"b1"}}}},
				doc("d1", [2]string{"b1", tc.block}))
			ap := fs.Apply(a, research.FactStep{Updated: []research.StepFact{{ID: "f1", Text: tc.update, Certainty: "high"}}},
				doc("d2", [2]string{"c1", "Nothing about it."}))
			if ap.Unsupported != 1 || len(fs.List) != 1 || fs.List[0].Text != tc.fact || fs.List[0].Certainty != schemas.CertaintyMedium {
				t.Errorf("applied %+v, facts %+v; want the update dropped, f1 unchanged", ap, fs.List)
			}
		})
	}
}

// The model cites the block before or after the one that states the fact:
// the fact is re-cited there and the move recorded; a block two away is no
// neighbour, and a neighbour must state the fact's values too.
func TestApplyRecitesAFactToTheNeighbouringBlock(t *testing.T) {
	a := fullAnalyzer(t)
	en := doc("notes-en",
		[2]string{"e1", "## Backups"},
		[2]string{"e2", "The backup runs every night at 02:00 to the NAS."},
		[2]string{"e3", "Old snapshots are deleted after 30 days."},
		[2]string{"e4", "The NAS sits in the hallway cupboard."})
	ru := doc("notes-ru",
		[2]string{"r1", "## Резервные копии"},
		[2]string{"r2", "Резервное копирование запускается каждую ночь в 02:00 на NAS."},
		[2]string{"r3", "Старые снимки удаляются через 30 дней."},
		[2]string{"r4", "NAS стоит в шкафу в прихожей."})
	for _, tc := range []struct {
		name     string
		d        research.Document
		fact     string
		cites    string
		want     string // the block it rests on after the step; "" dropped
		movedOff string
	}{
		{"en: a fact citing the next block moves back to its own", en, "The backup runs every night at 02:00 to the NAS.", "e3", "e2", "e3"},
		{"en: a fact citing the previous block moves on to its own", en, "Old snapshots are deleted after 30 days.", "e2", "e3", "e2"},
		{"en: a fact citing its own block stays", en, "Old snapshots are deleted after 30 days.", "e3", "e3", ""},
		{"en: a block two away is no neighbour", en, "The NAS sits in the hallway cupboard.", "e2", "", ""},
		{"en: a neighbour must state the value too", en, "Old snapshots are deleted after 60 days.", "e2", "", ""},
		{"ru: a fact citing the next block moves back to its own", ru, "Резервное копирование запускается каждую ночь в 02:00 на NAS.", "r3", "r2", "r3"},
		{"ru: a fact citing the previous block moves on to its own", ru, "Старые снимки удаляются через 30 дней.", "r2", "r3", "r2"},
		{"ru: a block two away is no neighbour", ru, "NAS стоит в шкафу в прихожей.", "r2", "", ""},
		{"ru: a neighbour must state the value too", ru, "Старые снимки удаляются через 60 дней.", "r2", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs research.Facts
			ap := fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: tc.fact, Certainty: "high", BlockIDs: []string{tc.cites}}}}, tc.d)
			if tc.want == "" {
				if len(fs.List) != 0 || len(ap.Moved) != 0 {
					t.Fatalf("facts %+v, moved %+v; want the fact dropped", fs.List, ap.Moved)
				}
				return
			}
			if len(fs.List) != 1 || strings.Join(fs.List[0].BlockIDs, ",") != tc.want || len(fs.List[0].Citations) != 1 || fs.List[0].Citations[0].BlockID != tc.want {
				t.Fatalf("facts %+v (reasons %q); want the fact on %s", fs.List, ap.Reasons, tc.want)
			}
			if tc.movedOff == "" {
				if len(ap.Moved) != 0 || fs.Moved != 0 {
					t.Errorf("moved %+v; want none", ap.Moved)
				}
				return
			}
			if len(ap.Moved) != 1 || ap.Moved[0] != (research.Move{Fact: "f1", From: tc.movedOff, To: tc.want}) || fs.Moved != 1 {
				t.Errorf("moved %+v (total %d); want f1 from %s to %s", ap.Moved, fs.Moved, tc.movedOff, tc.want)
			}
		})
	}
}

// Meeting notes that disagree: the fact the later note contradicts stays,
// with its certainty, blocks and time, and names the fact that says
// otherwise.
func TestApplyKeepsAContradictedFactAndNamesTheOtherSide(t *testing.T) {
	a := fullAnalyzer(t)
	type lang struct {
		name                    string
		early, late             research.Document
		old, other, unrelated   string
		oldBlock, otherBlock    string
		unrelatedBlock, passage string
	}
	langs := []lang{{
		name: "en",
		early: datedDoc("meeting-mar", "2024-03-12T10:00:00Z",
			[2]string{"m1", "The Falcon launch is planned for 15 May 2025."}),
		late: datedDoc("meeting-apr", "2024-04-02T10:00:00Z",
			[2]string{"n1", "The Falcon launch is now planned for 1 June 2025."},
			[2]string{"n2", "Catering for the party is ordered from Luigi's."}),
		old: "The Falcon launch is planned for 15 May 2025.", other: "The Falcon launch is now planned for 1 June 2025.",
		unrelated: "Catering for the party is ordered from Luigi's.", oldBlock: "m1", otherBlock: "n1", unrelatedBlock: "n2",
		passage: "The Falcon launch is now planned for 1 June 2025.",
	}, {
		name: "ru",
		early: datedDoc("встреча-март", "2024-03-12T10:00:00Z",
			[2]string{"m1", "Запуск проекта Сокол назначен на 15 мая 2025 года."}),
		late: datedDoc("встреча-апрель", "2024-04-02T10:00:00Z",
			[2]string{"n1", "Запуск проекта Сокол теперь назначен на 1 июня 2025 года."},
			[2]string{"n2", "Еду для праздника заказали в кафе «Луиджи»."}),
		old: "Запуск проекта Сокол назначен на 15 мая 2025 года.", other: "Запуск проекта Сокол теперь назначен на 1 июня 2025 года.",
		unrelated: "Еду для праздника заказали в кафе «Луиджи».", oldBlock: "m1", otherBlock: "n1", unrelatedBlock: "n2",
		passage: "Запуск проекта Сокол теперь назначен на 1 июня 2025 года.",
	}}
	for _, l := range langs {
		for _, tc := range []struct {
			name string
			step research.FactStep
			// want: the contradicting fact's text ("" a document side)
			want string
			news int
		}{
			{"the new fact the model gives beside the flag is the other side",
				research.FactStep{New: []research.StepFact{{Text: l.other, Certainty: "high", BlockIDs: []string{l.otherBlock}}}, Contradicted: []string{"f1"}},
				l.other, 1},
			{"of two new facts, the one about the same subject is the other side",
				research.FactStep{New: []research.StepFact{
					{Text: l.unrelated, Certainty: "high", BlockIDs: []string{l.unrelatedBlock}},
					{Text: l.other, Certainty: "high", BlockIDs: []string{l.otherBlock}}}, Contradicted: []string{"f1"}},
				l.other, 2},
			{"a new fact that names the fact it contradicts is the other side",
				research.FactStep{New: []research.StepFact{
					{Text: l.other, Certainty: "high", BlockIDs: []string{l.otherBlock}, Contradicts: research.IDs{"f1"}},
					{Text: l.unrelated, Certainty: "high", BlockIDs: []string{l.unrelatedBlock}}}},
				l.other, 2},
			{"a flag without a fact takes the passage about the same subject",
				research.FactStep{Contradicted: []string{"f1"}}, l.passage, 1},
			{"an update that gives another date is the other side, not a rewrite",
				research.FactStep{Updated: []research.StepFact{{ID: "f1", Text: l.other, Certainty: "high", BlockIDs: []string{l.otherBlock}}}},
				l.other, 1},
		} {
			t.Run(l.name+": "+tc.name, func(t *testing.T) {
				var fs research.Facts
				fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: l.old, Certainty: "medium", BlockIDs: []string{l.oldBlock}}}}, l.early)
				ap := fs.Apply(a, tc.step, l.late)
				if ap.Contradicted != 1 || ap.New != tc.news || len(fs.List) != 1+tc.news || fs.Dropped != 0 {
					t.Fatalf("applied %+v, facts %+v; want f1 kept and %d new", ap, fs.List, tc.news)
				}
				old := fs.List[0]
				if old.ID != "f1" || old.Text != l.old || old.Certainty != schemas.CertaintyMedium || strings.Join(old.BlockIDs, ",") != l.oldBlock ||
					old.Updated != "2024-03-12T10:00:00Z" {
					t.Errorf("f1 = %+v; want it as it was, dated by its note", old)
				}
				if len(old.ContradictedBy) != 1 {
					t.Fatalf("f1 contradicted by %q; want one fact", old.ContradictedBy)
				}
				var other schemas.Fact
				for _, f := range fs.List {
					if f.ID == old.ContradictedBy[0] {
						other = f
					}
				}
				if other.Text != tc.want || strings.Join(other.BlockIDs, ",") != l.otherBlock || other.Updated != "2024-04-02T10:00:00Z" || len(other.ContradictedBy) != 0 {
					t.Errorf("the other side %+v (of %+v); want %q on %s, dated by its note", other, fs.List, tc.want, l.otherBlock)
				}
				ds := research.Disagreements(fs.List)
				if len(ds) != 1 || ds[0].Older.ID != "f1" || ds[0].Newer.ID != other.ID || !ds[0].Ordered {
					t.Errorf("disagreements %+v; want f1 older than %s", ds, other.ID)
				}
			})
		}
	}
}

func TestApplyRecordsAOneSidedContradictionWhenTheDocumentHasNothingOnTheSubject(t *testing.T) {
	a := fullAnalyzer(t)
	for _, tc := range []struct{ name, old, elsewhere string }{
		{"en", "The Falcon launch is planned for 15 May 2025.", "Catering for the party is ordered from Luigi's."},
		{"ru", "Запуск проекта Сокол назначен на 15 мая 2025 года.", "Еду для праздника заказали в кафе у Луиджи."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs research.Facts
			fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: tc.old, BlockIDs: []string{"m1"}}}}, doc("early", [2]string{"m1", tc.old}))
			ap := fs.Apply(a, research.FactStep{Contradicted: []string{"f1"}}, doc("late", [2]string{"n1", tc.elsewhere}))
			if ap.Contradicted != 1 || len(fs.List) != 1 || strings.Join(fs.List[0].ContradictedBy, ",") != research.DocSide("late") {
				t.Fatalf("applied %+v, facts %+v; want f1 kept, contradicted by the document alone", ap, fs.List)
			}
			ds := research.Disagreements(fs.List)
			if len(ds) != 1 || !ds[0].OneSided() || ds[0].OtherDoc != "late" || ds[0].Older.ID != "f1" {
				t.Errorf("disagreements %+v; want one, one-sided, naming the document", ds)
			}
		})
	}
}

// An update that refines a fact (adds what the new block says, changes no
// value) still changes it in place.
func TestApplyUpdatesAFactThatARefinementConfirms(t *testing.T) {
	a := fullAnalyzer(t)
	for _, tc := range []struct{ name, block1, fact, block2, refined string }{
		{"en", "Backups run every night.", "Backups run every night.", "Backups run every night at 02:00 to the NAS.", "Backups run every night at 02:00 to the NAS."},
		{"ru", "Резервные копии делаются каждую ночь.", "Резервные копии делаются каждую ночь.", "Резервные копии делаются каждую ночь в 02:00 на NAS.", "Резервные копии делаются каждую ночь в 02:00 на NAS."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs research.Facts
			fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: tc.fact, BlockIDs: []string{"b1"}}}}, doc("d1", [2]string{"b1", tc.block1}))
			ap := fs.Apply(a, research.FactStep{Updated: []research.StepFact{{ID: "f1", Text: tc.refined, Certainty: "high", BlockIDs: []string{"c1"}}}},
				doc("d2", [2]string{"c1", tc.block2}))
			if ap.Updated != 1 || ap.Contradicted != 0 || len(fs.List) != 1 || fs.List[0].Text != tc.refined || len(fs.List[0].ContradictedBy) != 0 {
				t.Errorf("applied %+v, facts %+v; want f1 refined in place", ap, fs.List)
			}
		})
	}
}

// The same fact said again, quoted, or after "According to ..." is one
// fact: the wording its blocks hold best, all its blocks.
func TestApplyMergesDuplicateFacts(t *testing.T) {
	a := fullAnalyzer(t)
	for _, tc := range []struct {
		name   string
		block  string
		first  string
		second string
		merged bool
		want   string // the kept wording
	}{
		{"en: said again verbatim", "The backup runs every night at 02:00 to the NAS.",
			"The backup runs every night at 02:00 to the NAS.", "The backup runs every night at 02:00 to the NAS.", true, "The backup runs every night at 02:00 to the NAS."},
		{"en: quoted, the blocks hold both alike: the more certain wording is kept", "The backup runs every night at 02:00 to the NAS.",
			"The backup runs every night at 02:00 to the NAS.", "«The backup runs every night at 02:00 to the NAS.»", true, "«The backup runs every night at 02:00 to the NAS.»"},
		{"en: after According to, the plainer wording is kept", "The backup runs every night at 02:00 to the NAS.",
			"According to the backup setup note, the backup runs every night at 02:00 to the NAS.", "The backup runs every night at 02:00 to the NAS.", true,
			"The backup runs every night at 02:00 to the NAS."},
		{"en: another time is another fact", "The backup runs every night at 02:00 to the NAS, and a second copy at 03:00.",
			"The backup runs every night at 02:00 to the NAS.", "The backup runs every night at 03:00 to the NAS.", false, ""},
		{"ru: said again in lower case, the wording the block writes is kept", "Резервное копирование запускается каждую ночь в 02:00 на NAS.",
			"Резервное копирование запускается каждую ночь в 02:00 на NAS.", "резервное копирование запускается каждую ночь в 02:00 на NAS", true,
			"Резервное копирование запускается каждую ночь в 02:00 на NAS."},
		{"ru: quoted, the blocks hold both alike: the more certain wording is kept", "Резервное копирование запускается каждую ночь в 02:00 на NAS.",
			"«Резервное копирование запускается каждую ночь в 02:00 на NAS».", "Резервное копирование запускается каждую ночь в 02:00 на NAS.", true,
			"Резервное копирование запускается каждую ночь в 02:00 на NAS."},
		{"ru: after «В заметке сказано, что» the plainer wording is kept", "Резервное копирование запускается каждую ночь в 02:00 на NAS.",
			"В заметке о бэкапах сказано, что резервное копирование запускается каждую ночь в 02:00 на NAS.",
			"Резервное копирование запускается каждую ночь в 02:00 на NAS.", true, "Резервное копирование запускается каждую ночь в 02:00 на NAS."},
		{"ru: after «По словам Анны» the wording the block holds best is kept", "Анна говорит: резервное копирование запускается каждую ночь в 02:00 на NAS.",
			"По словам Анны, резервное копирование запускается каждую ночь в 02:00 на NAS.",
			"Резервное копирование запускается каждую ночь в 02:00 на NAS.", true, "Резервное копирование запускается каждую ночь в 02:00 на NAS."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := doc("d1", [2]string{"b1", tc.block})
			// In one step, and across two steps (the second fact citing
			// the same block from a second reading).
			for _, split := range []bool{false, true} {
				var fs research.Facts
				first := research.StepFact{Text: tc.first, Certainty: "medium", BlockIDs: []string{"b1"}}
				second := research.StepFact{Text: tc.second, Certainty: "high", BlockIDs: []string{"b1"}}
				merged := 0
				if split {
					merged += fs.Apply(a, research.FactStep{New: []research.StepFact{first}}, d).Merged
					merged += fs.Apply(a, research.FactStep{New: []research.StepFact{second}}, d).Merged
				} else {
					merged += fs.Apply(a, research.FactStep{New: []research.StepFact{first, second}}, d).Merged
				}
				if !tc.merged {
					if len(fs.List) != 2 || merged != 0 {
						t.Fatalf("split %v: facts %+v; want two facts", split, fs.List)
					}
					continue
				}
				if len(fs.List) != 1 || merged != 1 || fs.Merged != 1 {
					t.Fatalf("split %v: facts %+v, merged %d; want one fact", split, fs.List, merged)
				}
				f := fs.List[0]
				if f.ID != "f1" || f.Text != tc.want || f.Certainty != schemas.CertaintyHigh || strings.Join(f.BlockIDs, ",") != "b1" {
					t.Errorf("split %v: fact %+v; want f1 worded %q, high, on b1", split, f, tc.want)
				}
			}
		})
	}
}

func TestMergeKeepsTheUnionOfBlocksAndMovesContradictions(t *testing.T) {
	a := fullAnalyzer(t)
	d := doc("d1", [2]string{"b1", "The backup runs every night at 02:00 to the NAS."},
		[2]string{"b2", "Every night at 02:00 the backup runs to the NAS, as set up in May."})
	var fs research.Facts
	fs.Apply(a, research.FactStep{New: []research.StepFact{
		{Text: "The backup runs every night at 02:00 to the NAS.", Certainty: "medium", BlockIDs: []string{"b1"}},
		{Text: "According to the setup note, the backup runs every night at 02:00 to the NAS.", Certainty: "medium", BlockIDs: []string{"b1", "b2"}},
	}}, d)
	if len(fs.List) != 1 || strings.Join(fs.List[0].BlockIDs, ",") != "b1,b2" || len(fs.List[0].Citations) != 2 {
		t.Fatalf("facts %+v; want one fact on b1 and b2", fs.List)
	}
	later := datedDoc("d2", "2025-01-10T00:00:00Z", [2]string{"c1", "Since the update the backup now runs every 6 hours to the NAS."})
	fs.Apply(a, research.FactStep{New: []research.StepFact{{Text: "The backup now runs every 6 hours to the NAS.", BlockIDs: []string{"c1"}}},
		Contradicted: []string{"f2"}}, later) // f2 was merged into f1
	if len(fs.List) != 2 || len(fs.List[0].ContradictedBy) != 0 {
		t.Errorf("facts %+v; a contradiction of a merged id names no fact", fs.List)
	}
}

func TestClaimKeyLeavesOutWhatSaysWhereAClaimComesFrom(t *testing.T) {
	for _, tc := range []struct{ name, x, y string }{
		{"en: According to", "According to the meeting notes of 12 March, the launch is on 15 May 2025.", "The launch is on 15 May 2025."},
		{"en: a trailing attribution", "The launch is on 15 May 2025, according to Anna.", "the launch is on 15 May 2025"},
		{"en: the note says that", "The meeting note says that the launch is on 15 May 2025.", "The launch is on 15 May 2025!"},
		{"en: curly and straight quotes", "“The launch is on 15 May 2025.”", "\"The launch is on 15 May 2025\"."},
		{"ru: По словам", "По словам Анны, запуск назначен на 15 мая 2025 года.", "Запуск назначен на 15 мая 2025 года."},
		{"ru: Согласно", "Согласно протоколу встречи, запуск назначен на 15 мая 2025 года.", "запуск назначен на 15 мая 2025 года"},
		{"ru: В заметке сказано", "В заметке сказано: «запуск назначен на 15 мая 2025 года».", "Запуск назначен на 15 мая 2025 года."},
		{"ru: ё и е", "Бюджет утверждён.", "Бюджет утвержден"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !research.SameClaim(tc.x, tc.y) {
				t.Errorf("%q and %q: keys %q and %q differ", tc.x, tc.y, research.ClaimKey(tc.x), research.ClaimKey(tc.y))
			}
		})
	}
	for _, tc := range []struct{ name, x, y string }{
		{"en: another date", "The launch is on 15 May 2025.", "The launch is on 1 June 2025."},
		{"ru: another time", "Бэкап в 02:00.", "Бэкап в 02:03."},
		{"en: a negation", "The backup runs at night.", "The backup never runs at night."},
	} {
		t.Run(tc.name+" is another claim", func(t *testing.T) {
			if research.SameClaim(tc.x, tc.y) {
				t.Errorf("%q and %q: one key %q", tc.x, tc.y, research.ClaimKey(tc.x))
			}
		})
	}
}

func TestParseFactStepReadsTheContradictsLink(t *testing.T) {
	for _, tc := range []struct{ name, reply, want string }{
		{"a list", `{"new":[{"text":"x","block_ids":["b1"],"contradicts":["f2","f3"]}]}`, "f2,f3"},
		{"one id alone", `{"new":[{"text":"x","block_ids":["b1"],"contradicts":"f2"}]}`, "f2"},
		{"numbers and objects", `{"new":[{"text":"x","block_ids":["b1"],"contradicts":[2,{"id":"f4"}]}]}`, "f2,f4"},
		{"nothing", `{"new":[{"text":"x","block_ids":["b1"],"contradicts":null}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, err := research.ParseFactStep(tc.reply)
			if err != nil || len(step.New) != 1 {
				t.Fatalf("step %+v, err %v", step, err)
			}
			if got := strings.Join(step.New[0].Contradicts, ","); got != tc.want {
				t.Errorf("contradicts %q, want %q", got, tc.want)
			}
		})
	}
}
