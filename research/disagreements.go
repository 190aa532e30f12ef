package research

import (
	"slices"
	"strings"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// Disagreement is one place where the notes say different things: two
// facts of one task, one listing the other in its ContradictedBy (the fact
// step keeps both; see Facts.Apply).
//
// Older and Newer are the two sides, each with its own text, certainty,
// blocks, citations and note time (Fact.Updated). When both times are known
// and differ (Ordered), Older is the earlier note's fact and Newer the
// later one's, whichever of them the model flagged. Otherwise Older is the
// fact that was contradicted and Newer the fact that contradicts it, and
// the report must not call either newer.
//
// Change says the later note supersedes the earlier: the two are about the
// same subject and the newer one says that something changed ("now",
// "instead", "no longer", "updated", "теперь", "вместо", "больше не",
// "перенесли"... in its text, the quote of its block, or its note's title
// or section): a change over time ("backups ran nightly; since the update
// they run every 6 hours"), to be reported as a change, not as a conflict.
//
// A one-sided disagreement (the model said a document contradicts the fact
// but gave no fact for it, and no passage of it shares the fact's subject)
// has an empty Newer (Newer.ID == "") and OtherDoc naming the document:
// only one side is known, and the report must say so.
type Disagreement struct {
	Older, Newer schemas.Fact
	// Ordered: both note times are known and Newer's is later.
	Ordered bool
	// Change: Ordered, same subject, and the newer note says it changed.
	Change bool
	// OtherDoc is the contradicting document of a one-sided disagreement.
	OtherDoc string
	// Task is the index of the finding both facts come from
	// (DisagreementsOf; 0 for Disagreements).
	Task int
}

// OneSided tells whether only one side of the disagreement is known.
func (d Disagreement) OneSided() bool { return d.Newer.ID == "" }

// Disagreements lists the disagreements among one task's facts (a
// finding's Facts: fact ids are a task's own), in the order of the facts
// that were contradicted, each pair once.
func Disagreements(facts []schemas.Fact) []Disagreement {
	byID := map[string]schemas.Fact{}
	for _, f := range facts {
		byID[f.ID] = f
	}
	var out []Disagreement
	seen := map[[2]string]bool{}
	for _, f := range facts {
		for _, other := range f.ContradictedBy {
			if doc, ok := SideDocument(other); ok {
				out = append(out, Disagreement{Older: f, OtherDoc: doc})
				continue
			}
			g, ok := byID[other]
			if !ok || g.ID == f.ID {
				continue
			}
			pair := [2]string{min(f.ID, g.ID), max(f.ID, g.ID)}
			if seen[pair] {
				continue
			}
			seen[pair] = true
			out = append(out, pairOf(f, g))
		}
	}
	return out
}

// DisagreementsOf lists the disagreements of every finding (Task: the
// finding's index), a pair found by two tasks (the same blocks on each
// side) once.
func DisagreementsOf(findings []schemas.ResearchFinding) []Disagreement {
	var out []Disagreement
	seen := map[string]bool{}
	for i, fd := range findings {
		for _, d := range Disagreements(fd.Facts) {
			key := blockKey(d.Older) + "|" + blockKey(d.Newer) + "|" + d.OtherDoc
			if alt := blockKey(d.Newer) + "|" + blockKey(d.Older) + "|" + d.OtherDoc; seen[key] || seen[alt] {
				continue
			}
			seen[key] = true
			d.Task = i
			out = append(out, d)
		}
	}
	return out
}

func blockKey(f schemas.Fact) string {
	ids := slices.Clone(f.BlockIDs)
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// pairOf orders contradicted fact f and the fact g that contradicts it.
func pairOf(f, g schemas.Fact) Disagreement {
	d := Disagreement{Older: f, Newer: g}
	tf, okf := noteTime(f.Updated)
	tg, okg := noteTime(g.Updated)
	if okf && okg && !tf.Equal(tg) {
		d.Ordered = true
		if tg.Before(tf) {
			d.Older, d.Newer = g, f
		}
	}
	d.Change = d.Ordered && sameSubject(d.Older, d.Newer) && saysChanged(d.Newer)
	return d
}

func noteTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// saysChanged tells whether the fact, its blocks' quotes, or its note's
// title or section say that something changed (ChangeMarked).
func saysChanged(f schemas.Fact) bool {
	if ChangeMarked(f.Text) {
		return true
	}
	for _, c := range f.Citations {
		if ChangeMarked(c.Quote) || ChangeMarked(c.Title) || ChangeMarked(strings.Join(c.SectionPath, " \n ")) {
			return true
		}
	}
	return false
}

// sameSubject tells whether two facts share a content word (compared by
// its first five letters, answer.SubjectStems) or a number.
func sameSubject(x, y schemas.Fact) bool {
	xs := answer.SubjectStems(x.Text)
	for s := range answer.SubjectStems(y.Text) {
		if xs[s] {
			return true
		}
	}
	return false
}
