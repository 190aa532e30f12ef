package research

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/answer/claimcheck"
	"github.com/exocortex/exocortex/schemas"
)

// The evidence-only report: the passages of the notes that answer the
// question, without a language model.
//
//   - A passage is kept when it holds enough of the question's words (its
//     sub-question's or the research's): minEvidenceScore, and at least
//     relEvidenceScore of the best passage's score; headings and titles are
//     never passages. When none is good enough the closest few are shown,
//     and the report says so.
//   - Passages are grouped by sub-topic: the research's sub-questions when
//     it had several, else the parts of a question that asks several things
//     ("How X work and what Y do they have?"), else the notes they come
//     from. Each group opens with a line in the question's language and
//     lists at most EvidencePerTheme passages, best first (then in the
//     retrieval's order); the same passage is shown once.
//   - Passages on one subject that give different numbers or dates
//     (claimcheck.Values: same kind and unit, different value, the words
//     around the values shared) are shown side by side under "These notes
//     disagree", each with its citation and note date, the newer one said;
//     facts a model marked as contradicted (contradicted_by) are paired too.
//   - When the question is in another language than the notes, the report
//     says whether it was searched translated, or why not.
const (
	minEvidenceScore = 0.4
	relEvidenceScore = 0.6
	// closestPassages are shown when no passage is good enough.
	closestPassages = 3
	// maxDisagreements bounds the pairs shown side by side.
	maxDisagreements = 4
)

// evidenceTexts are the evidence report's fixed strings by language.
var evidenceTexts = map[string]map[string]string{
	"en": {
		"on":           "What the notes say on “%s”:",
		"from":         "Passages of “%s” that match the question, the best first:",
		"none_on":      "The notes have no passage on “%s”.",
		"closest":      "No passage holds most of the question's words; these come closest:",
		"nothing":      "No passage of the notes matches the question.",
		"search":       "How the notes were searched",
		"translated":   "The question was also searched in %s: “%s”.",
		"not_searched": "The notes are in %s, and the question was not searched in %s: nothing could translate it (no language model provider is configured). Configure one, or install a multilingual embedding model (exocortex models fetch).",
		"failed":       "The notes are in %s, and the question was not searched in %s: translating it failed.",
		"disagree":     "These notes disagree on %s: %s in one, %s in the other.",
		"disagree_any": "These notes disagree:",
		"newer":        "newer",
		"side":         "%s: %s",
	},
	"ru": {
		"on":           "Что сказано в заметках о «%s»:",
		"from":         "Фрагменты «%s», подходящие к вопросу, — сначала лучшие:",
		"none_on":      "О «%s» в заметках нет подходящего фрагмента.",
		"closest":      "Ни один фрагмент не содержит большинства слов вопроса; ближе всего вот эти:",
		"nothing":      "Ни один фрагмент заметок не подходит к вопросу.",
		"search":       "Как искали в заметках",
		"translated":   "Вопрос искали и %s: «%s».",
		"not_searched": "Заметки написаны %s, а вопрос %s не искали: перевести его было нечем (не настроен поставщик языковой модели). Настройте его или установите многоязычную модель эмбеддингов (exocortex models fetch).",
		"failed":       "Заметки написаны %s, а вопрос %s не искали: перевод не удался.",
		"disagree":     "Эти заметки расходятся — %s: в одной %s, в другой %s.",
		"disagree_any": "Эти заметки расходятся:",
		"newer":        "новее",
		"side":         "%s: %s",
	},
}

func evidenceText(lang, key string) string {
	if t, ok := evidenceTexts[lang][key]; ok {
		return t
	}
	return evidenceTexts["en"][key]
}

// languageIn names a language for the evidence report's sentences: "in
// English" / "на английском", "in Russian" / "по-русски".
func languageIn(lang, code string, searched bool) string {
	if lang == "ru" {
		switch {
		case code == "en" && searched:
			return "по-английски"
		case code == "en":
			return "на английском"
		case code == "ru" && searched:
			return "по-русски"
		case code == "ru":
			return "на русском"
		}
		return code
	}
	switch code {
	case "en":
		return "English"
	case "ru":
		return "Russian"
	}
	return code
}

// candidate is a passage the report may show.
type candidate struct {
	nf     numberedFact
	blocks []string
	text   string
	score  float64
	order  int
	key    string // what it answers best: its sub-question, or a part of the question
	group  int
	parts  []float64 // how well it answers each part of the question
	shown  bool
	cite   schemas.Citation
}

// evidence is the report without a language model: the passages that
// answer, by sub-topic, and the passages that disagree side by side.
func (b *builder) evidence(d *schemas.ResearchDraft, facts []numberedFact, cfg ReportConfig) {
	b.rep.Title = fmt.Sprintf(reportText(b.lang, "title_evidence"), oneLine(d.Question))
	if line := b.searchLine(); line != "" {
		b.sections = append(b.sections, pendingSection{title: evidenceText(b.lang, "search"), sentences: []pendingSentence{{text: line}}})
	}
	all := b.candidates(facts)
	b.score(d, all)
	kept, closest := keep(all)
	var shown []numberedFact
	show := func(c *candidate) pendingSentence {
		c.shown = true
		shown = append(shown, c.nf)
		b.quote(c)
		b.kept++
		return pendingSentence{text: c.text, blocks: c.blocks}
	}
	b.disagreements = b.disagree(all, kept, show)

	groups := b.groups(d, kept)
	for gi, g := range groups {
		if len(b.sections) >= cfg.EvidenceThemes {
			break
		}
		sec := pendingSection{title: g.title}
		lead := g.lead
		if closest && len(b.sections) == 0 || closest && b.sections[len(b.sections)-1].title == evidenceText(b.lang, "search") && gi == 0 {
			lead = evidenceText(b.lang, "closest")
		}
		if lead != "" {
			sec.sentences = append(sec.sentences, pendingSentence{text: lead})
		}
		n, elsewhere := 0, 0
		for _, c := range kept {
			switch {
			case c.shown && gi < len(c.parts) && c.parts[gi] > 0:
				elsewhere++ // it answers this part too, side by side with a passage that disagrees
			case c.group != gi:
			case c.shown:
				elsewhere++ // side by side with a passage that disagrees
			case n < cfg.EvidencePerTheme:
				sec.sentences = append(sec.sentences, show(c))
				n++
			}
		}
		switch {
		case n == 0 && elsewhere > 0:
			continue
		case n == 0 && g.part:
			sec.sentences = []pendingSentence{{text: fmt.Sprintf(evidenceText(b.lang, "none_on"), g.title)}}
		case n == 0:
			continue
		}
		b.sections = append(b.sections, sec)
	}
	if b.kept == 0 {
		line := pendingSentence{text: evidenceText(b.lang, "nothing")}
		if len(b.sections) > 0 && b.sections[0].title == evidenceText(b.lang, "search") {
			b.sections[0].sentences = append([]pendingSentence{line}, b.sections[0].sentences...)
		} else {
			b.sections = append(b.sections, pendingSection{title: evidenceText(b.lang, "search"), sentences: []pendingSentence{line}})
		}
	}
	b.setFacts(shown)
}

// candidates are the facts that rest on a known block, once each (the same
// block, or the same words, is one passage).
func (b *builder) candidates(facts []numberedFact) []*candidate {
	var out []*candidate
	seenBlock := map[string]bool{}
	var seenText []string
	for i, nf := range facts {
		var blocks []string
		for _, id := range nf.Fact.BlockIDs {
			if _, ok := b.blocks[id]; ok || hasCitation(nf.Fact, id) {
				blocks = append(blocks, id)
			}
		}
		text := oneLine(nf.Fact.Text)
		if len(blocks) == 0 || text == "" || headingMark.MatchString(text) {
			continue
		}
		key := foldKey(strings.Trim(text, "…"))
		if seenBlock[strings.Join(blocks, ",")] || key == "" || slices.ContainsFunc(seenText, func(s string) bool {
			return strings.Contains(s, key) || strings.Contains(key, s)
		}) {
			continue
		}
		cite := b.citation(blocks[0], nf.Fact)
		if isTitle(text, schemas.Context{Passage: schemas.Passage{Title: cite.Title, SectionPath: cite.SectionPath}}) {
			continue // a title or a heading repeated: no passage
		}
		seenBlock[strings.Join(blocks, ",")] = true
		seenText = append(seenText, key)
		out = append(out, &candidate{nf: nf, blocks: blocks, text: text, order: i, cite: cite})
	}
	return out
}

// score rates each candidate against its sub-question and the research's
// question; a word rarer among the candidates weighs more.
func (b *builder) score(d *schemas.ResearchDraft, cs []*candidate) {
	df, n := candidateDF(b, cs)
	matchers := map[string]*matcher{}
	get := func(q string) *matcher {
		if m, ok := matchers[q]; ok {
			return m
		}
		m := newMatcher(b.a, q, df, n)
		matchers[q] = m
		return m
	}
	// The question translated, and each part of a question that asks
	// several things, are questions a passage may answer too.
	also := TranslatedQuestions(b.rep.Reasons)
	parts := questionParts(d.Question)
	if len(parts) < 2 {
		parts = nil
	}
	for _, c := range cs {
		// A passage is judged against the best of its sub-question's (or
		// its part's) passages: one part's weaker answers are still answers.
		c.key = fmt.Sprintf("task %d", c.nf.Task)
		qs := []string{d.Question}
		if c.nf.Task < len(d.Findings) {
			qs = append(qs, d.Findings[c.nf.Task].Question)
			qs = append(qs, TranslatedQuestions(d.Findings[c.nf.Task].Reasons)...)
		}
		qs = append(qs, also...)
		set := termSet(b.a, c.text)
		section := termSet(b.a, c.cite.Title+" "+strings.Join(c.cite.SectionPath, " "))
		num := strings.ContainsAny(c.text, "0123456789")
		for _, q := range qs {
			if strings.TrimSpace(q) != "" && !slices.Contains(parts, q) {
				c.score = max(c.score, get(q).score(set, nil, section, num))
			}
		}
		for i, q := range parts {
			if s := get(q).score(set, nil, section, num); s > c.score {
				c.score, c.key = s, fmt.Sprintf("part %d", i)
			}
		}
		c.score = prose(c.text, c.score)
	}
	slices.SortStableFunc(cs, func(x, y *candidate) int {
		// Scores within a tenth are a tie: the retrieval's order decides.
		bx, by := int(x.score*10+0.5), int(y.score*10+0.5)
		if bx != by {
			return by - bx
		}
		return x.order - y.order
	})
}

func candidateDF(b *builder, cs []*candidate) (func(string) int, int) {
	df := map[string]int{}
	for _, c := range cs {
		for t := range termSet(b.a, c.text) {
			df[t]++
		}
	}
	return func(t string) int { return df[t] }, len(cs)
}

// keep are the candidates good enough to show (sorted best first); closest
// says none was, and the few closest are given instead.
func keep(cs []*candidate) (kept []*candidate, closest bool) {
	if len(cs) == 0 {
		return nil, false
	}
	best := map[string]float64{}
	for _, c := range cs {
		best[c.key] = max(best[c.key], c.score)
	}
	for _, c := range cs {
		if c.score >= minEvidenceScore && c.score >= relEvidenceScore*best[c.key] {
			kept = append(kept, c)
		}
	}
	if len(kept) > 0 {
		return kept, false
	}
	for _, c := range cs {
		if c.score > 0 && len(kept) < closestPassages {
			kept = append(kept, c)
		}
	}
	return kept, len(kept) > 0
}

// evidenceGroup is a sub-topic of the report.
type evidenceGroup struct {
	title, lead string
	part        bool // a part of the question or a sub-question: said when nothing answers it
}

// groups assigns each kept candidate its sub-topic and returns the groups
// in order: sub-questions, else parts of the question, else notes in the
// order of their best passage.
func (b *builder) groups(d *schemas.ResearchDraft, kept []*candidate) []evidenceGroup {
	var out []evidenceGroup
	var tasks []int
	for _, c := range kept {
		if !slices.Contains(tasks, c.nf.Task) {
			tasks = append(tasks, c.nf.Task)
		}
	}
	if len(d.Findings) > 1 && !plannedWithoutModel(d) {
		at := map[int]int{}
		for i, f := range d.Findings {
			at[i] = len(out)
			q := oneLine(f.Question)
			out = append(out, evidenceGroup{title: q, lead: fmt.Sprintf(evidenceText(b.lang, "on"), strings.TrimRight(q, "?.!")), part: true})
		}
		for _, c := range kept {
			c.group = at[c.nf.Task]
		}
		return out
	}
	if parts := questionParts(d.Question); len(parts) > 1 {
		df, n := candidateDF(b, kept)
		ms := make([]*matcher, len(parts))
		for i, p := range parts {
			ms[i] = newMatcher(b.a, p, df, n)
			out = append(out, evidenceGroup{title: capitalise(p), lead: fmt.Sprintf(evidenceText(b.lang, "on"), capitalise(p)), part: true})
		}
		for _, c := range kept {
			set := termSet(b.a, c.text)
			section := termSet(b.a, c.cite.Title+" "+strings.Join(c.cite.SectionPath, " "))
			best := -1.0
			c.parts = make([]float64, len(ms))
			for i, m := range ms {
				s := m.score(set, nil, section, strings.ContainsAny(c.text, "0123456789"))
				c.parts[i] = m.score(set, nil, nil, false)
				if s > best {
					best, c.group = s, i
				}
			}
		}
		return out
	}
	at := map[string]int{}
	for _, c := range kept {
		key := c.cite.DocID
		if key == "" {
			key = c.cite.Title
		}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			title := c.cite.Title
			if title == "" {
				title = reportText(b.lang, "untitled")
			}
			out = append(out, evidenceGroup{title: title, lead: fmt.Sprintf(evidenceText(b.lang, "from"), title)})
		}
		c.group = i
	}
	return out
}

// plannedWithoutModel tells a research whose sub-questions are not the
// model's: every finding says its plan was built without the model
// (plan_fallback, plan_failed: the question and "<heading>: <question>"
// of the best documents). Such sub-questions are no sub-topics of the
// question; the report groups by the question's parts or by note instead.
func plannedWithoutModel(d *schemas.ResearchDraft) bool {
	for _, f := range d.Findings {
		if !slices.ContainsFunc(f.Reasons, func(r string) bool {
			return strings.HasPrefix(r, "plan_fallback: ") || strings.HasPrefix(r, "plan_failed: ")
		}) {
			return false
		}
	}
	return len(d.Findings) > 0
}

// partSplit cuts a question before a conjunction or a comma that starts
// another question.
// (a question word after it: see questionWords).
var partSplit = regexp.MustCompile(`(?i)\s*(?:[,;]\s*(?:(?:and|or|и|или|а также|а)\s+)?|\s(?:and|or|и|или|а также|а)\s+)(\pL+)`)

// questionParts are the questions a question asks, when it asks several
// ("How do databases work and what views do they have?"); one part
// otherwise.
func questionParts(q string) []string {
	q = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(q), "?.!"))
	locs := partSplit.FindAllStringSubmatchIndex(q, -1)
	var parts []string
	start := 0
	for _, l := range locs {
		if l[0] < start || !questionWords[strings.ToLower(q[l[2]:l[3]])] {
			continue
		}
		parts = append(parts, q[start:l[0]])
		start = l[2]
	}
	parts = append(parts, q[start:])
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if len(contentWords(p)) == 0 {
			if len(out) > 0 {
				out[len(out)-1] += " " + p
			}
			continue
		}
		out = append(out, p)
	}
	if len(out) < 2 {
		return []string{q}
	}
	return out
}

func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !questionWords[w] && !stopLike[w] {
			out = append(out, w)
		}
	}
	return out
}

var questionWords = setOf("what", "how", "which", "where", "when", "why", "who", "whom", "whose", "whether", "is", "are", "does", "do",
	"did", "can", "could", "should", "что", "как", "какой", "какая", "какое", "какие", "каков", "где", "когда", "почему", "зачем",
	"кто", "сколько", "чем", "куда", "откуда", "ли")

var stopLike = setOf("the", "a", "an", "of", "in", "on", "to", "it", "they", "them", "this", "that", "there", "have", "has", "be",
	"и", "в", "на", "о", "об", "у", "с", "это", "они", "их", "есть")

func setOf(ws ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range ws {
		m[w] = true
	}
	return m
}

func capitalise(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// quote remembers the passage as its block's quote.
func (b *builder) quote(c *candidate) {
	if b.quotes == nil {
		b.quotes = map[string]string{}
	}
	if _, ok := b.quotes[c.blocks[0]]; !ok {
		b.quotes[c.blocks[0]] = c.text
	}
}

// searchLine says how a question in another language than the notes was
// searched: translated, or not and why. "" when the question and the
// notes share their language.
func (b *builder) searchLine() string {
	var translated []string
	for _, r := range b.rep.Reasons {
		r = strings.TrimPrefix(r, "retrieval: ")
		switch {
		case strings.HasPrefix(r, "translated: "):
			rest := strings.TrimPrefix(r, "translated: ")
			code, text, ok := strings.Cut(rest, ": ")
			if ok && !slices.Contains(translated, code) {
				translated = append(translated, code)
				return fmt.Sprintf(evidenceText(b.lang, "translated"), languageIn(b.lang, code, true), strings.TrimSpace(text))
			}
		case strings.HasPrefix(r, "translation_unavailable: "), strings.HasPrefix(r, "translation_failed: "):
			code := "en"
			if m := notesIn.FindStringSubmatch(r); m != nil {
				code = strings.TrimSpace(strings.Split(m[1], ",")[0])
			}
			key := "not_searched"
			if strings.HasPrefix(r, "translation_failed: ") || strings.Contains(r, "translating it failed") {
				key = "failed"
			}
			return fmt.Sprintf(evidenceText(b.lang, key), languageIn(b.lang, code, false), languageIn(b.lang, code, true))
		}
	}
	return ""
}

var notesIn = regexp.MustCompile(`notes are in ([a-z]{2}(?:, [a-z]{2})*)`)

// disagree finds passages on one subject that state different values, and
// the facts a model marked as contradicted, and writes each pair side by
// side: a line that says what they disagree on, then each passage with its
// note's date.
func (b *builder) disagree(all, kept []*candidate, show func(*candidate) pendingSentence) []pendingSentence {
	var ps evidencePairs
	// The model's own contradictions, when the facts carry them.
	byID := map[string]*candidate{}
	for _, c := range all {
		byID[fmt.Sprintf("%d|%s", c.nf.Task, c.nf.Fact.ID)] = c
	}
	for _, c := range all {
		for _, id := range c.nf.Fact.ContradictedBy {
			if o, ok := byID[fmt.Sprintf("%d|%s", c.nf.Task, id)]; ok {
				ps.add(c, o, "", "", "")
			}
		}
	}
	b.valueConflicts(all, kept, &ps)
	var out []pendingSentence
	for _, p := range ps.list {
		out = append(out, b.pairSentence(p, show))
	}
	return out
}

// evidencePair is two passages that disagree, on subject where known.
type evidencePair struct {
	x, y    *candidate
	subject string
	vx, vy  string // the values they give
}

// evidencePairs collects pairs, at most maxDisagreements, each passage in
// one pair only.
type evidencePairs struct {
	list []evidencePair
	seen map[[2]*candidate]bool
}

func (ps *evidencePairs) add(x, y *candidate, subject, vx, vy string) {
	if x == y || x.shown || y.shown || ps.seen[[2]*candidate{x, y}] || ps.seen[[2]*candidate{y, x}] || len(ps.list) >= maxDisagreements {
		return
	}
	for _, p := range ps.list {
		if p.x == x || p.y == x || p.x == y || p.y == y {
			return // a passage is shown once
		}
	}
	if ps.seen == nil {
		ps.seen = map[[2]*candidate]bool{}
	}
	ps.seen[[2]*candidate{x, y}] = true
	ps.list = append(ps.list, evidencePair{x, y, subject, vx, vy})
}

// valueConflicts adds the pairs whose values differ on one subject: a
// passage kept, and another kept or one that matches the question less but
// states the same subject otherwise (the older note's launch date is the
// other side of the newer note's, whichever of the two holds more of the
// question's words).
func (b *builder) valueConflicts(all, kept []*candidate, ps *evidencePairs) {
	vals := map[*candidate][]claimcheck.Value{}
	valuesOf := func(c *candidate) []claimcheck.Value {
		v, ok := vals[c]
		if !ok {
			v = claimcheck.Values(c.text)
			vals[c] = v
		}
		return v
	}
	others := slices.Clone(kept)
	for _, c := range all {
		if c.score > 0 && !slices.Contains(others, c) {
			others = append(others, c)
		}
	}
	for i, x := range kept {
		for _, y := range others[i+1:] {
			if slices.Equal(x.blocks, y.blocks) {
				continue
			}
			if s, vx, vy, ok := b.conflict(x.text, valuesOf(x), y.text, valuesOf(y)); ok {
				ps.add(x, y, s, vx, vy)
			}
		}
	}
}

// pairSentence writes one sentence a pair, each side its own passage with
// its own citation, its note's time and whether it is the newer (as the
// synthesis' disagreements): every client of the report sees the pair in
// its disagreements; the line saying what they disagree on leads the first
// side, the older note first.
func (b *builder) pairSentence(p evidencePair, show func(*candidate) pendingSentence) pendingSentence {
	tx, ty := candidateTime(p.x), candidateTime(p.y)
	if !tx.IsZero() && !ty.IsZero() && ty.Before(tx) {
		// The older note first.
		p.x, p.y, p.vx, p.vy, tx, ty = p.y, p.x, p.vy, p.vx, ty, tx
	}
	line := evidenceText(b.lang, "disagree_any")
	if p.subject != "" {
		line = fmt.Sprintf(evidenceText(b.lang, "disagree"), p.subject, p.vx, p.vy)
	}
	var ps pendingSentence
	for i, side := range []struct {
		c     *candidate
		t, ot time.Time
	}{{p.x, tx, ty}, {p.y, ty, tx}} {
		newer := !side.t.IsZero() && !side.ot.IsZero() && side.t.After(side.ot)
		label := fmt.Sprintf(evidenceText(b.lang, "side"), b.sideLabel(side.c, side.t, newer), "")
		if i == 0 {
			label = line + " " + label
		}
		shown := show(side.c)
		sd := pendingSide{lead: strings.TrimSpace(label), text: shown.text, blocks: shown.blocks, newer: newer,
			updated: side.c.nf.Fact.Updated, fact: side.c.nf.Fact.ID}
		if sd.updated == "" && !side.t.IsZero() {
			sd.updated = side.t.UTC().Format(time.RFC3339)
		}
		ps.sides = append(ps.sides, sd)
	}
	return ps
}

// conflict tells whether two passages give different values for one
// subject: a value of each of the same kind and unit that differ, with a
// content word shared by the words around them, and neither passage
// stating the other's value. subject is the shared words (at most three),
// vx and vy the values as each writes them.
func (b *builder) conflict(x string, xv []claimcheck.Value, y string, yv []claimcheck.Value) (subject, vx, vy string, ok bool) {
	if b.sharedTerms(x, y) < minSharedTerms {
		return "", "", "", false
	}
	for _, v := range xv {
		if stated(v, yv) || glued(x, v) || example(x, v) {
			continue
		}
		for _, w := range yv {
			if !v.Comparable(w) || v.Same(w) || stated(w, xv) || glued(y, w) || example(y, w) {
				continue
			}
			if shared := b.sharedAround(x, v, y, w); len(shared) > 0 {
				if len(shared) > 3 {
					shared = shared[:3]
				}
				return strings.Join(shared, " "), v.Item, w.Item, true
			}
		}
	}
	return "", "", "", false
}

// minSharedTerms is how many content words two passages share at least to
// be on one subject.
const minSharedTerms = 2

// sharedTerms counts the content words x and y share.
func (b *builder) sharedTerms(x, y string) int {
	ty := termSet(b.a, y)
	n := 0
	for t := range termSet(b.a, x) {
		if ty[t] && !strings.ContainsAny(t, "0123456789") {
			n++
		}
	}
	return n
}

// glued tells a value that is part of a path, a file name or an
// identifier ("2022-05-01-095621-clean/", "1000/gid"): it states nothing
// about the subject.
func glued(text string, v claimcheck.Value) bool {
	if v.Start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:v.Start]); r == '/' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	if v.End < len(text) {
		r, _ := utf8.DecodeRuneInString(text[v.End:])
		if r == '/' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// exampleWords mark a value given as an example, not as what the note
// states.
var exampleWords = regexp.MustCompile(`(?i)(?:^|[^\pL])(?:for example|for instance|e\.g\.|such as|like|например|к примеру|напр\.|скажем)(?:$|[^\pL])`)

// example tells a value its clause gives as an example.
func example(text string, v claimcheck.Value) bool {
	before := text[:v.Start]
	if k := strings.LastIndexAny(before, ".!?;"); k >= 0 && k < len(before)-1 && before[k+1] == ' ' {
		before = before[k+1:]
	}
	return exampleWords.MatchString(before)
}

func stated(v claimcheck.Value, in []claimcheck.Value) bool {
	return slices.ContainsFunc(in, v.Same)
}

// sharedAround are the content words (as x writes them) that the words
// before and after value v in x and value w in y share.
func (b *builder) sharedAround(x string, v claimcheck.Value, y string, w claimcheck.Value) []string {
	wy := termSet(b.a, around(y, w))
	var out []string
	for _, word := range strings.Fields(around(x, v)) {
		word = strings.TrimFunc(word, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if word == "" || strings.ContainsAny(word, "0123456789") {
			continue
		}
		for _, t := range terms(b.a, word) {
			if wy[t] && !slices.Contains(out, strings.ToLower(word)) {
				out = append(out, strings.ToLower(word))
				break
			}
		}
	}
	return out
}

// around is the clause a value stands in: up to six words before it and
// three after, not past a sentence's end.
func around(text string, v claimcheck.Value) string {
	before := text[:v.Start]
	if k := strings.LastIndexAny(before, ".!?;"); k >= 0 && k < len(before)-1 && before[k+1] == ' ' {
		before = before[k+1:]
	}
	after := text[v.End:]
	if k := strings.IndexAny(after, ".!?;"); k >= 0 {
		after = after[:k]
	}
	bw, aw := strings.Fields(before), strings.Fields(after)
	if len(bw) > 6 {
		bw = bw[len(bw)-6:]
	}
	if len(aw) > 3 {
		aw = aw[:3]
	}
	return strings.Join(append(bw, aw...), " ")
}

// candidateTime is the time of a passage's note: the fact's updated time, else
// the creation time a SiYuan block id carries.
func candidateTime(c *candidate) time.Time {
	if t, err := time.Parse(time.RFC3339, c.nf.Fact.Updated); err == nil {
		return t
	}
	for _, id := range c.blocks {
		if len(id) > 15 && id[14] == '-' {
			if t, err := time.Parse("20060102150405", id[:14]); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

// sideLabel names a passage of a disagreement: its note's title, its date,
// and whether it is the newer one.
func (b *builder) sideLabel(c *candidate, t time.Time, newer bool) string {
	var parts []string
	if c.cite.Title != "" {
		if b.lang == "ru" {
			parts = append(parts, "«"+c.cite.Title+"»")
		} else {
			parts = append(parts, "“"+c.cite.Title+"”")
		}
	}
	if !t.IsZero() {
		parts = append(parts, t.UTC().Format("2006-01-02"))
	}
	if newer {
		parts = append(parts, evidenceText(b.lang, "newer"))
	}
	if len(parts) == 0 {
		return reportText(b.lang, "untitled")
	}
	return strings.Join(parts, ", ")
}

func hasCitation(f schemas.Fact, blockID string) bool {
	for _, c := range f.Citations {
		if c.BlockID == blockID {
			return true
		}
	}
	return false
}
