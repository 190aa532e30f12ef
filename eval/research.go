package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/schemas"
)

// ResearchSet is a set of research questions over notes with planted
// disagreements (eval --research): a JSON file.
type ResearchSet struct {
	Name  string `json:"name"`
	About string `json:"about,omitempty"`
	// Notes are the folders to index, relative to the set's file.
	Notes         []string              `json:"notes"`
	Disagreements []PlantedDisagreement `json:"disagreements"`
	Questions     []ResearchQuestion    `json:"questions"`
	byID          map[string]PlantedDisagreement
}

// PlantedDisagreement is two notes that say different things about one
// subject; Change is a change over time (the later note updates the
// earlier one).
type PlantedDisagreement struct {
	ID     string             `json:"id"`
	About  string             `json:"about,omitempty"`
	Change bool               `json:"change,omitempty"`
	Sides  []DisagreementSide `json:"sides"`
}

// DisagreementSide is one side: its note's title, the words it says (as
// the note has them) and the note's date.
type DisagreementSide struct {
	Note string `json:"note"`
	Says string `json:"says"`
	Date string `json:"date,omitempty"`
}

// ResearchQuestion is one research question and the planted
// disagreements its report must state.
type ResearchQuestion struct {
	ID            string   `json:"id"`
	Question      string   `json:"question"`
	Lang          string   `json:"lang,omitempty"`
	Disagreements []string `json:"disagreements"`
	// Translations are the question in the other languages of the notes
	// (for a stand-in model's translation requests).
	Translations map[string]string `json:"translations,omitempty"`
}

// Translations are every question's translations, by question.
func (s *ResearchSet) Translations() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, q := range s.Questions {
		if len(q.Translations) > 0 {
			out[q.Question] = q.Translations
		}
	}
	return out
}

// LoadResearchSet reads a research set; its notes folders are resolved
// against the file's folder, and every question's disagreements must be
// planted ones.
func LoadResearchSet(path string) (*ResearchSet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("research set: %w", err)
	}
	var s ResearchSet
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("research set %s: %w (want a JSON object with notes, disagreements and questions)", path, err)
	}
	if len(s.Questions) == 0 {
		return nil, fmt.Errorf("research set %s has no questions", path)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	for i, n := range s.Notes {
		if !filepath.IsAbs(n) {
			s.Notes[i] = filepath.Join(filepath.Dir(path), n)
		}
	}
	s.byID = map[string]PlantedDisagreement{}
	for _, d := range s.Disagreements {
		if len(d.Sides) < 2 {
			return nil, fmt.Errorf("research set %s: disagreement %s has %d sides, want 2 or more", path, d.ID, len(d.Sides))
		}
		s.byID[d.ID] = d
	}
	for _, q := range s.Questions {
		for _, id := range q.Disagreements {
			if _, ok := s.byID[id]; !ok {
				return nil, fmt.Errorf("research set %s: question %s names disagreement %q, which is not planted", path, q.ID, id)
			}
		}
	}
	return &s, nil
}

// Planted are the planted disagreements a question's report must state.
func (s *ResearchSet) Planted(q ResearchQuestion) []PlantedDisagreement {
	var out []PlantedDisagreement
	for _, id := range q.Disagreements {
		out = append(out, s.byID[id])
	}
	return out
}

// ResearchLabel is what a labelling stand-in model did in one fact (the
// research stand-in's label, as eval reads it).
type ResearchLabel struct {
	Text           string
	Label          string
	SourceBlock    string
	SourceSentence string
	// Supported: the text says what its source block says.
	Supported bool
	// Changed: the text says something its block does not (Fragment is
	// the changed words: a number, a clause).
	Changed  bool
	Fragment string
}

// ResearchScore is one research's figures, judged by the stand-in's
// labels and the notes' blocks, never by the pipeline's own checks.
type ResearchScore struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Mode     string   `json:"mode"`
	Reasons  []string `json:"reasons,omitempty"`
	// CitedSentences are the report's sentences with a citation;
	// StatedSentences those whose cited blocks state them: a sentence
	// made of labelled facts (one or, side by side, several) is stated
	// when every fact is true of its source block and a cited block holds
	// that fact's source sentence; another sentence when a cited block
	// holds it, or it holds a sentence of a cited block.
	CitedSentences  int      `json:"cited_sentences"`
	StatedSentences int      `json:"stated_sentences"`
	ByLabel         int      `json:"judged_by_label"`
	ByBlock         int      `json:"judged_by_block"`
	NotStated       []string `json:"not_stated,omitempty"`
	// Planted disagreements; Reported those whose every side the
	// report's disagreement section states with a citation of a block
	// that says it; Anywhere the same over all of the report's sentences.
	Planted  int      `json:"planted"`
	Reported int      `json:"reported"`
	Anywhere int      `json:"reported_anywhere"`
	Missing  []string `json:"missing,omitempty"`
	// ChangedFacts are the facts the stand-in changed in this research;
	// ChangedReached those whose change is in a report sentence.
	ChangedFacts   int      `json:"changed_facts"`
	ChangedReached []string `json:"changed_reached,omitempty"`
	// Repeated are labelled facts stated by more than one report
	// sentence.
	Repeated int `json:"repeated_facts"`
	// Calls are the provider's requests for this research; LLMCalls what
	// the report counts.
	Calls    int `json:"calls"`
	LLMCalls int `json:"llm_calls"`
}

// norm lower-cases s, drops quotes, squashes spaces and trims the end's
// punctuation.
func norm(s string) string {
	s = strings.NewReplacer("«", "", "»", "", "“", "", "”", "", "\"", "", "„", "").Replace(strings.ToLower(s))
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimRight(s, " .!?;:…")
}

// containsWords: needle is in hay, not glued to a letter or digit.
func containsWords(hay, needle string) bool {
	if needle == "" {
		return false
	}
	for from := 0; ; {
		k := strings.Index(hay[from:], needle)
		if k < 0 {
			return false
		}
		k += from
		before, after := rune(' '), rune(' ')
		if k > 0 {
			before, _ = utf8.DecodeLastRuneInString(hay[:k])
		}
		if end := k + len(needle); end < len(hay) {
			after, _ = utf8.DecodeRuneInString(hay[end:])
		}
		word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
		if !word(before) && !word(after) {
			return true
		}
		from = k + 1
	}
}

// wordShare is the share of a's words that b holds.
func wordShare(a, b string) float64 {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	in := map[string]bool{}
	for _, w := range split(b) {
		in[w] = true
	}
	words := split(a)
	if len(words) == 0 {
		return 0
	}
	n := 0
	for _, w := range words {
		if in[w] {
			n++
		}
	}
	return float64(n) / float64(len(words))
}

// reportSentences are every sentence of the report, the disagreement
// section's flagged.
func reportSentences(rep *schemas.ResearchReport) (all []schemas.ReportSentence, disagreement []schemas.ReportSentence) {
	all = append(all, rep.Summary...)
	for _, s := range rep.Sections {
		all = append(all, s.Sentences...)
	}
	all = append(all, rep.Disagreements...)
	all = append(all, rep.Conclusion...)
	return all, rep.Disagreements
}

// citedBlocks are the ids of the blocks a sentence cites.
func citedBlocks(rep *schemas.ResearchReport, s schemas.ReportSentence) []string {
	var out []string
	for _, n := range s.Sources {
		if n >= 1 && n <= len(rep.Sources) {
			out = append(out, rep.Sources[n-1].BlockID)
		}
	}
	return out
}

// ScoreResearch judges one research's report by the stand-in's labels of
// that research (labels), the notes' blocks (id -> text) and the planted
// disagreements of its question.
func ScoreResearch(rep *schemas.ResearchReport, labels []ResearchLabel, blocks map[string]string, planted []PlantedDisagreement) ResearchScore {
	sc := ResearchScore{Question: rep.Question, Mode: rep.Mode, Reasons: rep.Reasons, LLMCalls: rep.LLMCalls}
	all, dis := reportSentences(rep)
	rs := researchScorer{rep: rep, blocks: blocks, facts: labelledFacts(labels)}
	for _, s := range all {
		cited := citedBlocks(rep, s)
		if len(cited) == 0 {
			continue
		}
		sc.CitedSentences++
		byLabel, ok := rs.stated(s, cited)
		if byLabel {
			sc.ByLabel++
		} else {
			sc.ByBlock++
		}
		if ok {
			sc.StatedSentences++
		} else {
			sc.NotStated = append(sc.NotStated, s.Text)
		}
	}
	sc.Repeated = rs.repeated()
	sc.ChangedFacts, sc.ChangedReached = changedReached(labels, all)
	// Planted disagreements: every side stated with a citation of a block
	// that says it.
	for _, d := range planted {
		sc.Planted++
		inSection, anywhere := true, true
		for _, side := range d.Sides {
			inSection = inSection && rs.sideIn(dis, side)
			anywhere = anywhere && rs.sideIn(all, side)
		}
		if inSection {
			sc.Reported++
		} else {
			sc.Missing = append(sc.Missing, d.ID)
		}
		if anywhere {
			sc.Anywhere++
		}
	}
	return sc
}

// labelledFact is a labelled fact with its normalised text.
type labelledFact struct {
	n string
	l ResearchLabel
}

// labelledFacts are the labelled facts by their normalised text, longest
// first (a sentence holding two facts side by side is split by them).
func labelledFacts(labels []ResearchLabel) []labelledFact {
	var facts []labelledFact
	seen := map[string]bool{}
	for _, l := range labels {
		n := norm(l.Text)
		if utf8.RuneCountInString(n) < 12 || seen[n+"|"+l.Label+"|"+l.SourceBlock] {
			continue
		}
		seen[n+"|"+l.Label+"|"+l.SourceBlock] = true
		facts = append(facts, labelledFact{n, l})
	}
	sort.SliceStable(facts, func(i, j int) bool { return len(facts[i].n) > len(facts[j].n) })
	return facts
}

// researchScorer judges one report's sentences against the labelled facts
// and the notes' blocks (id -> text).
type researchScorer struct {
	rep    *schemas.ResearchReport
	blocks map[string]string
	facts  []labelledFact
}

// holds reports whether block holds sentence.
func (rs researchScorer) holds(block, sentence string) bool {
	return block != "" && strings.Contains(norm(rs.blocks[block]), norm(sentence))
}

// stated judges a cited sentence: by the labels of the facts it holds
// (each supported and held by a cited block), else by its cited blocks
// holding it or a sentence of theirs (byLabel false).
func (rs researchScorer) stated(s schemas.ReportSentence, cited []string) (byLabel, ok bool) {
	text := norm(s.Text)
	rest := text
	var parts []ResearchLabel
	for _, f := range rs.facts {
		if strings.Contains(rest, f.n) {
			parts = append(parts, f.l)
			rest = strings.Replace(rest, f.n, " ", 1)
		}
	}
	if len(parts) > 0 {
		ok = true
		for _, p := range parts {
			held := false
			for _, b := range cited {
				held = held || b == p.SourceBlock || rs.holds(b, p.SourceSentence)
			}
			ok = ok && p.Supported && held
		}
		return true, ok
	}
	for _, b := range cited {
		bt := norm(rs.blocks[b])
		if text != "" && strings.Contains(bt, text) {
			ok = true
		}
		for _, bs := range strings.FieldsFunc(bt, func(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '\n' }) {
			if bs = strings.TrimSpace(bs); utf8.RuneCountInString(bs) >= 20 && strings.Contains(text, bs) {
				ok = true
			}
		}
	}
	return false, ok
}

// repeated counts the facts stated by several sentences of the sections (a
// summary or conclusion restating one is not a repeat).
func (rs researchScorer) repeated() int {
	stated := map[string]int{}
	for _, sec := range rs.rep.Sections {
		for _, s := range sec.Sentences {
			rest := norm(s.Text)
			for _, f := range rs.facts {
				if strings.Contains(rest, f.n) {
					stated[f.n]++
					rest = strings.Replace(rest, f.n, " ", 1)
				}
			}
		}
	}
	repeated := 0
	for _, n := range stated {
		if n > 1 {
			repeated++
		}
	}
	return repeated
}

// changedReached counts the changed facts and lists those that reached the
// report: the changed fact in a report sentence, or its changed words
// (which its note does not have) in a sentence that holds most of its
// words.
func changedReached(labels []ResearchLabel, all []schemas.ReportSentence) (int, []string) {
	count := 0
	var list []string
	reached := map[string]bool{}
	for _, l := range labels {
		if !l.Changed || reached[l.Text] {
			continue
		}
		count++
		frag := norm(l.Fragment)
		for _, s := range all {
			t := norm(s.Text)
			if strings.Contains(t, norm(l.Text)) || (frag != "" && containsWords(t, frag) && !containsWords(norm(l.SourceSentence), frag) &&
				wordShare(norm(l.Text), t) >= 0.6) {
				reached[l.Text] = true
				list = append(list, l.Text)
				break
			}
		}
	}
	return count, list
}

// sideIn reports whether a sentence of sents states side with a citation
// of a block that says it.
func (rs researchScorer) sideIn(sents []schemas.ReportSentence, side DisagreementSide) bool {
	says := norm(side.Says)
	for _, s := range sents {
		if !strings.Contains(norm(s.Text), says) {
			continue
		}
		for _, b := range citedBlocks(rs.rep, s) {
			if strings.Contains(norm(rs.blocks[b]), says) {
				return true
			}
		}
	}
	return false
}

// ResearchSummary sums the scores of a run.
type ResearchSummary struct {
	Name   string `json:"name"`
	Labels string `json:"labels"`
	// Precision is StatedSentences / CitedSentences over all questions.
	Precision       float64 `json:"report_sentence_precision"`
	CitedSentences  int     `json:"cited_sentences"`
	StatedSentences int     `json:"stated_sentences"`
	Planted         int     `json:"disagreements_planted"`
	Reported        int     `json:"disagreements_reported"`
	Anywhere        int     `json:"disagreements_reported_anywhere"`
	ChangedFacts    int     `json:"changed_facts"`
	ChangedReached  int     `json:"changed_facts_in_report"`
	Repeated        int     `json:"repeated_facts"`
	// CallsPerResearch is the mean of the provider's requests per
	// research.
	CallsPerResearch float64         `json:"calls_per_research"`
	Modes            map[string]int  `json:"modes"`
	Questions        []ResearchScore `json:"questions"`
}

// SumResearch sums the scores of a run.
func SumResearch(name, labels string, scores []ResearchScore) ResearchSummary {
	out := ResearchSummary{Name: name, Labels: labels, Modes: map[string]int{}, Questions: scores}
	calls := 0
	for _, s := range scores {
		out.CitedSentences += s.CitedSentences
		out.StatedSentences += s.StatedSentences
		out.Planted += s.Planted
		out.Reported += s.Reported
		out.Anywhere += s.Anywhere
		out.ChangedFacts += s.ChangedFacts
		out.ChangedReached += len(s.ChangedReached)
		out.Repeated += s.Repeated
		out.Modes[s.Mode]++
		calls += s.Calls
	}
	if out.CitedSentences > 0 {
		out.Precision = round4(float64(out.StatedSentences) / float64(out.CitedSentences))
	}
	if len(scores) > 0 {
		out.CallsPerResearch = round4(float64(calls) / float64(len(scores)))
	}
	return out
}
