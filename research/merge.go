package research

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// Attributions: the words before or after a claim that say where it comes
// from ("According to the meeting notes,", "По словам Анны,", "В заметке
// сказано, что") and state nothing of their own.
var (
	leadAttribution = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^\s*(?:according to|as (?:stated|noted|written|described|said|mentioned|recorded) in|as per|per|based on|judging by)\s+[^,:;]{1,80}?\s*[,:]\s*`),
		regexp.MustCompile(`(?i)^\s*(?:по словам|со слов|согласно|по данным|судя по|как (?:сказано|указано|написано|говорится|отмечено|записано) в)\s+[^,:;]{1,80}?\s*[,:]\s*`),
		regexp.MustCompile(`(?i)^\s*(?:в|во)\s+[^,:;]{0,80}?\s*(?:сказано|говорится|указано|написано|отмечено|упоминается|утверждается|записано)\s*[,:]?\s*(?:что\s+)?`),
		regexp.MustCompile(`(?i)^\s*(?:(?:the|this|that|a|an|my|your|one)\s+)?(?:[\p{L}\-]+\s+){0,4}?(?:note|notes|guide|document|page|minutes|record|entry|log)\s+(?:says|said|states|stated|notes|mentions|records|reads|shows)(?:\s+that)?\s*[,:]?\s*`),
		regexp.MustCompile(`(?i)^\s*(?:(?:эта|в)\s+)?(?:заметка|документ|запись|протокол)(?:\s+[^,:;]{0,60}?)?\s+(?:говорит|гласит|сообщает|утверждает|указывает)\s*[,:]?\s*(?:что\s+)?`),
	}
	trailAttribution = []*regexp.Regexp{
		regexp.MustCompile(`(?i)[,;]?\s*(?:according to|as (?:stated|noted|written|described|mentioned|recorded) in|per)\s+[^,.;!?]{1,80}?\s*([.!?…]*)\s*$`),
		regexp.MustCompile(`(?i)[,;]?\s*(?:по словам|согласно|по данным|как (?:сказано|указано|написано|говорится|отмечено) в)\s+[^,.;!?]{1,80}?\s*([.!?…]*)\s*$`),
	}
	leadArticle = regexp.MustCompile(`^(?:the|a|an) `)
)

// ClaimKey is what a fact claims, for telling duplicates apart: its text
// without the attribution around it ("According to X,", "По словам X,",
// "В заметке сказано, что", ", as the guide says"), without quotes («»,
// "", “”, ‘’), in lower case with ё as е, its words only (punctuation and
// spacing dropped), a leading article left out. Numbers stay: "02:00" and
// "02:03" are different claims.
func ClaimKey(text string) string {
	s := strings.TrimSpace(text)
	for range 3 {
		cut := false
		for _, re := range leadAttribution {
			if loc := re.FindStringIndex(s); loc != nil && loc[1] > 0 && loc[1] < len(s) {
				s, cut = s[loc[1]:], true
			}
		}
		if !cut {
			break
		}
	}
	for _, re := range trailAttribution {
		if m := re.FindStringSubmatchIndex(s); m != nil && m[0] > 0 {
			s = s[:m[0]] + s[m[2]:m[3]]
		}
	}
	var words []string
	for _, t := range analysis.Tokenize(s) {
		words = append(words, analysis.Fold(t.Text))
	}
	return leadArticle.ReplaceAllString(strings.Join(words, " "), "")
}

// SameClaim tells whether two facts' texts claim the same (ClaimKey).
func SameClaim(x, y string) bool {
	kx := ClaimKey(x)
	return kx != "" && kx == ClaimKey(y)
}

// merge folds each fact that claims what an earlier one does (SameClaim)
// and shares a block with it into the earlier one; it returns what it did.
func (fs *Facts) merge(a *analysis.Analyzer) []string {
	var notes []string
	keys := make([]string, len(fs.List))
	for i, f := range fs.List {
		keys[i] = ClaimKey(f.Text)
	}
	for i := 0; i < len(fs.List); i++ {
		for j := i + 1; j < len(fs.List); {
			x, y := fs.List[i], fs.List[j]
			if keys[i] == "" || keys[i] != keys[j] || !overlaps(x.BlockIDs, y.BlockIDs) {
				j++
				continue
			}
			fs.List[i] = fs.mergeFacts(a, x, y)
			keys[i] = ClaimKey(fs.List[i].Text)
			fs.List = slices.Delete(fs.List, j, j+1)
			keys = slices.Delete(keys, j, j+1)
			for k := range fs.List {
				fs.List[k].ContradictedBy = remap(fs.List[k].ContradictedBy, y.ID, x.ID, fs.List[k].ID)
			}
			notes = append(notes, fmt.Sprintf("merged %s into %s (the same claim on the same blocks): %s", y.ID, x.ID, y.Text))
		}
	}
	return notes
}

// mergeFacts is x with y folded in: x's id and document, the wording (and
// its reasoning) that its blocks hold best (the larger share of its words
// in the blocks; on a tie the one the blocks write as it is, then the
// higher certainty, then x's), the higher certainty, the union of blocks, citations and the
// facts that contradict them.
func (fs *Facts) mergeFacts(a *analysis.Analyzer, x, y schemas.Fact) schemas.Fact {
	out := x
	for _, id := range y.BlockIDs {
		if !slices.Contains(out.BlockIDs, id) {
			out.BlockIDs = append(out.BlockIDs, id)
		}
	}
	out.Citations = slices.Clone(x.Citations)
	for _, c := range y.Citations {
		if !slices.ContainsFunc(out.Citations, func(h schemas.Citation) bool { return h.BlockID == c.BlockID }) {
			out.Citations = append(out.Citations, c)
		}
	}
	for _, id := range y.ContradictedBy {
		if id != x.ID && !slices.Contains(out.ContradictedBy, id) {
			out.ContradictedBy = append(out.ContradictedBy, id)
		}
	}
	var texts []string
	for _, id := range out.BlockIDs {
		if b, ok := fs.Blocks[id]; ok {
			texts = append(texts, b.Text)
		}
	}
	all := strings.Join(texts, "\n")
	have := lemmaSet(a, all)
	sx, sy := held(a, x.Text, have), held(a, y.Text, have)
	vx, vy := verbatim(x.Text, all), verbatim(y.Text, all)
	switch {
	case sy != sx:
		if sy > sx {
			out.Text, out.Reasoning = y.Text, y.Reasoning
		}
	case vx != vy:
		if vy {
			out.Text, out.Reasoning = y.Text, y.Reasoning
		}
	case certaintyWeight(y.Certainty) > certaintyWeight(x.Certainty):
		out.Text, out.Reasoning = y.Text, y.Reasoning
	}
	if certaintyWeight(y.Certainty) > certaintyWeight(x.Certainty) {
		out.Certainty = y.Certainty
	}
	if y.Updated > out.Updated {
		out.Updated = y.Updated
	}
	return out
}

// verbatim tells whether text, its quotes and end marks aside, is written
// in blocks as it is (case and all).
func verbatim(text, blocks string) bool {
	t := strings.Trim(strings.TrimSpace(text), "«»“”\"'‘’.!?… ")
	return t != "" && strings.Contains(blocks, t)
}

// held is the share of text's content lemmas that have holds.
func held(a *analysis.Analyzer, text string, have map[string]bool) float64 {
	want := lemmaSet(a, text)
	if len(want) == 0 {
		return 0
	}
	return float64(shared(want, have)) / float64(len(want))
}

// certaintyWeight orders certainties: high 3, medium 2, low 1, none 0.
func certaintyWeight(c string) int {
	switch c {
	case schemas.CertaintyHigh:
		return 3
	case schemas.CertaintyMedium:
		return 2
	case schemas.CertaintyLow:
		return 1
	}
	return 0
}

func overlaps(x, y []string) bool {
	for _, id := range x {
		if slices.Contains(y, id) {
			return true
		}
	}
	return false
}

// remap replaces from by to in ids, leaves out self and repeats.
func remap(ids []string, from, to, self string) []string {
	var out []string
	for _, id := range ids {
		if id == from {
			id = to
		}
		if id != self && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
