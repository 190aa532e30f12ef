package analysis

import (
	"html"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPlainTextDropsMarkdownSyntaxAndKeepsTheWords(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"headings lose their marks", "## Pests\n# Title #", "Pests\nTitle"},
		{"list items, numbers and task boxes lose their marks", "- spray\n  * check\n+ one\n3. three\n4) four\n- [x] done\n- [ ] todo", "spray\ncheck\none\nthree\nfour\ndone\ntodo"},
		{"quotes lose their marks", "> keep calm\n> > nested", "keep calm\nnested"},
		{"emphasis, strike-through and highlight go", "**bold** __strong__ *em* _em_ ~~old~~ ==hi== ***both***", "bold strong em em old hi both"},
		{"code marks go and the code stays", "run `go test` now", "run go test now"},
		{"fences go and the code stays", "```go\nx := 1\n```", "x := 1"},
		{"links and images become their text", "see [the docs](https://example.com/a \"t\") and ![a cat](cat.png)", "see the docs and a cat"},
		{"wikilinks become their alias or target", "ask [[Ladybirds|ladybirds]], [[Aphids]], [[Pests#Spring]] and ![[pic.png]]", "ask ladybirds, Aphids, Pests > Spring and pic.png"},
		{"SiYuan references become their anchor", `as ((20210808180117-6v0mkxr "the guide")) says`, "as the guide says"},
		{"HTML tags and autolinks go", "a<br>b <span class=\"x\">c</span> <https://example.com>", "ab c https://example.com"},
		{"tables lose their pipes and delimiter rows", "| a | b |\n|---|:-:|\n| 1 | 2 |", "a   b\n1   2"},
		{"rows without outer pipes lose their separators", "Command | Arguments\n`db get` | `&lt;id&gt;`\na \\| b | c", "Command   Arguments\ndb get   <id>\na | b   c"},
		{"rules go", "a\n---\nb\n* * *", "a\nb"},
		{"tags lose their hash", "an #idea for C# and #2", "an idea for C# and 2"},
		{"escapes resolve", `a \*literal\* star and 2 * 3 or 2*3`, "a *literal* star and 2 * 3 or 2*3"},
		{"snake_case and Russian stay", "snake_case **Москва** — _столица_", "snake_case Москва — столица"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlainText(tt.in); got != tt.want {
				t.Errorf("PlainText(%q)\n= %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzPlainText checks that any text turns into plain text without a panic,
// keeps being valid UTF-8 when it was, and never grows more words than it had.
func FuzzPlainText(f *testing.F) {
	for _, s := range []string{"", "**", "\\", "[", "[[", "[[|]]", "((", "`", "```", "| |", "&", "&amp;lt;", "#", "# ", "- [ ]",
		"**[a](b)** _c_ `d` ~~e~~ ==f== ![g](h) [[i#j|k]] ((20210808180117-6v0mkxr \"l\")) <m>n</m> \\* 2*3 a_b #tag",
		"\xff\xfe\x00 ** \\\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := PlainText(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("PlainText(%q) = %q: not UTF-8", md, out)
		}
		if len(Tokenize(out)) > len(Tokenize(html.UnescapeString(md)))+strings.Count(md, "|")+strings.Count(md, "&") {
			t.Fatalf("PlainText(%q) = %q: more words than the text", md, out)
		}
	})
}
