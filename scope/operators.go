package scope

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// What an operator sets.
const (
	opTag = iota
	opNotebook
	opPath
	opDoc
	opLang
	opSince  // since:, after:, после: — from the start of the value's period
	opBefore // before:, до: — up to the start of the value's period
	opUntil  // until: — up to the end of the value's period
	opSort   // sort:recent, сортировка:новые — prefer newer notes (Scope.Recent)
)

// operators maps every spelling, English and Russian, to what it sets.
var operators = map[string]int{
	"tag": opTag, "tags": opTag, "тег": opTag, "теги": opTag,
	"in": opNotebook, "notebook": opNotebook, "в": opNotebook, "блокнот": opNotebook,
	"path": opPath, "путь": opPath,
	"doc": opDoc, "док": opDoc, "документ": opDoc,
	"lang": opLang, "язык": opLang,
	"since": opSince, "after": opSince, "после": opSince, "с": opSince,
	"before": opBefore, "до": opBefore,
	"until": opUntil, "по": opUntil,
	"sort": opSort, "сортировка": opSort,
}

// sortOrders are the values of sort: that ask for newer notes first; the
// ranking by relevance is the default and has no value.
var sortOrders = map[string]bool{
	"recent": true, "newest": true, "new": true, "latest": true, "recency": true,
	"новые": true, "новое": true, "новизна": true, "новизне": true, "свежие": true, "свежее": true, "недавние": true,
}

// exactOnly are operator names too near common words to suggest as the
// intended name of an unknown one: "port:8080", "short:" stay words. (The
// Russian "сорт:" is no operator at all: "сорт:антоновка" names a variety.)
var exactOnly = map[string]bool{"sort": true}

// Known lists the operators for messages.
const Known = "tag:, in:, path:, doc:, lang:, since:, after:, before:, until:, sort:recent " +
	"(тег:, в:, блокнот:, путь:, док:, язык:, с:, после:, до:, по:, сортировка:новые); " +
	"-tag: or not-tag: (не-тег:) excludes"

// negatable operators may be excluded with '-', "not-" or "не-".
func negatable(op int) bool { return op <= opLang }

// token is one operator as written in the text.
type token struct {
	name, value string
	negated     bool
	start, end  int
}

// scanToken reads the operator-shaped token at s[i:]: an optional '-',
// "not-" or "не-", a name of letters, ':' and a value right after it,
// starting with a letter, digit, '#', a quote (then it may hold spaces) or
// one '/'. ok is false for anything else: "http://x", "10:30", "Note: x"
// and "C:\dir" are words.
func scanToken(s string, i int) (t token, ok bool, err error) {
	t.start = i
	j := i
	if j < len(s) && s[j] == '-' {
		t.negated, j = true, j+1
	}
	k := j
	for k < len(s) {
		r, n := utf8.DecodeRuneInString(s[k:])
		if !unicode.IsLetter(r) && !(r == '-' || r == '_') || k == j && !unicode.IsLetter(r) {
			break
		}
		k += n
	}
	if k == j || k >= len(s) || s[k] != ':' || k+1 >= len(s) {
		return t, false, nil
	}
	t.name = strings.ToLower(s[j:k])
	for _, pre := range []string{"not-", "не-"} {
		if rest, cut := strings.CutPrefix(t.name, pre); cut && rest != "" {
			t.name, t.negated = rest, true
		}
	}
	v := k + 1
	r, n := utf8.DecodeRuneInString(s[v:])
	if closing, quoted := quotePairs[r]; quoted {
		end := strings.IndexRune(s[v+n:], closing)
		if end < 0 {
			return t, true, fmt.Errorf("%s: the quote after %q is not closed: close it, as in %s:\"Work notes\"", s[i:k+1], s[i:k+1], t.name)
		}
		t.value, t.end = s[v+n:v+n+end], v+n+end+utf8.RuneLen(closing)
		return t, true, nil
	}
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '#' && r != '/' || strings.HasPrefix(s[v:], "//") {
		return t, false, nil
	}
	t.end = v + strings.IndexFunc(s[v:]+" ", unicode.IsSpace)
	t.value = strings.TrimRight(s[v:t.end], ",;!?")
	return t, true, nil
}

// apply adds one known operator to the scope.
func (c cal) apply(op int, t token, s *schemas.Scope, r *ranges) error {
	if t.negated && op == opSort {
		return fmt.Errorf("%s: cannot be negated: leave it out to rank by relevance alone", t.name)
	}
	if t.negated && !negatable(op) {
		return fmt.Errorf("%s: a date operator cannot be negated: use before: for -after:, after: for -before:", t.name)
	}
	set := &s.Include
	if t.negated {
		set = &s.Exclude
	}
	v := strings.TrimSpace(t.value)
	if v == "" {
		return fmt.Errorf("%s: has no value: write %s:value, or %s:\"two words\"", t.name, t.name, t.name)
	}
	switch op {
	case opTag:
		set.Tags = addUnique(set.Tags, strings.Trim(v, "#"))
	case opNotebook:
		set.Notebooks = addUnique(set.Notebooks, v)
	case opPath:
		set.Paths = addUnique(set.Paths, strings.Trim(v, "/"))
	case opDoc:
		set.Docs = addUnique(set.Docs, v)
	case opLang:
		l, ok := langNames[strings.ToLower(v)]
		if !ok {
			return fmt.Errorf("%s:%s: unknown language: want %s or %s", t.name, v, lang.LangRussian, lang.LangEnglish)
		}
		set.Langs = addUnique(set.Langs, l)
	case opSort:
		if !sortOrders[strings.ToLower(v)] {
			return fmt.Errorf("%s:%s: unknown order: want %s:recent (newest, latest; Russian новые, новизна, свежие) for newer notes first; "+
				"without it results are ranked by relevance", t.name, v, t.name)
		}
		s.Recent = true
	default:
		p, err := c.parseValue(v)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		if err := r.addOperator(op, p); err != nil {
			return fmt.Errorf("%s:%s: %w", t.name, v, err)
		}
	}
	return nil
}

var langNames = map[string]string{
	"ru": lang.LangRussian, "rus": lang.LangRussian, "russian": lang.LangRussian,
	"рус": lang.LangRussian, "русский": lang.LangRussian, "ру": lang.LangRussian,
	"en": lang.LangEnglish, "eng": lang.LangEnglish, "english": lang.LangEnglish,
	"англ": lang.LangEnglish, "английский": lang.LangEnglish,
}

func addUnique(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// nearOperator is the known operator an unknown name is a typo of ("tga",
// "pth", "lnag"), or "" when it is no near miss. Names of one or two
// letters are never typos: "re:", "ok:" are words.
func nearOperator(name string) string {
	if utf8.RuneCountInString(name) < 3 {
		return ""
	}
	for _, known := range slices.Sorted(maps.Keys(operators)) {
		if utf8.RuneCountInString(known) >= 3 && !exactOnly[known] && editDistance(name, known) <= 1+utf8.RuneCountInString(known)/6 {
			return known
		}
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (adjacent swaps cost 1) in runes.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
