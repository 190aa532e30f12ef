package research

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// This file is the report side of contradictions: the pairs of facts that
// say otherwise (schemas.Fact.ContradictedBy), under the report's fact ids,
// as the draft and report prompts receive them and as the report's "where
// the notes disagree" section states them.

// conflict is one disagreement the facts of a report hold: Old is a fact,
// New one that says otherwise; Old is the older when their notes' times say
// which is (Dated), else the fact that was contradicted.
type conflict struct {
	Old, New         numberedFact
	OldTime, NewTime time.Time // zero when unknown
	// Dated: both notes' times are known and differ, so New is the newer.
	Dated bool
	// OtherDoc: a one-sided disagreement: the document said to contradict
	// Old, of which no fact was kept (New is then empty).
	OtherDoc string
}

// docSidePrefix starts a ContradictedBy entry that names a document, not a
// fact (the fact step's research.DocSidePrefix): only one side is known.
const docSidePrefix = "doc:"

// disagreementPairs pairs every fact with the facts that contradict it. A fact's
// ContradictedBy names facts of its own finding (a task's ids, f1, f2 ...);
// an id that names no fact there is left out. A pair found twice (by two
// sub-questions, or from both sides) is kept once.
func disagreementPairs(facts []numberedFact) []conflict {
	type key struct {
		task int
		id   string
	}
	byLocal := map[key]numberedFact{}
	for _, nf := range facts {
		if nf.Fact.ID != "" {
			if _, ok := byLocal[key{nf.Task, nf.Fact.ID}]; !ok {
				byLocal[key{nf.Task, nf.Fact.ID}] = nf
			}
		}
	}
	var out []conflict
	seen := map[string]bool{}
	for _, nf := range facts {
		for _, id := range nf.Fact.ContradictedBy {
			if doc, ok := strings.CutPrefix(strings.TrimSpace(id), docSidePrefix); ok && doc != "" {
				if k := pairKey(nf, numberedFact{}) + "|" + doc; !seen[k] {
					seen[k] = true
					out = append(out, conflict{Old: nf, OldTime: factTime(nf.Fact.Updated), OtherDoc: doc})
				}
				continue
			}
			other, ok := byLocal[key{nf.Task, strings.TrimSpace(id)}]
			if !ok || other.ID == nf.ID {
				continue
			}
			k := pairKey(nf, other)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, newConflict(nf, other))
		}
	}
	return out
}

// pairKey names a pair by its sides' texts and blocks, in either order.
func pairKey(a, b numberedFact) string {
	side := func(nf numberedFact) string {
		ids := slices.Clone(nf.Fact.BlockIDs)
		slices.Sort(ids)
		return strings.ToLower(oneLine(nf.Fact.Text)) + "|" + strings.Join(ids, ",")
	}
	x, y := side(a), side(b)
	if x > y {
		x, y = y, x
	}
	return x + "||" + y
}

// newConflict orders a contradicted fact and the fact that contradicts it
// by their notes' times.
func newConflict(contradicted, by numberedFact) conflict {
	c := conflict{Old: contradicted, New: by, OldTime: factTime(contradicted.Fact.Updated), NewTime: factTime(by.Fact.Updated)}
	if !c.OldTime.IsZero() && !c.NewTime.IsZero() && !c.OldTime.Equal(c.NewTime) {
		c.Dated = true
		if c.NewTime.Before(c.OldTime) {
			c.Old, c.New, c.OldTime, c.NewTime = c.New, c.Old, c.NewTime, c.OldTime
		}
	}
	return c
}

// factTime reads a fact's note time: RFC 3339, a date, or SiYuan's
// YYYYMMDDhhmmss; zero when it is none of these.
func factTime(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02", "20060102150405"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// dates are the two sides' times as the report writes them: the day, and
// the time of day too when both are of the same day.
func (c conflict) dates() (older, newer string) {
	layout := "2006-01-02"
	if !c.OldTime.IsZero() && !c.NewTime.IsZero() && c.OldTime.Format(layout) == c.NewTime.Format(layout) {
		layout = "2006-01-02 15:04"
	}
	f := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(layout)
	}
	return f(c.OldTime), f(c.NewTime)
}

// writeConflicts lists the pairs for the draft and report prompts, the
// older side first:
//
//	<disagreement facts="F2,F5" dates="2024-03-12,2024-04-02" newer="F5"/>
func writeConflicts(b *strings.Builder, cs []conflict, shown map[string]bool) {
	var lines []string
	for _, c := range cs {
		if c.OtherDoc != "" {
			if shown == nil || shown[c.Old.ID] {
				od, _ := c.dates()
				lines = append(lines, fmt.Sprintf("<disagreement facts=%q dates=%q newer=\"\" other_document=%q/>", c.Old.ID, od, c.OtherDoc))
			}
			continue
		}
		if shown != nil && (!shown[c.Old.ID] || !shown[c.New.ID]) {
			continue
		}
		od, nd := c.dates()
		newer := ""
		if c.Dated {
			newer = c.New.ID
		}
		lines = append(lines, fmt.Sprintf("<disagreement facts=%q dates=%q newer=%q/>", c.Old.ID+","+c.New.ID, od+","+nd, newer))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nFacts that disagree (each pair says otherwise about one thing; dates are the notes' own, older first; " +
		"other_document: a note said to say otherwise, of which no fact could be checked):\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}

// changeWords mark a note that says something changed: the newer side of a
// disagreement that is a change over time.
var changeWords = regexp.MustCompile(`(?i)(?:^|[^\p{L}])(?:since|from now on|now|no longer|instead|changed|switched|moved|updated?|replaced|теперь|отныне|вместо|больше не|перешли|перенесл\p{L}*|перенес\p{L}*|изменил\p{L}*|обновл\p{L}*|с тех пор|начиная с)(?:$|[^\p{L}])`)

// change tells whether the newer side says that something changed (or both
// sides are one note's versions): the section then says "was X; since
// <date> Y".
func (c conflict) change(oldTitle, newTitle string) bool {
	if !c.Dated {
		return false
	}
	if c.Old.Fact.DocID != "" && c.Old.Fact.DocID == c.New.Fact.DocID {
		return true
	}
	return changeWords.MatchString(c.New.Fact.Text) || changeWords.MatchString(newTitle)
}

// disagreementTexts are the section's fixed words.
var disagreementTexts = map[string]map[string]string{
	"en": {
		"intro":        "The notes disagree: ",
		"says":         "%s (%s):",
		"says_undated": "%s:",
		"newer":        "the newer %s (%s):",
		"same_time":    "%s (also %s):",
		"unknown":      " (which is newer is not known)",
		"was":          "%s (%s) said:",
		"since":        "since %s (%s):",
		"one_sided":    "%s says otherwise; what it says could not be checked against its blocks.",
	},
	"ru": {
		"intro":        "Заметки расходятся: ",
		"says":         "«%s» (%s):",
		"says_undated": "«%s»:",
		"newer":        "более новая «%s» (%s):",
		"same_time":    "«%s» (тоже %s):",
		"unknown":      " (какая из заметок новее, неизвестно)",
		"was":          "«%s» (%s):",
		"since":        "с %s («%s»):",
		"one_sided":    "«%s» утверждает иное; это не удалось проверить по её блокам.",
	},
}

func disagreementText(lang, key string) string {
	if t, ok := disagreementTexts[lang][key]; ok {
		return t
	}
	return disagreementTexts["en"][key]
}

// sideText is a fact's text as a side of a sentence: trimmed of its final
// punctuation, ended by end.
func sideText(text, end string) string {
	text = strings.TrimRight(oneLine(text), ".!?…;,: ")
	// After the lead's colon a sentence that opens with a function word
	// ("The launch ...") goes on in lower case; a name keeps its capital.
	if first, _, _ := strings.Cut(text, " "); first != "" && analysis.IsStopword(strings.ToLower(first)) {
		r, size := utf8.DecodeRuneInString(text)
		text = string(unicode.ToLower(r)) + text[size:]
	}
	return text + end
}

// conflictSentence states a pair deterministically, each side with its own
// blocks and date: "The notes disagree: A (2024-03-12): X [1]; the newer B
// (2024-04-02): Y [2]." — or, for a change over time, "A (2024-01-10) said:
// X [1]; since 2024-03-01 (B): Y [2]."
func (b *builder) conflictSentence(c conflict) pendingSentence {
	if c.OtherDoc != "" {
		// One side known: it is stated with its blocks, the other named.
		od, _ := c.dates()
		old := pendingSide{lead: disagreementText(b.lang, "intro") + b.undated(b.factTitle(c.Old.Fact), od),
			text: sideText(c.Old.Fact.Text, ";"), blocks: c.Old.Fact.BlockIDs, updated: c.Old.Fact.Updated, fact: c.Old.ID}
		other := pendingSide{lead: fmt.Sprintf(disagreementText(b.lang, "one_sided"), b.docTitle(c.OtherDoc))}
		return pendingSentence{sides: []pendingSide{old, other}}
	}
	oldTitle, newTitle := b.factTitle(c.Old.Fact), b.factTitle(c.New.Fact)
	od, nd := c.dates()
	t := func(key string, args ...any) string { return fmt.Sprintf(disagreementText(b.lang, key), args...) }
	old := pendingSide{text: sideText(c.Old.Fact.Text, ";"), blocks: c.Old.Fact.BlockIDs, updated: c.Old.Fact.Updated, fact: c.Old.ID}
	nw := pendingSide{text: sideText(c.New.Fact.Text, "."), blocks: c.New.Fact.BlockIDs, updated: c.New.Fact.Updated, newer: c.Dated, fact: c.New.ID}
	switch {
	case c.change(oldTitle, newTitle):
		old.lead = t("was", oldTitle, od)
		nw.lead = t("since", nd, newTitle)
	case c.Dated:
		old.lead = disagreementText(b.lang, "intro") + t("says", oldTitle, od)
		nw.lead = t("newer", newTitle, nd)
	case od != "" && od == nd:
		old.lead = disagreementText(b.lang, "intro") + t("says", oldTitle, od)
		nw.lead = t("same_time", newTitle, nd)
	default:
		old.lead = disagreementText(b.lang, "intro") + b.undated(oldTitle, od)
		nw.lead = b.undated(newTitle, nd)
		nw.text = sideText(c.New.Fact.Text, disagreementText(b.lang, "unknown")+".")
	}
	return pendingSentence{sides: []pendingSide{old, nw}}
}

func (b *builder) undated(title, date string) string {
	if date != "" {
		return fmt.Sprintf(disagreementText(b.lang, "says"), title, date)
	}
	return fmt.Sprintf(disagreementText(b.lang, "says_undated"), title)
}

// docTitle names a document by the title of a block of it the report
// knows, else by its id.
func (b *builder) docTitle(docID string) string {
	ids := slices.Sorted(maps.Keys(b.blocks))
	for _, id := range ids {
		if c := b.blocks[id]; c.DocID == docID && c.Title != "" {
			return oneLine(c.Title)
		}
	}
	return docID
}

// factTitle names a fact's note: its first block's title, section aside.
func (b *builder) factTitle(f schemas.Fact) string {
	for _, id := range f.BlockIDs {
		if c := b.citation(id, f); c.Title != "" {
			return oneLine(c.Title)
		}
	}
	return reportText(b.lang, "untitled")
}

// sideContexts are a fact's blocks as a side of a disagreement is checked
// against them: each block's own text, and after it the note's date (a side
// may say when its note said it; nothing else of the sentence is taken on
// trust).
func (b *builder) sideContexts(f schemas.Fact) []schemas.Context {
	date := ""
	if t := factTime(f.Updated); !t.IsZero() {
		date = t.Format("2006-01-02")
	}
	var out []schemas.Context
	for _, id := range f.BlockIDs {
		c, ok := b.blocks[id]
		if !ok {
			continue
		}
		if date != "" {
			c.Text = strings.TrimRight(c.Text, " \n") + "\n(" + date + ")"
			c.BlockSpans = []schemas.BlockSpan{{ID: id, Start: 0, End: len(c.Text)}}
		}
		out = append(out, c)
	}
	return out
}

// clauseBreak is where the sides of a disagreement sentence may meet:
// after ';', ',', ':' or a dash (kept with the clause before), or before
// "but", "while", "whereas", "а", "но", "однако", "тогда как" ... (kept with
// the clause after).
var clauseBreak = regexp.MustCompile(`(?i)(?:[;,:]|\s[—–-])\s+|\s(?:but|while|whereas|however|although|though|yet|then|later|and later|since|а|но|однако|тогда как|в то время как|хотя|затем|позже|потом|с тех пор как)\s`)

// clauses cuts a sentence where its sides may meet; the pieces join back
// to it.
func clauses(text string) []string {
	var out []string
	last := 0
	for _, m := range clauseBreak.FindAllStringIndex(text, -1) {
		cut := m[1]
		if r, _ := utf8.DecodeRuneInString(strings.TrimSpace(text[m[0]:m[1]])); !strings.ContainsRune(";,:—–-", r) {
			cut = m[0] + 1 // a word: it starts the next clause
		}
		if cut > last && strings.TrimSpace(text[last:cut]) != "" {
			out = append(out, text[last:cut])
			last = cut
		}
	}
	if strings.TrimSpace(text[last:]) != "" {
		out = append(out, text[last:])
	} else if len(out) > 0 {
		out[len(out)-1] += text[last:]
	}
	return out
}

// framingWords say that notes disagree, and when, without saying what:
// a clause of them only is the lead of the side after it.
var framingWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`notes note notebook disagree disagrees differ differs conflict conflicts contradict contradicts
		say says said state states stated earlier later newer older latest previous first second one other another however whereas while
		but where about on regarding meanwhile version versions record records entry entries
		заметки заметка заметках заметке расходятся расходится расходились противоречат противоречит говорит говорится говорят сказано
		ранняя ранней поздняя поздней новая новее новой старая старой более менее первая вторая одна другая одной другой однако тогда
		как где запись записи версия версии`) {
		framingWords[w] = true
	}
}

// framing tells whether a clause only frames: no digit and no word beyond
// the framing words and stopwords.
func framing(clause string) bool {
	for _, t := range analysis.Tokenize(clause) {
		if strings.ContainsAny(t.Text, "0123456789") {
			return false
		}
		if !analysis.IsStopword(t.Text) && !framingWords[t.Text] {
			return false
		}
	}
	return true
}

// maxClauses bounds the clauses of a disagreement sentence that are tried
// for sides; a longer sentence is rebuilt from its pair.
const maxClauses = 8

// disagreement verifies a disagreement sentence of the model per side: it
// must cite two facts or more, and be cut into consecutive parts, each but
// framing ones ("the notes disagree:") stated by the blocks of one fact it
// cites (the fact's note date counts as stated), with two facts or more
// holding a part. Ok is false for a sentence that cites one side only or
// whose parts are not each stated by a side: its pair is then rebuilt.
func (b *builder) disagreement(s replySentence, byID map[string]numberedFact) (pendingSentence, []string, bool) {
	text, ids := cleanSentence(s)
	var sides []numberedFact
	for _, id := range ids {
		if nf, ok := byID[id]; ok {
			sides = append(sides, nf)
		}
	}
	if text == "" {
		return pendingSentence{}, nil, false
	}
	if len(sides) < 2 {
		b.rep.Reasons = append(b.rep.Reasons, fmt.Sprintf("one_sided_disagreement: it cites %d of the facts given, a disagreement wants each side cited: %q", len(sides), text))
		return pendingSentence{}, nil, false
	}
	pieces := clauses(text)
	if len(pieces) > maxClauses {
		b.rep.Reasons = append(b.rep.Reasons, fmt.Sprintf("unsupported_disagreement: too long to check per side: %q", text))
		return pendingSentence{}, nil, false
	}
	parts, why := b.splitBySide(pieces, sides)
	held := map[int]bool{}
	for _, p := range parts {
		if p.side >= 0 {
			held[p.side] = true
		}
	}
	if parts == nil || len(held) < 2 {
		if why == "" {
			why = "one side holds it all"
		}
		b.rep.Reasons = append(b.rep.Reasons, fmt.Sprintf("unsupported_disagreement: %s: not each side stated by its own blocks: %q", why, text))
		return pendingSentence{}, nil, false
	}
	out, cited := b.sidesOf(parts, pieces, sides)
	return out, cited, true
}

// sidePart is a run of a disagreement's clauses, pieces[from:to], stated
// by one side's blocks, or framing (side -1).
type sidePart struct {
	from, to int
	side     int // -1: framing
	blocks   []string
}

// splitBySide cuts the clauses into the fewest consecutive parts each
// framing or stated by one side's blocks (nil when no cut does); why is
// the first reason a part was not stated.
func (b *builder) splitBySide(pieces []string, sides []numberedFact) ([]sidePart, string) {
	ctxs := make([][]schemas.Context, len(sides))
	for k, nf := range sides {
		ctxs[k] = b.sideContexts(nf.Fact)
	}
	// best[i]: the fewest parts that cover pieces[:i] (nil: none do).
	best := make([][]sidePart, len(pieces)+1)
	best[0] = []sidePart{}
	why := ""
	for i := 1; i <= len(pieces); i++ {
		for j := 0; j < i; j++ {
			if best[j] == nil || (best[i] != nil && len(best[j])+1 >= len(best[i])) {
				continue
			}
			seg := strings.Join(pieces[j:i], "")
			p := sidePart{from: j, to: i, side: -1}
			if !framing(seg) {
				p.side = -2
				for k := range sides {
					got, claim, r := b.verifyIn(strings.TrimSpace(seg), ctxs[k])
					if !claim {
						p.side = -1
						break
					}
					if len(got) > 0 {
						p.side, p.blocks = k, got
						break
					}
					if why == "" {
						why = r
					}
				}
			}
			if p.side == -2 {
				continue
			}
			best[i] = append(slices.Clone(best[j]), p)
		}
	}
	return best[len(pieces)], why
}

// sidesOf writes the parts as the sentence's sides (framing leads the side
// after it, or ends the last), marking the newer side of a dated conflict;
// cited is the facts the sides state.
func (b *builder) sidesOf(parts []sidePart, pieces []string, sides []numberedFact) (pendingSentence, []string) {
	var out pendingSentence
	lead := ""
	var cited []string
	for _, p := range parts {
		seg := strings.TrimSpace(strings.Join(pieces[p.from:p.to], ""))
		if p.side < 0 {
			lead = strings.TrimSpace(lead + " " + seg)
			continue
		}
		nf := sides[p.side]
		cited = appendOnce(cited, nf.ID)
		out.sides = append(out.sides, pendingSide{lead: lead, text: seg, blocks: p.blocks, updated: nf.Fact.Updated, fact: nf.ID})
		lead = ""
	}
	if lead != "" {
		last := &out.sides[len(out.sides)-1]
		last.text = strings.TrimSpace(last.text + " " + lead)
	}
	for k := range out.sides {
		for _, c := range b.conflicts {
			if c.Dated && c.New.ID == out.sides[k].fact && slices.Contains(cited, c.Old.ID) {
				out.sides[k].newer = true
			}
		}
	}
	return out, cited
}

// covers tells whether the cited facts state both sides of c.
func (c conflict) coveredBy(cited []string) bool {
	return slices.Contains(cited, c.Old.ID) && slices.Contains(cited, c.New.ID)
}

// disagreementSection keeps the model's disagreement sentences that pass
// per side and adds, for every pair of the facts they leave out, the
// sentence built from the pair: no disagreement the facts hold is lost.
func (b *builder) disagreementSection(list []replySentence, byID map[string]numberedFact) {
	var cited [][]string
	b.disagreements = nil
	for _, s := range list {
		p, ids, ok := b.disagreement(s, byID)
		if !ok {
			continue
		}
		b.kept++
		b.disagreements = append(b.disagreements, p)
		cited = append(cited, ids)
	}
	b.addConflicts(cited)
}

// addConflicts adds the sentence built from each pair that no kept
// sentence states both sides of.
func (b *builder) addConflicts(cited [][]string) {
	for _, c := range b.conflicts {
		covered := false
		for _, ids := range cited {
			covered = covered || c.coveredBy(ids)
		}
		if !covered {
			b.disagreements = append(b.disagreements, b.conflictSentence(c))
		}
	}
}

// draftOutline is the supervisor's JSON outline.
type draftOutline struct {
	Themes        []json.RawMessage `json:"themes"`
	Disagreements []replySentence   `json:"disagreements"`
}

// checkDraft verifies the outline's disagreement sentences as the report's
// are (per side, with the claim checks) before the report model sees them:
// a sentence with a number, date or name its facts' blocks do not state,
// or citing one side only, is taken out of the outline (named in the
// reasons as draft_*). An outline that is not JSON is given as it is.
func (b *builder) checkDraft(draft string, facts []numberedFact) string {
	start, end := strings.Index(draft, "{"), strings.LastIndex(draft, "}")
	if start < 0 || end <= start {
		return draft
	}
	var o draftOutline
	if json.Unmarshal([]byte(draft[start:end+1]), &o) != nil || len(o.Disagreements) == 0 {
		return draft
	}
	byID := map[string]numberedFact{}
	for _, nf := range facts {
		byID[nf.ID] = nf
	}
	type sentence struct {
		Text  string   `json:"text"`
		Facts []string `json:"facts"`
	}
	out := struct {
		Themes        []json.RawMessage `json:"themes"`
		Disagreements []sentence        `json:"disagreements"`
	}{Themes: o.Themes, Disagreements: []sentence{}}
	quotes := maps.Clone(b.quotes)
	for _, s := range o.Disagreements {
		n := len(b.rep.Reasons)
		_, ids, ok := b.disagreement(s, byID)
		for i := n; i < len(b.rep.Reasons); i++ {
			b.rep.Reasons[i] = "draft_" + b.rep.Reasons[i]
		}
		if ok {
			text, _ := cleanSentence(s)
			out.Disagreements = append(out.Disagreements, sentence{Text: text, Facts: ids})
		}
	}
	b.quotes = quotes
	raw, err := json.Marshal(out)
	if err != nil {
		return draft
	}
	return string(raw)
}
