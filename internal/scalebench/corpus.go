// Package scalebench generates the scale benchmark's corpus (Russian and
// English personal notes at 100k and 1M chunks, with XQuAD paragraphs planted
// so recall can be measured at scale), builds the indexes from it directly,
// and holds the results' format: JSON and a Markdown table that
// internal/tools/benchtable writes into docs/benchmarks.md. The suite itself is
// BenchmarkScale (scale_bench_test.go; `./task bench:scale`).
package scalebench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/schemas"
)

// CorpusVersion changes whenever the generator's output changes, so cached
// builds made from an older corpus are rebuilt.
const CorpusVersion = 1

// ChunksPerDoc is how many generated chunks make one note.
const ChunksPerDoc = 8

// Config says which corpus to generate.
type Config struct {
	// Chunks is the corpus size (planted XQuAD paragraphs included).
	Chunks int
	// Seed makes the corpus; the same seed and size give the same corpus.
	Seed uint64
	// Questions is how many XQuAD questions to ask (half Russian, half
	// English, from the test part of XQuAD; 500 when 0).
	Questions int
}

// Stamp names the corpus for caches: version, size and seed.
func (c Config) Stamp() string {
	return fmt.Sprintf("v%d-n%d-seed%d", CorpusVersion, c.Chunks, c.Seed)
}

// Chunk is one generated chunk.
type Chunk struct {
	ID, DocID, Title, Lang string
	Ordinal                int
	SectionPath            []string
	Text                   string
	// Planted marks an XQuAD paragraph (its document is the paragraph's
	// XQuAD document, the gold of its questions).
	Planted bool
}

// Corpus generates chunks on demand: Chunk(i) depends only on the seed and
// i, so any part can be generated on any goroutine.
type Corpus struct {
	cfg Config
	// Questions are the XQuAD questions whose gold paragraphs are planted.
	Questions []eval.Question
	// Paragraphs are the planted XQuAD documents (ru and en).
	Paragraphs []*schemas.DocChanged
	planted    map[int]int // chunk index -> paragraph
	sents      map[string][]string
	vocab      map[string][]string // by lang, most frequent first
	tags       map[string][]string
}

var sentenceEnd = regexp.MustCompile(`([.!?])\s+`)

// Load reads XQuAD ru and en from evalDir (shared/eval) and prepares the
// generator: the sentences of the dev part's paragraphs make the notes'
// prose, the words of all of XQuAD and the Russian dictionary's forms their
// vocabulary (Zipf ranks: XQuAD's words by frequency, then the dictionary's
// in a seeded order), and every paragraph is planted once.
func Load(evalDir string, cfg Config) (*Corpus, error) {
	if cfg.Questions == 0 {
		cfg.Questions = 500
	}
	c := &Corpus{cfg: cfg, planted: map[int]int{}, sents: map[string][]string{},
		vocab: map[string][]string{}, tags: map[string][]string{}}
	for _, lang := range []string{"ru", "en"} {
		set, err := eval.Load(filepath.Join(evalDir, "xquad."+lang+".json"))
		if err != nil {
			return nil, fmt.Errorf("scale corpus: %w", err)
		}
		dev, err := eval.Split(set, eval.PartDev)
		if err != nil {
			return nil, err
		}
		devDocs := map[string]bool{}
		for _, q := range dev.Questions {
			devDocs[q.Gold[0]] = true
		}
		counts := map[string]int{}
		for _, d := range set.Docs {
			text := d.Blocks[0].Text
			for _, w := range strings.Fields(text) {
				if w = strings.Trim(w, ".,;:!?()«»\"'[]"); w != "" && utf8.RuneCountInString(w) > 1 {
					counts[strings.ToLower(w)]++
				}
			}
			if !devDocs[d.DocID] {
				continue
			}
			for _, s := range strings.Split(sentenceEnd.ReplaceAllString(text, "$1\n"), "\n") {
				if s = strings.TrimSpace(s); s != "" {
					c.sents[lang] = append(c.sents[lang], s)
				}
			}
		}
		words := make([]string, 0, len(counts))
		for w := range counts {
			words = append(words, w)
		}
		sort.Slice(words, func(i, j int) bool {
			if counts[words[i]] != counts[words[j]] {
				return counts[words[i]] > counts[words[j]]
			}
			return words[i] < words[j]
		})
		c.vocab[lang] = words
		c.Paragraphs = append(c.Paragraphs, set.Docs...)
		test, err := eval.Split(set, eval.PartTest)
		if err != nil {
			return nil, err
		}
		qs := slices.Clone(test.Questions)
		rand.New(rand.NewPCG(cfg.Seed, 7)).Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
		c.Questions = append(c.Questions, qs[:min(len(qs), cfg.Questions/2)]...)
	}
	if err := c.addDictionary(); err != nil {
		return nil, err
	}
	for _, lang := range []string{"ru", "en"} {
		rng := rand.New(rand.NewPCG(cfg.Seed, 11))
		for range 300 {
			c.tags[lang] = append(c.tags[lang], strings.ReplaceAll(c.word(rng, lang, 2000), "-", "_"))
		}
	}
	if len(c.Paragraphs) > cfg.Chunks {
		return nil, fmt.Errorf("scale corpus: %d chunks cannot hold the %d XQuAD paragraphs", cfg.Chunks, len(c.Paragraphs))
	}
	// Planted paragraphs spread evenly, away from the first chunk of a note.
	step := cfg.Chunks / len(c.Paragraphs)
	for p := range c.Paragraphs {
		c.planted[p*step+step/2] = p
	}
	return c, nil
}

var (
	formsOnce sync.Once
	forms     []string
	formsErr  error
)

// dictForms lists every 8th form of the Russian dictionary (hyphenated ones
// left out), once per process.
func dictForms() ([]string, error) {
	formsOnce.Do(func() {
		d, err := analysis.Russian()
		if err != nil {
			formsErr = fmt.Errorf("scale corpus: %w", err)
			return
		}
		i := 0
		d.Forms(func(f string) bool {
			i++
			if i%8 == 0 && !strings.Contains(f, "-") {
				forms = append(forms, f)
			}
			return true
		})
		if len(forms) == 0 {
			formsErr = fmt.Errorf("scale corpus: the Russian dictionary lists no forms")
		}
	})
	return forms, formsErr
}

// addDictionary appends the Russian dictionary's forms (every 8th, in a
// seeded order) to the Russian vocabulary, below XQuAD's words.
func (c *Corpus) addDictionary() error {
	all, err := dictForms()
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(c.vocab["ru"]))
	for _, w := range c.vocab["ru"] {
		have[w] = true
	}
	forms := make([]string, 0, len(all))
	for _, f := range all {
		if !have[f] {
			forms = append(forms, f)
		}
	}
	rand.New(rand.NewPCG(c.cfg.Seed, 3)).Shuffle(len(forms), func(i, j int) { forms[i], forms[j] = forms[j], forms[i] })
	c.vocab["ru"] = append(c.vocab["ru"], forms...)
	return nil
}

// Config is the corpus's configuration.
func (c *Corpus) Config() Config { return c.cfg }

// VocabSize is the number of distinct words the generator draws from.
func (c *Corpus) VocabSize(lang string) int { return len(c.vocab[lang]) }

// word draws a word with Zipf frequencies (s=1.1) from the first n words of
// lang's vocabulary (all of it when n is 0).
func (c *Corpus) word(rng *rand.Rand, lang string, n int) string {
	v := c.vocab[lang]
	if n <= 0 || n > len(v) {
		n = len(v)
	}
	z := rand.NewZipf(rng, 1.1, 2, uint64(n-1))
	return v[z.Uint64()]
}

func (c *Corpus) words(rng *rand.Rand, lang string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word(rng, lang, 0)
	}
	return strings.Join(ws, " ")
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// DocLang is the language of note d: 55% Russian, 45% English.
func (c *Corpus) DocLang(d int) string {
	if rand.New(rand.NewPCG(c.cfg.Seed^0x5eed, uint64(d))).IntN(100) < 55 {
		return "ru"
	}
	return "en"
}

// DocTitle is the title of generated note d.
func (c *Corpus) DocTitle(d int) string {
	rng := rand.New(rand.NewPCG(c.cfg.Seed^0x717e, uint64(d)))
	lang := c.DocLang(d)
	return capitalize(c.word(rng, lang, 5000) + " " + c.word(rng, lang, 0))
}

// Docs is the number of generated notes (planted paragraphs aside).
func (c *Corpus) Docs() int { return (c.cfg.Chunks + ChunksPerDoc - 1) / ChunksPerDoc }

// chunkDoc is chunk i's id, its note's id and title, without its text.
func (c *Corpus) chunkDoc(i int) (id, docID, title string) {
	id = fmt.Sprintf("c%07d", i)
	if p, ok := c.planted[i]; ok {
		return id, c.Paragraphs[p].DocID, c.Paragraphs[p].Title
	}
	d := i / ChunksPerDoc
	return id, fmt.Sprintf("notes/%s/%06d.md", c.DocLang(d), d), c.DocTitle(d)
}

// Chunk generates chunk i (0 <= i < Chunks).
func (c *Corpus) Chunk(i int) Chunk {
	if p, ok := c.planted[i]; ok {
		d := c.Paragraphs[p]
		return Chunk{ID: fmt.Sprintf("c%07d", i), DocID: d.DocID, Title: d.Title, Lang: langOf(d),
			SectionPath: []string{d.Title}, Text: d.Blocks[0].Text, Planted: true}
	}
	d := i / ChunksPerDoc
	lang := c.DocLang(d)
	title := c.DocTitle(d)
	rng := rand.New(rand.NewPCG(c.cfg.Seed, uint64(i)))
	var b strings.Builder
	section := []string{title}
	if rng.IntN(100) < 35 {
		h := capitalize(c.words(rng, lang, 2+rng.IntN(3)))
		fmt.Fprintf(&b, "## %s\n\n", h)
		section = append(section, h)
	}
	sents := c.sents[lang]
	for n := 2 + rng.IntN(4); n > 0; n-- {
		ws := strings.Fields(sents[rng.IntN(len(sents))])
		// A note retells: about one word in six is the writer's own.
		for j := range ws {
			if rng.IntN(6) == 0 {
				ws[j] = c.word(rng, lang, 0)
			}
		}
		b.WriteString(strings.Join(ws, " "))
		b.WriteByte(' ')
	}
	b.WriteString("\n\n")
	if rng.IntN(100) < 45 {
		for n := 2 + rng.IntN(4); n > 0; n-- {
			fmt.Fprintf(&b, "- %s\n", capitalize(c.words(rng, lang, 3+rng.IntN(6))))
		}
		b.WriteByte('\n')
	}
	if rng.IntN(100) < 30 {
		other := rng.IntN(c.Docs())
		see := map[string]string{"ru": "См.", "en": "See"}[lang]
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "%s [[%s]]\n", see, c.DocTitle(other))
		} else {
			fmt.Fprintf(&b, "%s [%s](https://example.org/notes/%d)\n", see, c.DocTitle(other), other)
		}
	}
	if rng.IntN(100) < 40 {
		tags := c.tags[lang]
		for n := 1 + rng.IntN(3); n > 0; n-- {
			fmt.Fprintf(&b, "#%s ", tags[rng.IntN(len(tags))])
		}
	}
	return Chunk{ID: fmt.Sprintf("c%07d", i), DocID: fmt.Sprintf("notes/%s/%06d.md", lang, d), Title: title, Lang: lang,
		Ordinal: i % ChunksPerDoc, SectionPath: section, Text: strings.TrimSpace(b.String())}
}

func langOf(d *schemas.DocChanged) string {
	if strings.HasPrefix(d.Path, "xquad.ru") {
		return "ru"
	}
	return "en"
}

// Doc returns generated note d as a source event of one block per
// paragraph, heading and list item, for the pipeline sample (the chunk
// stage then cuts it its own way).
func (c *Corpus) Doc(d int) *schemas.DocChanged {
	doc := &schemas.DocChanged{DocID: fmt.Sprintf("notes/%s/%06d.md", c.DocLang(d), d), Source: "files",
		Path: fmt.Sprintf("notes/%06d.md", d), Title: c.DocTitle(d), Hash: fmt.Sprint(c.cfg.Stamp(), d), Version: 1}
	for i := d * ChunksPerDoc; i < min((d+1)*ChunksPerDoc, c.cfg.Chunks); i++ {
		ch := c.Chunk(i)
		if ch.Planted {
			continue
		}
		for j, part := range strings.Split(ch.Text, "\n\n") {
			id := fmt.Sprintf("%s-b%d", ch.ID, j)
			switch {
			case strings.HasPrefix(part, "## "):
				doc.Blocks = append(doc.Blocks, schemas.Block{ID: id, Type: schemas.BlockHeading, Level: 2, Text: part[3:]})
			case strings.HasPrefix(part, "- "):
				doc.Blocks = append(doc.Blocks, schemas.Block{ID: id, Type: schemas.BlockList})
				for k, item := range strings.Split(part, "\n") {
					doc.Blocks = append(doc.Blocks, schemas.Block{ID: fmt.Sprintf("%s-%d", id, k), ParentID: id,
						Type: schemas.BlockListItem, Text: strings.TrimPrefix(item, "- ")})
				}
			default:
				doc.Blocks = append(doc.Blocks, schemas.Block{ID: id, Type: schemas.BlockParagraph, Text: part})
			}
		}
	}
	return doc
}

// EvalDir finds shared/eval beside the repository from a package directory.
func EvalDir() (string, error) {
	for _, p := range []string{"../shared/eval", "../../shared/eval", "../../../shared/eval"} {
		if _, err := os.Stat(filepath.Join(p, "xquad.ru.json")); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("XQuAD not found in ../shared/eval beside the repository")
}
