package claimcheck

import "strings"

// Limiting concepts, shared by both languages.
const (
	Only    = "ONLY"
	Never   = "NEVER"
	Always  = "ALWAYS"
	Except  = "EXCEPT"
	Unless  = "UNLESS"
	All     = "ALL"
	Paid    = "PAID"
	Free    = "FREE"
	Must    = "MUST"
	AtLeast = "AT_LEAST"
	AtMost  = "AT_MOST"
)

// limiterSpec lists, per concept, the phrases that make a claim state it
// (claim) and the further phrases by which a block expresses it too
// (evidence): a claim's "must" is stated by a block's "need to", but a
// claim's "need to" is not required to be in the block. A word ending in *
// is a stem: "платн*" is платный, платной, платная... Phrases are folded
// words; a hyphen between words is skipped.
var limiterSpec = []struct {
	concept, claim, evidence string
}{
	{Only, "only|solely|exclusively|только|лишь|исключительно|всего лишь",
		"just|merely|nothing but|единственн*|всего|не более чем"},
	{Never, "never|никогда", "at no time|ни разу"},
	{Always, "always|всегда", "at all times|every time|each time|invariably|постоянно|неизменно|каждый раз"},
	{Except, "except|excluding|other than|apart from|aside from|кроме|за исключением|исключая",
		"unless|but not|if not|если не|не считая|без учета|без учёта"},
	{Unless, "unless|если только не|разве что",
		"except|excluding|кроме|за исключением|if not|если не|only if|только если|except when"},
	{All, "all|every|each|everything|everyone|everybody|все|всех|всем|всеми|весь|вся|всю|всей|кажд*",
		"any|whole|entire|entirely|in full|любой|любая|любое|любые|любого|любую|любых|любым|любыми|целиком|полностью|всего|всему|always|всегда"},
	{Paid, "paid|premium|платн*|за плату|за деньги",
		"pay|pays|paying|payment|payments|subscription|subscriptions|subscribe|subscribed|subscriber|subscribers|purchase|purchased|fee|fees|charge|charged|license|licence|licensed|pro|membership|оплат*|подписк*|премиум|покупк*|купить|лицензи*"},
	{Free, "free|free of charge|gratis|бесплатн*",
		"no cost|no charge|without charge|без оплаты|даром|без подписки"},
	{Must, "must|required|require|requires|mandatory|obligatory|обязательн*|обязателен|обязан*|должен|должна|должно|должны|требуется",
		"need|needs|needed|necessary|have to|has to|had to|requirement|requirements|необходим*|нужно|нужен|нужна|нужны|надо|требует|требуют|требован*|should"},
	{AtLeast, "at least|no less than|no fewer than|не менее|не меньше|как минимум|минимум|minimum",
		"min|minimal|or more|и более|или более|и больше|или больше|минимальн*"},
	{AtMost, "at most|no more than|не более|не больше|максимум|как максимум|maximum",
		"max|up to|limit|limits|limited|or less|or fewer|или менее|и менее|не превышает|не превышать|лимит*|ограничен*|максимальн*"},
}

// limiterExclusions are phrases where a limiting word limits nothing: "not
// only", "at all", "each other", "все ещё", "кроме того", "free up".
const limiterExclusions = "not only|if only|не только|только что|at all|all right|all in all|after all|each other|" +
	"все еще|все равно|все же|все таки|прежде всего|чаще всего|лучше всего|больше всего|кроме того|" +
	"free up|feel free|free space|free form|lock free|free text"

type limiterPhrase struct {
	words   []string
	concept string // "" for an exclusion
	claim   bool   // it makes a claim state the concept
}

// limiterIndex maps a phrase's first word (or a stem's letters before the
// *) to its phrases, longest first.
var limiterIndex, limiterStems = buildLimiters()

func buildLimiters() (map[string][]limiterPhrase, []limiterPhrase) {
	idx := map[string][]limiterPhrase{}
	var stems []limiterPhrase
	add := func(list, concept string, claim bool) {
		for _, p := range strings.Split(list, "|") {
			ph := limiterPhrase{words: strings.Fields(p), concept: concept, claim: claim}
			if strings.HasSuffix(ph.words[0], "*") {
				stems = append(stems, ph)
				continue
			}
			idx[ph.words[0]] = append(idx[ph.words[0]], ph)
		}
	}
	add(limiterExclusions, "", true)
	for _, s := range limiterSpec {
		add(s.claim, s.concept, true)
		add(s.evidence, s.concept, false)
	}
	for w, list := range idx {
		// Longest first; an exclusion before a concept of the same length.
		for i := 1; i < len(list); i++ {
			for j := i; j > 0 && longer(list[j], list[j-1]); j-- {
				list[j], list[j-1] = list[j-1], list[j]
			}
		}
		idx[w] = list
	}
	return idx, stems
}

func longer(a, b limiterPhrase) bool {
	if len(a.words) != len(b.words) {
		return len(a.words) > len(b.words)
	}
	return a.concept == "" && b.concept != ""
}

// scanLimiters calls fn for each limiting phrase in toks with its token
// span. claim: the claim's reading, where only the phrases that make a claim
// state a concept count and the longest one at a place wins; otherwise every
// phrase counts, so that a block's "only if" expresses both UNLESS and ONLY.
// An exclusion ("not only") matched at a place hides the phrases inside it.
func scanLimiters(toks []token, claim bool, fn func(concept string, i, j int)) {
	for i := 0; i < len(toks); i++ {
		if toks[i].kind != tWord {
			continue
		}
		end := -1
		try := func(ph limiterPhrase) bool {
			if ph.concept != "" && claim && !ph.claim {
				return false
			}
			j, ok := matchPhrase(toks, i, ph.words)
			if !ok {
				return false
			}
			if ph.concept == "" {
				end = j
				return true
			}
			fn(ph.concept, i, j)
			if j > end {
				end = j
			}
			return claim
		}
		stop := false
		for _, ph := range limiterIndex[toks[i].low] {
			if try(ph) {
				stop = true
				break
			}
		}
		if !stop {
			for _, ph := range limiterStems {
				if strings.HasPrefix(toks[i].low, strings.TrimSuffix(ph.words[0], "*")) && try(ph) {
					break
				}
			}
		}
		if end > i {
			i = end - 1
		}
	}
}

// matchPhrase matches words at toks[i:], skipping hyphens between them; a
// word ending in * matches by prefix.
func matchPhrase(toks []token, i int, words []string) (int, bool) {
	j := i
	for k, w := range words {
		if k > 0 {
			for j < len(toks) && toks[j].kind == tPunct && toks[j].raw == "-" {
				j++
			}
		}
		if j >= len(toks) || toks[j].kind != tWord {
			return 0, false
		}
		if stem, ok := strings.CutSuffix(w, "*"); ok {
			if !strings.HasPrefix(toks[j].low, stem) {
				return 0, false
			}
		} else if toks[j].low != w {
			return 0, false
		}
		j++
	}
	return j, true
}

// limitersOf is the set of concepts the text expresses.
func limitersOf(toks []token, claimOnly bool) map[string]bool {
	m := map[string]bool{}
	scanLimiters(toks, claimOnly, func(c string, _, _ int) { m[c] = true })
	return m
}

// missingLimiters returns the claim's limiting phrases whose concept the
// evidence does not express.
func (e *Evidence) missingLimiters(text string, toks []token) []string {
	var out []string
	scanLimiters(toks, true, func(c string, i, j int) {
		if !e.limiters[c] {
			out = append(out, joinRaw(text, toks, i, j-1))
		}
	})
	return out
}

// isLimiterWord reports whether a folded word opens a limiting phrase (it is
// then no name).
func isLimiterWord(w string) bool {
	if _, ok := limiterIndex[w]; ok {
		return true
	}
	for _, ph := range limiterStems {
		if strings.HasPrefix(w, strings.TrimSuffix(ph.words[0], "*")) {
			return true
		}
	}
	return false
}
