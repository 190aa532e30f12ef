package analysis

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kljensen/snowball/russian"
)

// newAnalyzer returns an analyzer in mode m or fails the test.
func newAnalyzer(tb testing.TB, m Mode) *Analyzer {
	tb.Helper()
	a, err := New(m)
	if err != nil {
		tb.Fatalf("New(%s): %v", m, err)
	}
	return a
}

func TestFullLemmas(t *testing.T) {
	a := newAnalyzer(t, Full)
	cases := []struct {
		name string
		text string
		want string
	}{
		{"a suppletive plural gives its singular", "люди", "человек"},
		{"a suppletive genitive plural gives its singular with ё folded", "детей", "ребенок"},
		{"an irregular past tense spelled with ё gives its infinitive", "шёл", "идти"},
		{"the same past tense spelled with е gives the same infinitive", "шел", "идти"},
		{"a comparative gives itself and its positive adjective", "лучше", "лучше хороший"},
		{"a form of two verbs gives both of them", "пошли", "послать пойти"},
		{"a form of a noun and of a verb gives both readings", "стали", "сталь стать"},
		{"a capital Ё is folded like a small one", "Ёжик", "ежик"},
		{"a hyphenated city name gives the parts of its lemma", "Санкт-Петербурга", "санкт петербург"},
		{"a hyphenated adjective is looked up whole", "северо-западный", "северо западный"},
		{"a compound keeps its parts that are not stopwords", "Ростов-на-Дону", "ростов дону"},
		{"a pronoun with a hyphenated particle gives nothing", "кто-нибудь", ""},
		{"a pronoun with a particle leaves the words around it", "кто-нибудь пришёл", "прийти"},
		{"a preposition written with a hyphen gives nothing", "из-за", ""},
		{"a Latin M inside a Cyrillic word is read as Cyrillic", "Mосква", "москва"},
		{"a Latin a inside a Cyrillic word is read as Cyrillic", "мaма", "мама"},
		{"a Cyrillic о inside a Latin word is read as Latin and stemmed", "gоogle", "googl"},
		{"letters with digits stay one term as they are", "iPhone15", "iphone15"},
		{"a Cyrillic and a Latin word joined by a hyphen each give their terms", "тест-drive", "тест тесто drive"},
		{"a decade loses its case ending", "в 1990-х", "1990"},
		{"an ordinal loses its case ending", "5-го мая", "5 мая май"},
		{"a whole word after a number is kept", "1990-годов", "1990 год"},
		{"a decimal number is two numbers", "3.14", "3 14"},
		{"a name with a number gives a stem and the number", "COVID-19", "covid 19"},
		{"English words are stemmed and English stopwords dropped", "The cats are running", "cat run"},
		{"English inflections share a stem", "runs run running", "run run run"},
		{"Russian and English stopwords give nothing", "в и на по the of and", ""},
		{"a letter of another script is kept as it is", "π", "π"},
		{"empty text gives nothing", "", ""},
		{"punctuation alone gives nothing", " -- ... !? ", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Lemmas(tc.text); got != tc.want {
				t.Errorf("Lemmas(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestYoIsFoldedEverywhere(t *testing.T) {
	a := newAnalyzer(t, Full)
	cases := []struct {
		name  string
		texts []string
	}{
		{"a word with Ё, ё or е gives the same terms", []string{"Ёжик", "ёжик", "ежик", "ЕЖИК"}},
		{"a sentence with ё gives the terms of the same sentence with е", []string{
			"Пётр Семёнович принёс зелёную ёлку", "Петр Семенович принес зеленую елку"}},
		{"a stopword spelled with ё is still a stopword", []string{"всё её ещё", "все ее еще", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := a.Lemmas(tc.texts[0])
			for _, text := range tc.texts {
				got := a.Lemmas(text)
				if got != want {
					t.Errorf("Lemmas(%q) = %q, want %q as for %q", text, got, want, tc.texts[0])
				}
				q := a.Query(text)
				for _, s := range []string{got, a.Words(text), strings.Join(q.Words, " "), strings.Join(q.Terms, " ")} {
					if strings.ContainsAny(s, "ёЁ") {
						t.Errorf("the analysis of %q has ё: %q", text, s)
					}
				}
			}
		})
	}
}

func TestWordsWithoutLemmasFallBackToSnowball(t *testing.T) {
	a := newAnalyzer(t, Full)
	d, err := Russian()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		word string
	}{
		{"a made-up genitive plural is stemmed", "зумеров"},
		{"a made-up instrumental plural is stemmed", "зумерами"},
		{"a made-up dative singular is stemmed", "зумеру"},
		{"a word longer than any in the dictionary is stemmed", strings.Repeat("ля", 50)},
		{"a Cyrillic word outside Windows-1251 is stemmed", "їжак"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ls := d.Lemmas(nil, tc.word); len(ls) > 0 {
				t.Fatalf("the dictionary knows %q as %q; pick a word it lacks", tc.word, ls)
			}
			if got, want := a.Lemmas(tc.word), russian.Stem(tc.word, true); got != want {
				t.Errorf("Lemmas(%q) = %q, want the Snowball stem %q", tc.word, got, want)
			}
		})
	}
	t.Run("forms of one made-up word share a stem", func(t *testing.T) {
		if a, b := a.Lemmas("зумеров"), a.Lemmas("зумерами"); a != b || a != "зумер" {
			t.Errorf("зумеров -> %q, зумерами -> %q, want both зумер", a, b)
		}
	})
}

func TestFullQuery(t *testing.T) {
	a := newAnalyzer(t, Full)
	cases := []struct {
		name string
		text string
		want Query
	}{
		{"a Russian question keeps its content words and their lemmas", "Кто такие люди в Санкт-Петербурге?",
			Query{Words: []string{"люди", "санкт", "петербурге"}, Terms: []string{"человек", "санкт", "петербург"}}},
		{"an English question drops its stopwords", "What is the capital of France?",
			Query{Words: []string{"capital", "france"}, Terms: []string{"capit", "franc"}}},
		{"an ambiguous word gives every reading as a term", "стали",
			Query{Words: []string{"стали"}, Terms: []string{"сталь", "стать"}}},
		{"a repeated word and a repeated lemma count once", "Стали, стали и сталь",
			Query{Words: []string{"стали", "сталь"}, Terms: []string{"сталь", "стать"}}},
		{"a word with ё is folded", "Ёжик",
			Query{Words: []string{"ежик"}, Terms: []string{"ежик"}}},
		{"stopwords beside content words are dropped", "кто-нибудь пришёл?",
			Query{Words: []string{"пришел"}, Terms: []string{"прийти"}}},
		{"a query of stopwords only keeps them as words but has no terms", "что это такое",
			Query{Words: []string{"что", "это", "такое"}}},
		{"an English query of stopwords only keeps them as words", "to be or not to be",
			Query{Words: []string{"to", "be", "or", "not"}}},
		{"the case ending of a number is neither a word nor a term", "1990-х",
			Query{Words: []string{"1990"}, Terms: []string{"1990"}}},
		{"a mixed-script word is queried in its fixed script", "Mосква gоogle",
			Query{Words: []string{"москва", "google"}, Terms: []string{"москва", "googl"}}},
		{"search syntax is read as words and separators", `"()*: OR -`,
			Query{Words: []string{"or"}}},
		{"nothing is an empty query", "", Query{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := a.Query(tc.text)
			if !slices.Equal(got.Words, tc.want.Words) || !slices.Equal(got.Terms, tc.want.Terms) {
				t.Errorf("Query(%q) = %#v, want %#v", tc.text, got, tc.want)
			}
		})
	}
}

func TestQueryEmpty(t *testing.T) {
	a := newAnalyzer(t, Full)
	cases := []struct {
		name string
		text string
		want bool
	}{
		{"a query of punctuation is empty", "?!, -- ...", true},
		{"a query of stopwords is not empty", "и или", false},
		{"a query of a number is not empty", "42", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Query(tc.text).Empty(); got != tc.want {
				t.Errorf("Query(%q).Empty() = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestQueryKeepsAtMostMaxQueryTerms(t *testing.T) {
	var words []string
	for i := range 3 * MaxQueryTerms {
		words = append(words, "слово"+strings.Repeat("а", i%7)+string(rune('б'+i/7%30)))
	}
	text := strings.Join(words, " ")
	for _, m := range Modes {
		t.Run(string(m)+" mode cuts words and terms of a long query", func(t *testing.T) {
			q := newAnalyzer(t, m).Query(text)
			if len(q.Words) != MaxQueryTerms {
				t.Errorf("%d words, want %d", len(q.Words), MaxQueryTerms)
			}
			if len(q.Terms) > MaxQueryTerms {
				t.Errorf("%d terms, want at most %d", len(q.Terms), MaxQueryTerms)
			}
		})
	}
}

func TestTokenize(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []Token
	}{
		{"a capital Ё is lower-cased and folded", "Ёжик",
			[]Token{{Text: "ежик", Start: 0, End: 8, Script: Cyrillic}}},
		{"a Latin M in a Cyrillic word becomes Cyrillic", "Mосква",
			[]Token{{Text: "москва", Start: 0, End: 11, Script: Cyrillic}}},
		{"a Cyrillic о in a Latin word becomes Latin", "gоogle",
			[]Token{{Text: "google", Start: 0, End: 7, Script: Latin}}},
		{"a word with digits is one token of script Other", "iPhone15",
			[]Token{{Text: "iphone15", Start: 0, End: 8, Script: Other}}},
		{"a word of two scripts without look-alikes stays as it is", "мирworld",
			[]Token{{Text: "мирworld", Start: 0, End: 11, Script: Other}}},
		{"a Cyrillic and a Latin word joined by a hyphen are two tokens", "тест-drive",
			[]Token{{Text: "тест", Start: 0, End: 8, Script: Cyrillic},
				{Text: "drive", Start: 9, End: 14, Script: Latin, Hyphen: true}}},
		{"a case ending after a number is hyphen-joined", "1990-х",
			[]Token{{Text: "1990", Start: 0, End: 4, Script: Digits},
				{Text: "х", Start: 5, End: 7, Script: Cyrillic, Hyphen: true}}},
		{"a number after a name is hyphen-joined", "COVID-19",
			[]Token{{Text: "covid", Start: 0, End: 5, Script: Latin},
				{Text: "19", Start: 6, End: 8, Script: Digits, Hyphen: true}}},
		{"a decimal point splits a number", "3.14",
			[]Token{{Text: "3", Start: 0, End: 1, Script: Digits},
				{Text: "14", Start: 2, End: 4, Script: Digits}}},
		{"a stress mark is dropped from the text but kept in the span", "моло\u0301ко",
			[]Token{{Text: "молоко", Start: 0, End: 14, Script: Cyrillic}}},
		{"a dash with spaces joins nothing", "север - запад",
			[]Token{{Text: "север", Start: 0, End: 10, Script: Cyrillic},
				{Text: "запад", Start: 13, End: 23, Script: Cyrillic}}},
		{"two hyphens join nothing", "север--запад",
			[]Token{{Text: "север", Start: 0, End: 10, Script: Cyrillic},
				{Text: "запад", Start: 12, End: 22, Script: Cyrillic}}},
		{"a leading hyphen joins nothing", "-запад",
			[]Token{{Text: "запад", Start: 1, End: 11, Script: Cyrillic}}},
		{"Chinese is of script Other", "中文",
			[]Token{{Text: "中文", Start: 0, End: 6, Script: Other}}},
		{"emoji separate words", "да👍нет",
			[]Token{{Text: "да", Start: 0, End: 4, Script: Cyrillic},
				{Text: "нет", Start: 8, End: 14, Script: Cyrillic}}},
		{"text without words has no tokens", " ,.!? 👍 ", []Token{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Tokenize(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Tokenize(%q) =\n%+v\nwant\n%+v", tc.text, got, tc.want)
			}
		})
	}
}

func TestTokenOffsetsPointAtTheOriginalWords(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		spans []string // text[Start:End] of each token
		texts []string // Token.Text of each token
	}{
		{"two-byte letters", "Съешь же ещё этих мягких французских булок!",
			[]string{"Съешь", "же", "ещё", "этих", "мягких", "французских", "булок"},
			[]string{"съешь", "же", "еще", "этих", "мягких", "французских", "булок"}},
		{"combining stress marks", "Моло\u0301ко и сли\u0301вки",
			[]string{"Моло\u0301ко", "и", "сли\u0301вки"},
			[]string{"молоко", "и", "сливки"}},
		{"emoji, flags and joined emoji between words", "Привет 👋 мир 🇷🇺 Россия 👨‍👩‍👧 семья",
			[]string{"Привет", "мир", "Россия", "семья"},
			[]string{"привет", "мир", "россия", "семья"}},
		{"mixed scripts, digits and hyphens", "iPhone15 в Mосква-Сити, 1990-х.",
			[]string{"iPhone15", "в", "Mосква", "Сити", "1990", "х"},
			[]string{"iphone15", "в", "москва", "сити", "1990", "х"}},
		{"letters of four-byte runes", "𝐀𝐁𝐂 и 𝔸",
			[]string{"𝐀𝐁𝐂", "и", "𝔸"},
			[]string{"𝐀𝐁𝐂", "и", "𝔸"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			toks := Tokenize(tc.text)
			var spans, texts []string
			for _, tok := range toks {
				spans = append(spans, tc.text[tok.Start:tok.End])
				texts = append(texts, tok.Text)
			}
			if !slices.Equal(spans, tc.spans) {
				t.Errorf("spans %q, want %q", spans, tc.spans)
			}
			if !slices.Equal(texts, tc.texts) {
				t.Errorf("texts %q, want %q", texts, tc.texts)
			}
		})
	}
}

func TestStemMode(t *testing.T) {
	a := newAnalyzer(t, Stem)
	cases := []struct {
		name string
		text string
		want string
	}{
		{"a Russian word is stemmed, not looked up", "люди", russian.Stem("люди", true)},
		{"a suppletive form does not reach its lemma", "люди детей", "люд дет"},
		{"ё is folded before stemming", "Ёлки", "елк"},
		{"a hyphenated name is stemmed part by part", "Санкт-Петербурга", "санкт петербург"},
		{"English words are stemmed", "running runs", "run run"},
		{"stopwords give nothing", "кто-нибудь и the", ""},
		{"a number loses its case ending", "1990-х", "1990"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Lemmas(tc.text); got != tc.want {
				t.Errorf("Lemmas(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	t.Run("the query terms are the stems", func(t *testing.T) {
		q := a.Query("Где работали люди?")
		want := Query{Words: []string{"работали", "люди"}, Terms: []string{"работа", "люд"}}
		if !slices.Equal(q.Words, want.Words) || !slices.Equal(q.Terms, want.Terms) {
			t.Errorf("Query = %#v, want %#v", q, want)
		}
	})
}

func TestPlainModeHasNoLemmaTerms(t *testing.T) {
	plain, full := newAnalyzer(t, Plain), newAnalyzer(t, Full)
	cases := []struct {
		name string
		text string
	}{
		{"a Russian sentence", "Люди шли в Санкт-Петербург"},
		{"an English sentence", "The cats are running"},
		{"a query of stopwords", "что это"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" has words but no terms", func(t *testing.T) {
			if got := plain.Lemmas(tc.text); got != "" {
				t.Errorf("Lemmas(%q) = %q, want nothing", tc.text, got)
			}
			q := plain.Query(tc.text)
			if len(q.Terms) != 0 {
				t.Errorf("Query(%q).Terms = %q, want none", tc.text, q.Terms)
			}
			if want := full.Query(tc.text).Words; !slices.Equal(q.Words, want) {
				t.Errorf("Query(%q).Words = %q, want %q as in Full mode", tc.text, q.Words, want)
			}
		})
	}
}

func TestWordsKeepEveryWordInNormalForm(t *testing.T) {
	cases := []struct {
		name string
		text string
		want string
	}{
		{"stopwords and punctuation", "Ёжик, в тумане!", "ежик в тумане"},
		{"hyphenated words and number endings", "Санкт-Петербург 1990-х", "санкт петербург 1990 х"},
		{"mixed scripts and stress marks", "Mосква моло\u0301ко", "москва молоко"},
		{"nothing", "", ""},
	}
	for _, m := range Modes {
		a := newAnalyzer(t, m)
		for _, tc := range cases {
			t.Run(string(m)+" mode keeps "+tc.name, func(t *testing.T) {
				if got := a.Words(tc.text); got != tc.want {
					t.Errorf("Words(%q) = %q, want %q", tc.text, got, tc.want)
				}
			})
		}
	}
}

func TestModes(t *testing.T) {
	t.Run("every mode parses from its name and names its analyzer", func(t *testing.T) {
		for _, m := range Modes {
			got, err := ParseMode(string(m))
			if err != nil || got != m {
				t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
			}
			a := newAnalyzer(t, m)
			if a.Mode() != m || a.Name() != string(m)+"/1" {
				t.Errorf("New(%s): mode %q, name %q", m, a.Mode(), a.Name())
			}
		}
	})
	t.Run("an unknown mode is an error", func(t *testing.T) {
		if _, err := ParseMode("Full"); err == nil {
			t.Error("ParseMode(Full) succeeded")
		}
		if _, err := New("lemma"); err == nil {
			t.Error("New(lemma) succeeded")
		}
	})
}

func TestAnalyzerIsSafeForConcurrentUse(t *testing.T) {
	a := newAnalyzer(t, Full)
	texts := []string{"Люди шли в Санкт-Петербург", "стали сталью", "зумеры зумерами", "running runs", "Ёжик в тумане"}
	want := make([]string, len(texts))
	for i, s := range texts {
		want[i] = newAnalyzer(t, Full).Lemmas(s)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 200 {
				i := (g + k) % len(texts)
				if got := a.Lemmas(texts[i]); got != want[i] {
					t.Errorf("Lemmas(%q) = %q, want %q", texts[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}
