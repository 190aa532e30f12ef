package chunking

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/chunking/chunkingtest"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// checkPieces checks what holds for every split: sizes, hashes, ids, ordinals.
func checkPieces(t *testing.T, doc *schemas.DocChanged, cfg Config, pieces []Piece) {
	t.Helper()
	ids := map[string]bool{}
	for i, p := range pieces {
		if p.Ordinal != i {
			t.Errorf("chunk %d: ordinal %d", i, p.Ordinal)
		}
		if p.Tokens != lang.EstimateTokens(p.Text) {
			t.Errorf("chunk %d: tokens %d, text has %d", i, p.Tokens, lang.EstimateTokens(p.Text))
		}
		if p.Tokens > cfg.MaxTokens {
			t.Errorf("chunk %d: %d tokens, over the max %d", i, p.Tokens, cfg.MaxTokens)
		}
		if sum := sha256.Sum256([]byte(p.Text)); p.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("chunk %d: hash is not the sha256 of its text", i)
		}
		if !strings.HasPrefix(p.ID, doc.DocID+":") || len(p.ID) != len(doc.DocID)+17 {
			t.Errorf("chunk %d: id %q", i, p.ID)
		}
		if ids[p.ID] {
			t.Errorf("chunk %d: id %s repeats", i, p.ID)
		}
		ids[p.ID] = true
		if len(p.BlockIDs) == 0 || strings.TrimSpace(p.Text) == "" {
			t.Errorf("chunk %d: no blocks or no text", i)
		}
		if !sort.StringsAreSorted(p.Refs) || len(slices.Compact(slices.Clone(p.Refs))) != len(p.Refs) {
			t.Errorf("chunk %d: refs %v are not sorted and unique", i, p.Refs)
		}
	}
}

// ownCount counts the chunks that list each block id.
func ownCount(pieces []Piece) map[string]int {
	n := map[string]int{}
	for _, p := range pieces {
		for _, id := range p.BlockIDs {
			n[id]++
		}
	}
	return n
}

// overlapTokens returns the tokens of the longest suffix of prev, starting at
// a word, that next starts with (0 when none).
func overlapTokens(prev, next string) int {
	for i := 1; i < len(prev); i++ {
		if prev[i-1] != ' ' && prev[i-1] != '\n' {
			continue
		}
		if strings.HasPrefix(next, prev[i:]) {
			return lang.EstimateTokens(prev[i:])
		}
	}
	return 0
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"the defaults are valid", DefaultConfig(), nil},
		{"an overlap as large as the minimum is rejected", Config{MinTokens: 30, MaxTokens: 40, OverlapTokens: 30}, []string{"overlap tokens 30 must be below min tokens 30"}},
		{"a maximum below the minimum is rejected", Config{MinTokens: 300, MaxTokens: 200, OverlapTokens: 10}, []string{"max tokens 200 is below min tokens 300"}},
		{"a negative overlap is rejected", Config{MinTokens: 10, MaxTokens: 20, OverlapTokens: -1}, []string{"overlap tokens is -1"}},
		{"every problem is reported at once", Config{MinTokens: 0, MaxTokens: -5, OverlapTokens: -1},
			[]string{"min tokens is 0", "max tokens -5 is below", "overlap tokens is -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to say %q", err, w)
				}
			}
		})
	}
	if d := DefaultConfig(); d.OverlapTokens < 20 || d.OverlapTokens > 40 {
		t.Errorf("default overlap %d is outside 20-40", d.OverlapTokens)
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"an empty string has no tokens", "", 0},
		{"spaces have no tokens", " \n\t ", 0},
		{"a short English word is one token", "hello", 1},
		{"words and punctuation count one each", "Hello, world!", 4},
		{"a long Latin word counts one more per six runes", "internationalization", 4},
		{"a long Cyrillic word counts one more per five runes", "достопримечательность", 5},
		{"short Russian words are one token each", "я иду домой", 3},
		{"a year is one token", "2024", 1},
		{"a long number counts one more per four digits", "123456789", 3},
		{"a run of one punctuation rune counts one per four", "... ---- =====", 4},
		{"mixed scripts in one word count apart", "iPhone15", 2},
		{"a heading marker is one token", "## Setup", 2},
		{"combining marks do not add tokens", "заме́тка", 2},
		{"ideographs count one each", "知识库", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lang.EstimateTokens(tt.in); got != tt.want {
				t.Errorf("lang.EstimateTokens(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
	t.Run("it is additive over whitespace", func(t *testing.T) {
		d := chunkingtest.NewDoc("x", 3)
		a, b := d.Text("en", 3), d.Text("ru", 3)
		if got, want := lang.EstimateTokens(a+"\n\n"+b), lang.EstimateTokens(a)+lang.EstimateTokens(b); got != want {
			t.Errorf("joined %d, apart %d", got, want)
		}
	})
	t.Run("it does not allocate", func(t *testing.T) {
		s := chunkingtest.NewDoc("x", 4).Text("ru", 20)
		if n := testing.AllocsPerRun(100, func() { lang.EstimateTokens(s) }); n != 0 {
			t.Errorf("%v allocations per call", n)
		}
	})
	t.Run("Russian text costs more tokens per word than English", func(t *testing.T) {
		d := chunkingtest.NewDoc("x", 5)
		en, ru := d.Text("en", 50), d.Text("ru", 50)
		perWord := func(s string) float64 { return float64(lang.EstimateTokens(s)) / float64(len(strings.Fields(s))) }
		t.Logf("tokens per word: en %.2f, ru %.2f", perWord(en), perWord(ru))
		if perWord(en) < 1.1 || perWord(en) > 1.8 || perWord(ru) <= perWord(en) || perWord(ru) > 2.5 {
			t.Errorf("tokens per word en %.2f, ru %.2f", perWord(en), perWord(ru))
		}
	})
}

func TestDetectLang(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"Russian text is ru", "Поиск по заметкам работает быстро.", "ru"},
		{"English text is en", "Search over notes is fast.", "en"},
		{"Russian with English terms is still ru", "Мы используем NATS JetStream и SQLite для индекса.", "ru"},
		{"English with a Russian word is en", "The word заметка means a note in this knowledge base.", "en"},
		{"a third Cyrillic is ru", "abcdefgh абвг", "ru"},
		{"digits only have no language", "2024-01-01 12:00", ""},
		{"punctuation only has no language", "--- !!! ...", ""},
		{"an empty string has no language", "", ""},
		{"another script is not guessed", "Το σύστημα λειτουργεί", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lang.DetectLang(tt.in); got != tt.want {
				t.Errorf("lang.DetectLang(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitLongDocument(t *testing.T) {
	cfg := DefaultConfig()
	d := chunkingtest.LongDoc("long", 24)
	doc := &d.Doc
	pieces := Split(doc, cfg)
	checkPieces(t, doc, cfg, pieces)

	// Every block that fits is in exactly one chunk, whole; only an oversize
	// leaf is in several, and those are consecutive.
	count := ownCount(pieces)
	oversize := 0
	for _, b := range doc.Blocks {
		text := strings.TrimSpace(b.Text)
		tokens := lang.EstimateTokens(text)
		switch {
		case text == "":
			if count[b.ID] > 1 {
				t.Errorf("block %s without text is in %d chunks", b.ID, count[b.ID])
			}
		case tokens > cfg.MaxTokens:
			oversize++
			if count[b.ID] < 2 {
				t.Errorf("oversize block %s (%d tokens) is in %d chunks", b.ID, tokens, count[b.ID])
			}
		default:
			if count[b.ID] != 1 {
				t.Errorf("block %s (%d tokens) is in %d chunks, want 1", b.ID, tokens, count[b.ID])
				continue
			}
			for _, p := range pieces {
				if slices.Contains(p.BlockIDs, b.ID) && !strings.Contains(p.Text, text) {
					t.Errorf("block %s is not whole in chunk %d", b.ID, p.Ordinal)
				}
			}
		}
	}
	if oversize == 0 {
		t.Fatal("the fixture has no oversize block")
	}

	// Distribution.
	buckets := make([]int, cfg.MaxTokens/50+1)
	within := 0
	sizes := make([]int, len(pieces))
	langs := map[string]int{}
	for i, p := range pieces {
		buckets[p.Tokens/50]++
		sizes[i] = p.Tokens
		langs[p.Lang]++
		if p.Tokens >= cfg.MinTokens && p.Tokens <= cfg.MaxTokens {
			within++
		}
	}
	slices.Sort(sizes)
	var hist strings.Builder
	for i, n := range buckets {
		if n > 0 {
			fmt.Fprintf(&hist, " [%d-%d):%d", i*50, i*50+50, n)
		}
	}
	size := 0
	for _, b := range doc.Blocks {
		size += len(b.Text)
	}
	t.Logf("%d blocks, %d bytes, %d chunks; tokens min %d, median %d, max %d; %d of %d (%.0f%%) within [%d, %d]; langs %v",
		len(doc.Blocks), size, len(pieces), sizes[0], sizes[len(sizes)/2], sizes[len(sizes)-1],
		within, len(pieces), 100*float64(within)/float64(len(pieces)), cfg.MinTokens, cfg.MaxTokens, langs)
	t.Logf("histogram:%s", hist.String())
	if within*10 < len(pieces)*8 {
		t.Errorf("only %d of %d chunks are within [%d, %d]", within, len(pieces), cfg.MinTokens, cfg.MaxTokens)
	}
	if langs["ru"] == 0 || langs["en"] == 0 || langs[""] != 0 {
		t.Errorf("chunk languages %v", langs)
	}
}

func TestSplitOverlap(t *testing.T) {
	cfg := DefaultConfig()
	d := chunkingtest.LongDoc("ov", 24)
	pieces := Split(&d.Doc, cfg)
	var sizes []int
	for i := 1; i < len(pieces); i++ {
		prev, p := pieces[i-1], pieces[i]
		n := overlapTokens(prev.Text, p.Text)
		sectionStart := strings.HasPrefix(p.Text, "# ") || strings.HasPrefix(p.Text, "## ")
		switch {
		case sectionStart && n > 0:
			t.Errorf("chunk %d starts a section but has %d tokens of overlap", i, n)
		case !sectionStart && (n < cfg.OverlapTokens/2 || n > cfg.OverlapTokens):
			t.Errorf("chunk %d continues a section with %d tokens of overlap, want %d-%d:\n%.200q\n%.200q",
				i, n, cfg.OverlapTokens/2, cfg.OverlapTokens, prev.Text[max(0, len(prev.Text)-200):], p.Text)
		case !sectionStart:
			sizes = append(sizes, n)
		}
	}
	if len(sizes) < 10 {
		t.Fatalf("only %d chunks continue a section", len(sizes))
	}
	slices.Sort(sizes)
	t.Logf("overlap tokens over %d chunks: min %d, median %d, max %d", len(sizes), sizes[0], sizes[len(sizes)/2], sizes[len(sizes)-1])
}

func TestSplitSectionPaths(t *testing.T) {
	// Small chunks so that every heading starts one.
	cfg := Config{MinTokens: 10, MaxTokens: 40, OverlapTokens: 3}
	d := chunkingtest.NewDoc("sp", 7)
	para := func() string { return d.Text("en", 1) + " " + d.Text("en", 1) }
	d.Heading(1, "A")
	d.Para(para())
	d.Heading(2, "B")
	d.Para(para())
	d.Heading(3, "C")
	d.Para(para())
	d.Heading(2, "D")
	d.Para(para())
	d.Heading(4, "E")
	d.Para(para())
	d.Heading(1, "F")
	d.Para(para())
	pieces := Split(&d.Doc, cfg)
	checkPieces(t, &d.Doc, cfg, pieces)

	heads := map[string]string{}
	for _, b := range d.Doc.Blocks {
		if b.Type == schemas.BlockHeading {
			heads[b.Text] = b.ID
		}
	}
	tests := []struct {
		name    string
		heading string
		want    []string
	}{
		{"a level 1 heading follows the title path", "A", []string{"Notes", "Doc sp", "A"}},
		{"a level 2 heading nests under level 1", "B", []string{"Notes", "Doc sp", "A", "B"}},
		{"a level 3 heading nests under level 2", "C", []string{"Notes", "Doc sp", "A", "B", "C"}},
		{"a level 2 heading closes the level 2 and 3 before it", "D", []string{"Notes", "Doc sp", "A", "D"}},
		{"a skipped level nests directly", "E", []string{"Notes", "Doc sp", "A", "D", "E"}},
		{"a level 1 heading closes everything", "F", []string{"Notes", "Doc sp", "F"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range pieces {
				if len(p.BlockIDs) > 0 && p.BlockIDs[0] == heads[tt.heading] {
					if !slices.Equal(p.SectionPath, tt.want) {
						t.Errorf("section path %q, want %q", p.SectionPath, tt.want)
					}
					return
				}
			}
			t.Errorf("no chunk starts at heading %s", tt.heading)
		})
	}
	t.Run("the title stands in for an empty title path", func(t *testing.T) {
		doc := d.Doc
		doc.TitlePath = nil
		p := Split(&doc, cfg)
		if want := []string{"Doc sp", "A"}; !slices.Equal(p[0].SectionPath, want) {
			t.Errorf("section path %q, want %q", p[0].SectionPath, want)
		}
	})
	t.Run("a top heading that is the title is not repeated after it", func(t *testing.T) {
		// A Markdown note's title is its first level 1 heading.
		d := chunkingtest.NewDoc("sp3", 9)
		d.Doc.Title, d.Doc.TitlePath = "Tomatoes", []string{"veg", "Tomatoes"}
		d.Heading(1, "Tomatoes")
		d.Para(para())
		d.Heading(2, "Pests")
		d.Para(para())
		d.Heading(1, "tomatoes ")
		d.Para(para())
		var got [][]string
		for _, p := range Split(&d.Doc, cfg) {
			got = append(got, p.SectionPath)
		}
		got = slices.CompactFunc(got, slices.Equal) // a section may take several chunks
		want := [][]string{{"veg", "Tomatoes"}, {"veg", "Tomatoes", "Pests"}, {"veg", "Tomatoes"}}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("section paths %q, want %q", got, want)
		}
	})
	t.Run("a chunk inside a section carries the headings above it", func(t *testing.T) {
		d := chunkingtest.NewDoc("sp2", 8)
		d.Heading(2, "Intro")
		d.Heading(3, "Deep")
		for range 20 {
			d.Para(d.Text("en", 4))
		}
		pieces := Split(&d.Doc, DefaultConfig())
		if len(pieces) < 3 {
			t.Fatalf("%d chunks", len(pieces))
		}
		if want := []string{"Notes", "Doc sp2", "Intro"}; !slices.Equal(pieces[0].SectionPath, want) {
			t.Errorf("chunk 0 starts at Intro: section path %q, want %q", pieces[0].SectionPath, want)
		}
		for _, p := range pieces[1:] {
			if want := []string{"Notes", "Doc sp2", "Intro", "Deep"}; !slices.Equal(p.SectionPath, want) {
				t.Errorf("chunk %d: section path %q, want %q", p.Ordinal, p.SectionPath, want)
			}
		}
	})
}

func TestSplitRules(t *testing.T) {
	cfg := DefaultConfig()
	tests := []struct {
		name  string
		build func(d *chunkingtest.DocBuilder) *schemas.DocChanged
		check func(t *testing.T, doc *schemas.DocChanged, pieces []Piece)
	}{
		{
			name: "a document without text has no chunks",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para("")
				d.List("", " ")
				d.Heading(2, "  ")
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 0 {
					t.Errorf("%d chunks", len(pieces))
				}
			},
		},
		{
			name: "a deleted document has no chunks",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para("text")
				d.Doc.Deleted = true
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 0 {
					t.Errorf("%d chunks", len(pieces))
				}
			},
		},
		{
			name: "a block that fits goes whole into the next chunk",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				for _, n := range []int{150, 300} {
					text := ""
					for lang.EstimateTokens(text) < n {
						text += d.Sentence("en") + " "
					}
					d.Para(strings.TrimSpace(text))
				}
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 2 {
					t.Fatalf("%d chunks", len(pieces))
				}
				for i, p := range pieces {
					if !slices.Equal(p.BlockIDs, []string{doc.Blocks[i].ID}) || !strings.HasSuffix(p.Text, doc.Blocks[i].Text) {
						t.Errorf("chunk %d: blocks %v", i, p.BlockIDs)
					}
				}
			},
		},
		{
			name: "an oversize paragraph is cut at sentences into parts that carry its id",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para(d.Text("ru", 80))
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				if len(pieces) < 3 {
					t.Fatalf("%d chunks", len(pieces))
				}
				id := doc.Blocks[0].ID
				for _, p := range pieces {
					if !slices.Equal(p.BlockIDs, []string{id}) || !strings.HasSuffix(p.Text, ".") {
						t.Errorf("chunk %d: blocks %v, ends %q", p.Ordinal, p.BlockIDs, p.Text[len(p.Text)-10:])
					}
					if p.Ordinal < len(pieces)-1 && p.Tokens < cfg.MinTokens {
						t.Errorf("chunk %d: %d tokens", p.Ordinal, p.Tokens)
					}
				}
			},
		},
		{
			name: "a list that fits stays one unit, container first, items marked",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para(d.Text("en", 3))
				d.List("first item", "second item")
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 1 {
					t.Fatalf("%d chunks", len(pieces))
				}
				var want []string
				for _, b := range doc.Blocks {
					want = append(want, b.ID)
				}
				if !slices.Equal(pieces[0].BlockIDs, want) {
					t.Errorf("blocks %v, want %v", pieces[0].BlockIDs, want)
				}
				if !strings.HasSuffix(pieces[0].Text, "\n\n- first item\n\n- second item") {
					t.Errorf("text %q", pieces[0].Text)
				}
			},
		},
		{
			name: "an oversize list is replaced by its items",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				items := make([]string, 40)
				for i := range items {
					items[i] = d.Text("en", 2)
				}
				d.List(items...)
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				if len(pieces) < 2 {
					t.Fatalf("%d chunks", len(pieces))
				}
				count := ownCount(pieces)
				if count[doc.Blocks[0].ID] != 0 {
					t.Errorf("the split list is in %d chunks", count[doc.Blocks[0].ID])
				}
				for _, b := range doc.Blocks[1:] {
					if count[b.ID] != 1 {
						t.Errorf("block %s is in %d chunks", b.ID, count[b.ID])
					}
				}
				for _, p := range pieces {
					if p.BlockIDs[0] != doc.Blocks[1].ID && doc.Blocks[slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.ID == p.BlockIDs[0] })].Type != schemas.BlockListItem {
						t.Errorf("chunk %d starts at %s, not at an item", p.Ordinal, p.BlockIDs[0])
					}
				}
			},
		},
		{
			name: "nested list items are indented",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				l := d.Add(schemas.BlockList, "", 0, "")
				li := d.Add(schemas.BlockListItem, l, 0, "")
				d.Add(schemas.BlockParagraph, li, 0, "outer")
				l2 := d.Add(schemas.BlockList, li, 0, "")
				li2 := d.Add(schemas.BlockListItem, l2, 0, "")
				d.Add(schemas.BlockParagraph, li2, 0, "inner")
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 1 || pieces[0].Text != "- outer\n\n  - inner" {
					t.Errorf("chunks %+v", pieces)
				}
			},
		},
		{
			name: "a word longer than a chunk is cut by runes",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para(strings.Repeat("QmFzZTY0IGJsb2I=", 800))
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) < 2 {
					t.Errorf("%d chunks", len(pieces))
				}
			},
		},
		{
			name: "an oversize code block is cut at lines",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Code(d.CodeText(60))
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) < 2 {
					t.Fatalf("%d chunks", len(pieces))
				}
				for _, p := range pieces {
					if !strings.HasSuffix(p.Text, "}") {
						t.Errorf("chunk %d ends %q", p.Ordinal, p.Text[len(p.Text)-20:])
					}
				}
			},
		},
		{
			name: "refs are the sorted union of the covered blocks' refs",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para("one", "z", "a")
				d.Para("two", "m", "a")
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 1 || !slices.Equal(pieces[0].Refs, []string{"a", "m", "z"}) {
					t.Errorf("chunks %+v", pieces)
				}
			},
		},
		{
			name: "empty blocks count only inside a unit with text",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Para("")
				q := d.Add(schemas.BlockQuote, "", 0, "")
				d.Add(schemas.BlockParagraph, q, 0, "")
				d.Add(schemas.BlockParagraph, q, 0, "quoted")
				d.Para("")
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				want := []string{doc.Blocks[1].ID, doc.Blocks[2].ID, doc.Blocks[3].ID}
				if len(pieces) != 1 || !slices.Equal(pieces[0].BlockIDs, want) || pieces[0].Text != "quoted" {
					t.Errorf("chunks %+v, want blocks %v", pieces, want)
				}
			},
		},
		{
			name: "a level 2 heading starts a chunk once the chunk has half the minimum",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Heading(2, "One")
				d.Para(d.Text("en", 9))
				d.Heading(2, "Two")
				d.Para(d.Text("en", 2))
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 2 || pieces[1].BlockIDs[0] != doc.Blocks[2].ID || !strings.HasPrefix(pieces[1].Text, "## Two\n\n") {
					t.Errorf("chunks %+v", pieces)
				}
			},
		},
		{
			name: "a tiny section stays with the next one",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Heading(2, "One")
				d.Para("Short.")
				d.Heading(2, "Two")
				d.Para(d.Text("en", 5))
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 1 {
					t.Errorf("%d chunks", len(pieces))
				}
			},
		},
		{
			name: "a heading is not left at the end of a chunk",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				for range 4 {
					d.Para(d.Text("en", 5))
				}
				d.Heading(3, "Sub")
				d.Para(d.Text("en", 8))
				return &d.Doc
			},
			check: func(t *testing.T, doc *schemas.DocChanged, pieces []Piece) {
				for _, p := range pieces[:len(pieces)-1] {
					if strings.HasSuffix(p.Text, "### Sub") {
						t.Errorf("chunk %d ends with the heading", p.Ordinal)
					}
				}
			},
		},
		{
			name: "blocks with unknown parents are top-level",
			build: func(d *chunkingtest.DocBuilder) *schemas.DocChanged {
				d.Add(schemas.BlockParagraph, "nowhere", 0, "orphan")
				return &d.Doc
			},
			check: func(t *testing.T, _ *schemas.DocChanged, pieces []Piece) {
				if len(pieces) != 1 || pieces[0].Text != "orphan" {
					t.Errorf("chunks %+v", pieces)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.build(chunkingtest.NewDoc(fmt.Sprintf("r%d", i), uint64(i)))
			pieces := Split(doc, cfg)
			checkPieces(t, doc, cfg, pieces)
			tt.check(t, doc, pieces)
		})
	}
}

func TestSplitStability(t *testing.T) {
	cfg := DefaultConfig()
	base := chunkingtest.LongDoc("st", 12)
	before := Split(&base.Doc, cfg)
	section := func(p Piece) string { // Notes, Doc, H1, H2
		if len(p.SectionPath) < 4 {
			return ""
		}
		return p.SectionPath[3]
	}
	byKey := func(ps []Piece) map[string]string {
		m := map[string]string{}
		for _, p := range ps {
			m[p.ID] = p.Hash
		}
		return m
	}

	t.Run("editing a block's text keeps every chunk id", func(t *testing.T) {
		doc := base.Doc
		doc.Blocks = slices.Clone(doc.Blocks)
		i := slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.Type == schemas.BlockParagraph && len(b.Text) > 300 })
		doc.Blocks[i].Text = strings.Replace(doc.Blocks[i].Text, " ", "  ", 1) + " Edited."
		after := Split(&doc, cfg)
		changed := 0
		for k := range after {
			if after[k].ID != before[k].ID {
				t.Errorf("chunk %d: id changed", k)
			}
			if after[k].Hash != before[k].Hash {
				changed++
			}
		}
		if changed == 0 {
			t.Error("no chunk changed")
		}
	})

	t.Run("inserting a block into one section leaves the other sections alone", func(t *testing.T) {
		for _, target := range []string{"Section 2", "Раздел 5", "Section 10"} {
			doc := base.Doc
			h := slices.IndexFunc(doc.Blocks, func(b schemas.Block) bool { return b.Text == target })
			blocks := slices.Clone(doc.Blocks[:h+2])
			blocks = append(blocks, schemas.Block{ID: "st-new", Type: schemas.BlockParagraph, Text: base.Text("en", 6)})
			doc.Blocks = append(blocks, doc.Blocks[h+2:]...)
			after := Split(&doc, cfg)
			old, now := byKey(before), byKey(after)
			for _, p := range before {
				if section(p) != target && now[p.ID] != p.Hash {
					t.Errorf("%s: chunk %d of %s changed", target, p.Ordinal, section(p))
				}
			}
			for _, p := range after {
				if section(p) != target && old[p.ID] != p.Hash {
					t.Errorf("%s: new chunk %d in %s", target, p.Ordinal, section(p))
				}
			}
			if !slices.ContainsFunc(after, func(p Piece) bool { return slices.Contains(p.BlockIDs, "st-new") && section(p) == target }) {
				t.Errorf("%s: the new block is not in its section", target)
			}
		}
	})

	t.Run("splitting twice gives the same chunks", func(t *testing.T) {
		again := Split(&base.Doc, cfg)
		if fmt.Sprint(again) != fmt.Sprint(before) {
			t.Error("Split is not deterministic")
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	d := chunkingtest.LongDoc("bench", 9) // about 50 KB of text
	size := 0
	for _, blk := range d.Doc.Blocks {
		size += len(blk.Text)
	}
	cfg := DefaultConfig()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var pieces []Piece
	for b.Loop() {
		pieces = Split(&d.Doc, cfg)
	}
	b.ReportMetric(float64(len(pieces)), "chunks")
	b.ReportMetric(float64(size), "doc-bytes")
}
