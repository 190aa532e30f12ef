package analysis

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	a := newAnalyzer(t, Full)
	cases := []struct {
		name   string
		query  string
		text   string
		tokens int
		want   string
	}{
		{"the original case and ё are kept around a match", "елка",
			"Зелёная Ёлка стоит в лесу", 10,
			"Зелёная [Ёлка] стоит в лесу"},
		{"a word matched only through its lemma is marked", "кошек",
			"Мы живём в доме с кошкой и собакой", 3,
			"…доме с [кошкой]…"},
		{"a suppletive form is matched through its lemma", "человек",
			"Здесь живут люди", 5,
			"Здесь живут [люди]"},
		{"text cut at the end only gets an ellipsis at the end", "кошка",
			"Кошка спит на тёплом диване весь день", 3,
			"[Кошка] спит на…"},
		{"text cut at the start only gets an ellipsis at the start", "день",
			"Кошка спит на тёплом диване весь день", 3,
			"…диване весь [день]"},
		{"text cut at both ends gets two ellipses", "диване",
			"Кошка спит на тёплом диване весь день", 3,
			"…на тёплом [диване]…"},
		{"text that fits gets no ellipsis", "диван",
			"Кошка спит на диване", 10,
			"Кошка спит на [диване]"},
		{"a hyphenated word matched as a whole gets one pair of marks", "Петербург",
			"Он приехал в Санкт-Петербург вчера вечером", 3,
			"…в [Санкт-Петербург]…"},
		{"a hyphenated word matched in another case gets one pair of marks", "Санкт-Петербург",
			"Мы гуляли по Санкт-Петербургу", 10,
			"Мы гуляли по [Санкт-Петербургу]"},
		{"a compound with a stopword inside is marked whole", "Ростов-на-Дону",
			"Поезд идёт в Ростов-на-Дону", 10,
			"Поезд идёт в [Ростов-на-Дону]"},
		{"a number is marked without its case ending", "1990",
			"Это было в 1990-х годах", 10,
			"Это было в [1990]-х годах"},
		{"the window with the most distinct query words wins over more matches", "кошка собака",
			"кошка кошка кошка и потом собака с кошкой", 3,
			"…[собака] с [кошкой]"},
		{"among windows with as many distinct words the one with more matches wins", "кошка",
			"кошка и собака и кошка кошка", 3,
			"…и [кошка] [кошка]"},
		{"white space between words is one space", "спит",
			"Кошка\n\n   спит\tна диване", 3,
			"Кошка [спит] на…"},
		{"text without a match gives its start", "жираф",
			"Кошка спит на диване", 2,
			"Кошка спит…"},
		{"a window of zero words is one word", "диване",
			"Кошка спит на диване", 0,
			"…[диване]"},
		{"text without words gives nothing", "кошка",
			" ... !!! ", 5,
			""},
	}
	o := SnippetOptions{MarkStart: "[", MarkEnd: "]", Ellipsis: "…"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o.Tokens = tc.tokens
			if got := a.Snippet(tc.text, a.Query(tc.query), o); got != tc.want {
				t.Errorf("Snippet(%q, %q) = %q, want %q", tc.text, tc.query, got, tc.want)
			}
		})
	}
}

func TestSnippetInPlainModeMatchesWordsOnly(t *testing.T) {
	a := newAnalyzer(t, Plain)
	o := SnippetOptions{Tokens: 10, MarkStart: "<b>", MarkEnd: "</b>", Ellipsis: "..."}
	cases := []struct {
		name  string
		query string
		text  string
		want  string
	}{
		{"the same word is marked", "кошкой", "Дом с Кошкой", "Дом с <b>Кошкой</b>"},
		{"another form of the word is not", "кошек", "Дом с кошкой", "Дом с кошкой"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Snippet(tc.text, a.Query(tc.query), o); got != tc.want {
				t.Errorf("Snippet(%q, %q) = %q, want %q", tc.text, tc.query, got, tc.want)
			}
		})
	}
}

func TestSnippetCountsAWordMatchedInTwoFormsOnce(t *testing.T) {
	a, err := New(Full)
	if err != nil {
		t.Fatal(err)
	}
	text := "Про кошек кошку кошке. Тут много разных других слов подряд. Кошки и собаки дружат."
	got := a.Snippet(text, a.Query("кошек собак"), SnippetOptions{Tokens: 3, MarkStart: "[", MarkEnd: "]", Ellipsis: "…"})
	if want := "…[Кошки] и [собаки]…"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDecomposedLettersAreComposed(t *testing.T) {
	for _, w := range []string{"кра\u0438\u0306", "\u0415\u0308жик"} {
		toks := Tokenize(w)
		if len(toks) != 1 || (toks[0].Text != "край" && toks[0].Text != "ежик") {
			t.Errorf("Tokenize(%q) = %+v", w, toks)
		}
	}
}

func TestALongHyphenChainIsLookedUpInPieces(t *testing.T) {
	a, err := New(Full)
	if err != nil {
		t.Fatal(err)
	}
	// Each word is looked up in at most maxCompoundParts compounds; trying
	// every length of a 3000-part chain took minutes.
	text := strings.TrimSuffix(strings.Repeat("да-", 3000), "-")
	if got := a.Lemmas(text); got != "" {
		t.Errorf("a chain of stopwords gave %q", got[:min(len(got), 40)])
	}
}
