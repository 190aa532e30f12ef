package analysis

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzAnalyzer checks that any text can be analysed in every mode without a
// panic, that every term is one clean word, and that token offsets are valid.
func FuzzAnalyzer(f *testing.F) {
	for _, s := range []string{
		"",
		"Люди шли в Санкт-Петербург, а Ёжик — в туман.",
		"кто-нибудь из-за Ростов-на-Дону северо-западный по-русски",
		"Mосква gоogle iPhone15 тест-drive мирworld",
		"1990-х 5-го 3.14 COVID-19 -1 --2 1-- ---",
		"моло\u0301ко е\u0308лка кра\u0438\u0306 \u0301 \u0301-слово",
		"Привет 👋 мир 🇷🇺 👨‍👩‍👧 ❤️да 1️⃣ #️⃣",
		"中文 日本語 한국어 العربية עברית ελληνικά π",
		"İstanbul ǅ ß straße ﬁ Ωmega ŉ",
		"\xff\xfe кот\xffпёс \x00\x01\x02",
		strings.Repeat("а", 100) + " " + strings.Repeat("ё", 60),
		strings.Repeat("ab-", 40),
		"\ufeffтекст с BOM\u200b и\u00adмягким переносом",
		"ѣ ї є ґ ў і ј",
		"\"()*: OR AND NOT NEAR ^ -",
	} {
		f.Add(s)
	}
	var analyzers []*Analyzer
	for _, m := range Modes {
		analyzers = append(analyzers, newAnalyzer(f, m))
	}
	d, err := Russian()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		toks := Tokenize(text)
		prevEnd := 0
		for i, tok := range toks {
			if tok.Start < prevEnd || tok.Start >= tok.End || tok.End > len(text) {
				t.Fatalf("token %d %+v: bad span after %d in %d bytes", i, tok, prevEnd, len(text))
			}
			prevEnd = tok.End
			checkTerm(t, "token", tok.Text)
			for _, l := range d.Lemmas(nil, tok.Text) {
				checkTerm(t, "lemma", l)
			}
		}
		d.Lemmas(nil, text)
		for _, a := range analyzers {
			if l := a.Lemmas(text); l != "" {
				for _, term := range strings.Split(l, " ") {
					checkTerm(t, string(a.Mode())+" Lemmas term", term)
				}
			}
			q := a.Query(text)
			if len(q.Words) > MaxQueryTerms || len(q.Terms) > MaxQueryTerms {
				t.Errorf("%s Query: %d words and %d terms", a.Mode(), len(q.Words), len(q.Terms))
			}
			for _, w := range q.Words {
				checkTerm(t, string(a.Mode())+" query word", w)
			}
			for _, term := range q.Terms {
				checkTerm(t, string(a.Mode())+" query term", term)
			}
			o := SnippetOptions{Tokens: 5, MarkStart: "[", MarkEnd: "]", Ellipsis: "…"}
			if s := a.Snippet(text, q, o); (s == "") != (len(toks) == 0) {
				t.Errorf("%s Snippet = %q for %d tokens", a.Mode(), s, len(toks))
			}
		}
	})
}

// checkTerm fails the test unless term is a non-empty word in normal form:
// valid UTF-8 with no white space and no ё.
func checkTerm(t *testing.T, what, term string) {
	t.Helper()
	switch {
	case term == "":
		t.Errorf("empty %s", what)
	case !utf8.ValidString(term):
		t.Errorf("%s %q is not valid UTF-8", what, term)
	case strings.ContainsFunc(term, unicode.IsSpace):
		t.Errorf("%s %q has white space", what, term)
	case strings.ContainsAny(term, "ёЁ"):
		t.Errorf("%s %q has ё", what, term)
	}
}
