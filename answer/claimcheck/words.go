package claimcheck

import (
	"regexp"
	"strings"
)

// wordSet builds a set from space-separated folded words.
func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// negationWords and fillerWords are answer/cite.go's: negation is the
// verifier's to judge, and fillers state nothing.
var (
	negationWords = wordSet(`не нет ни никогда нельзя ничего ничто никто никого никому никем нигде никуда
		ниоткуда никак никакой никакая никакое никакие никаких ничей невозможно
		not no never cannot none nor neither nothing nobody nowhere`)
	fillerWords = wordSet(`yes yeah indeed sure ok okay exactly also here
		да конечно верно именно точно так ок также`)
)

// connectives join clauses; they are no clause's content.
var connectives = wordSet(`however although though whereas because while also additionally moreover furthermore
	meanwhile instead otherwise therefore thus hence besides still yet
	однако хотя зато причем поскольку ибо потому поэтому также кроме того итак впрочем тогда`)

// Connective fillers: phrases that say where the claim comes from ("According
// to the notes,", "В заметках сказано:") and state nothing of their own.
const (
	enSource = `(?:the |your |my |this |these |our )?(?:[\p{L}\-']+ ){0,3}?(?:notes?|guides?|documentation|docs|manual|handbook|context|contexts|sources?|blocks?|text|passage|article|page)`
	enSays   = `(?:says?|said|states?|stated|mentions?|mentioned|explains?|explained|notes?|indicates?|describes?|specifies|reads|tells? us|confirms?|points? out|shows?|suggests?|clarifies|adds)`
	ruSource = `(?:(?:этой|данной|вашей|ваших|моих|этих|ваша|ваши|мои|эти|ваше|этом|данном|вашем|моем|моём)\s+)?(?:\p{L}+\s+){0,2}?(?:заметк\p{L}*|руководств\p{L}*|документаци\p{L}*|справк\p{L}*|контекст\p{L}*|источник\p{L}*|блок\p{L}*|текст\p{L}*|инструкци\p{L}*|материал\p{L}*|записях|записи)`
	ruSays   = `(?:сказано|говорится|указано|написано|отмечается|отмечено|упоминается|упомянуто|описано|пишется|утверждается|объясняется|поясняется|сообщается)`
)

var (
	leadFillerRE = regexp.MustCompile(`(?i)^\s*(?:` +
		`(?:according to|as (?:stated|described|noted|explained|mentioned|written|shown) in|as per|based on) ` + enSource +
		`|` + enSource + ` ` + enSays + `(?: that)?` +
		`|it is (?:stated|said|noted|mentioned|written|explained) (?:in ` + enSource + ` )?that` +
		`|(?:in|within) (?:the |your |my )?(?:notes?|guide|documentation|docs|manual|context)` +
		`|in short|in summary|in brief|to summari[sz]e|to sum up|in other words|that is|additionally|in addition|moreover|furthermore|note that|yes|indeed|also|so` +
		`|(?:в|во) ` + ruSource + `(?:\s+` + ruSays + `)?(?:,?\s+что)?` +
		`|(?:согласно|судя по) ` + ruSource +
		`|по (?:данным|словам|сведениям) ` + ruSource +
		`|как (?:` + ruSays + `|следует из) (?:в )?` + ruSource +
		`|` + ruSource + ` (?:говор\p{L}*|утвержда\p{L}*|сообща\p{L}*|указыва\p{L}*|описыва\p{L}*|объясня\p{L}*|гласит|поясня\p{L}*)(?:,?\s+что)?` +
		`|кроме того|также|итак|короче говоря|в общем|в итоге|таким образом|да|то есть|иными словами|другими словами|словом` +
		`)\s*(?:[,:—–-]\s*|\s+|$)`)
	trailFillerRE = regexp.MustCompile(`(?i)[,;]?\s*(?:` +
		`(?:according to|as (?:stated|described|noted|explained|mentioned|written|shown) in|as per|per) ` + enSource +
		`|(?:as )?` + enSource + ` ` + enSays +
		`|(?:как )?` + ruSays + ` в ` + ruSource +
		`|(?:согласно|судя по) ` + ruSource +
		`|по (?:данным|словам|сведениям) ` + ruSource +
		`)\s*([.!?…]*)\s*$`)
)

// stripFillers takes connective fillers off the claim's start and end.
func stripFillers(s string) string {
	for range 3 {
		loc := leadFillerRE.FindStringIndex(s)
		if loc == nil || loc[1] == 0 || loc[1] >= len(s) {
			break
		}
		s = s[loc[1]:]
	}
	if m := trailFillerRE.FindStringSubmatchIndex(s); m != nil && m[0] > 0 {
		s = s[:m[0]] + s[m[2]:m[3]]
	}
	return s
}
