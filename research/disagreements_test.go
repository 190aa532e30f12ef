package research_test

import (
	"testing"

	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

func fact(id, text, updated string, blocks ...string) schemas.Fact {
	return schemas.Fact{ID: id, Text: text, Certainty: schemas.CertaintyMedium, Updated: updated, BlockIDs: blocks,
		Citations: []schemas.Citation{{BlockID: blocks[0], Quote: text}}}
}

func contradicted(f schemas.Fact, by ...string) schemas.Fact {
	f.ContradictedBy = by
	return f
}

func TestDisagreementsOrderTheSidesByTheirNotesAndTellAChange(t *testing.T) {
	const mar, apr = "2024-03-12T10:00:00Z", "2024-04-02T10:00:00Z"
	for _, tc := range []struct {
		name         string
		facts        []schemas.Fact
		older, newer string
		ordered      bool
		change       bool
	}{
		{"en: two meetings give two launch dates: the later one is newer, a conflict",
			[]schemas.Fact{contradicted(fact("f1", "The Falcon launch is planned for 15 May 2025.", mar, "m1"), "f2"),
				fact("f2", "The Falcon launch is planned for 1 June 2025.", apr, "n1")},
			"f1", "f2", true, false},
		{"ru: две встречи, две даты запуска: более поздняя новее, это расхождение",
			[]schemas.Fact{contradicted(fact("f1", "Запуск проекта Сокол назначен на 15 мая 2025 года.", mar, "m1"), "f2"),
				fact("f2", "Запуск проекта Сокол назначен на 1 июня 2025 года.", apr, "n1")},
			"f1", "f2", true, false},
		{"en: the later note says the backups now run every 6 hours: a change",
			[]schemas.Fact{contradicted(fact("f1", "Backups run every night at 02:00.", mar, "b1"), "f2"),
				fact("f2", "Backups now run every 6 hours.", apr, "c1")},
			"f1", "f2", true, true},
		{"ru: в более поздней заметке копии теперь делаются каждые 6 часов: это изменение",
			[]schemas.Fact{contradicted(fact("f1", "Резервные копии делаются каждую ночь в 02:00.", mar, "b1"), "f2"),
				fact("f2", "Резервные копии теперь делаются каждые 6 часов.", apr, "c1")},
			"f1", "f2", true, true},
		{"en: the model flagged the later note's fact: the earlier note is still the older side",
			[]schemas.Fact{contradicted(fact("f1", "Backups now run every 6 hours.", apr, "c1"), "f2"),
				fact("f2", "Backups run every night at 02:00.", mar, "b1")},
			"f2", "f1", true, true},
		{"ru: the change word is in the newer note's block, not its fact",
			[]schemas.Fact{contradicted(fact("f1", "Резервные копии делаются каждую ночь в 02:00.", mar, "b1"), "f2"),
				func() schemas.Fact {
					f := fact("f2", "Резервные копии делаются каждые 6 часов.", apr, "c1")
					f.Citations[0].Quote = "С марта резервные копии делаются каждые 6 часов вместо ночных."
					return f
				}()},
			"f1", "f2", true, true},
		{"en: a change word about another subject makes no change",
			[]schemas.Fact{contradicted(fact("f1", "Backups run every night at 02:00.", mar, "b1"), "f2"),
				fact("f2", "Catering is now ordered from Luigi's.", apr, "c1")},
			"f1", "f2", true, false},
		{"en: undated notes: the flagged fact is Older, neither is called newer",
			[]schemas.Fact{contradicted(fact("f1", "Backups run every night at 02:00.", "", "b1"), "f2"),
				fact("f2", "Backups now run every 6 hours.", apr, "c1")},
			"f1", "f2", false, false},
		{"ru: notes of the same time are not ordered",
			[]schemas.Fact{contradicted(fact("f1", "Рис варят в пропорции 1:2.", mar, "r1"), "f2"),
				fact("f2", "Рис теперь варят в пропорции 1:3.", mar, "r2")},
			"f1", "f2", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := research.Disagreements(tc.facts)
			if len(ds) != 1 {
				t.Fatalf("disagreements %+v; want one", ds)
			}
			d := ds[0]
			if d.Older.ID != tc.older || d.Newer.ID != tc.newer || d.Ordered != tc.ordered || d.Change != tc.change || d.OneSided() {
				t.Errorf("older %s newer %s ordered %v change %v; want %s, %s, %v, %v", d.Older.ID, d.Newer.ID, d.Ordered, d.Change,
					tc.older, tc.newer, tc.ordered, tc.change)
			}
			if len(d.Older.BlockIDs) == 0 || len(d.Newer.BlockIDs) == 0 || d.Older.Certainty == "" || d.Newer.Certainty == "" {
				t.Errorf("a side lost its blocks or certainty: %+v", d)
			}
		})
	}
}

func TestDisagreementsListEachPairOnceAndOneSidedOnesToo(t *testing.T) {
	facts := []schemas.Fact{
		contradicted(fact("f1", "The budget is 40000 euros.", "", "m1"), "f2"),
		contradicted(fact("f2", "The budget is 55000 euros.", "", "n1"), "f1"), // flagged both ways
		contradicted(fact("f3", "Запуск назначен на май.", "", "m2"), research.DocSide("встреча-апрель"), "f9"),
		fact("f4", "Catering is ordered from Luigi's.", "", "n2"),
	}
	ds := research.Disagreements(facts)
	if len(ds) != 2 {
		t.Fatalf("disagreements %+v; want the budget pair once and the one-sided launch date", ds)
	}
	if ds[0].Older.ID != "f1" || ds[0].Newer.ID != "f2" {
		t.Errorf("first %+v; want f1 against f2", ds[0])
	}
	if !ds[1].OneSided() || ds[1].Older.ID != "f3" || ds[1].OtherDoc != "встреча-апрель" {
		t.Errorf("second %+v; want f3 against the document встреча-апрель alone (f9 names no fact and is left out)", ds[1])
	}
}

func TestDisagreementsOfFindingsKeepTheirTaskAndListAPairFoundTwiceOnce(t *testing.T) {
	pair := []schemas.Fact{contradicted(fact("f1", "The budget is 40000 euros.", "", "m1"), "f2"), fact("f2", "The budget is 55000 euros.", "", "n1")}
	other := []schemas.Fact{contradicted(fact("f1", "Rice takes a 1:2 ratio.", "", "r1"), "f2"), fact("f2", "Рис варят в пропорции 1:3.", "", "r2")}
	ds := research.DisagreementsOf([]schemas.ResearchFinding{{Facts: pair}, {Facts: other}, {Facts: pair}})
	if len(ds) != 2 || ds[0].Task != 0 || ds[1].Task != 1 || ds[1].Older.BlockIDs[0] != "r1" {
		t.Errorf("disagreements %+v; want the budget pair from task 0 and the rice pair from task 1", ds)
	}
}

func TestChangeMarkedReadsBothLanguages(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Backups now run every 6 hours.", true},
		{"The launch was moved to June.", true},
		{"We no longer use the old NAS.", true},
		{"Резервные копии теперь делаются каждые 6 часов.", true},
		{"Запуск перенесли на июнь.", true},
		{"Старый NAS больше не используется.", true},
		{"Backups run every night at 02:00.", false},
		{"Резервные копии делаются каждую ночь.", false},
		{"Knowledge is power.", false}, // "now" inside a word
	} {
		t.Run(tc.text, func(t *testing.T) {
			if got := research.ChangeMarked(tc.text); got != tc.want {
				t.Errorf("ChangeMarked(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}
