package scalebench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

var (
	smallOnce   sync.Once
	smallCorpus *Corpus
	smallErr    error
)

const smallChunks = 4000

// small is a 4,000-chunk corpus, loaded once per test binary.
func small(t *testing.T) *Corpus {
	t.Helper()
	dir, err := EvalDir()
	if err != nil {
		t.Skip(err)
	}
	smallOnce.Do(func() { smallCorpus, smallErr = Load(dir, Config{Chunks: smallChunks, Seed: 17, Questions: 100}) })
	if smallErr != nil {
		t.Fatal(smallErr)
	}
	return smallCorpus
}

func TestTheSameSeedGivesTheSameCorpusAndAnotherSeedAnother(t *testing.T) {
	c := small(t)
	dir, _ := EvalDir()
	again, err := Load(dir, Config{Chunks: smallChunks, Seed: 17, Questions: 100})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Load(dir, Config{Chunks: smallChunks, Seed: 18, Questions: 100})
	if err != nil {
		t.Fatal(err)
	}
	notes, differ := 0, 0
	for i := 0; i < smallChunks; i += 37 {
		a, b, o := c.Chunk(i), again.Chunk(i), other.Chunk(i)
		if a.Text != b.Text || a.DocID != b.DocID || !slices.Equal(a.SectionPath, b.SectionPath) {
			t.Fatalf("chunk %d differs between two loads with one seed:\n%s\n---\n%s", i, a.Text, b.Text)
		}
		if a.Planted {
			continue
		}
		notes++
		if a.Text != o.Text {
			differ++
		}
	}
	if differ < notes*9/10 {
		t.Errorf("seed 18 changed %d of %d sampled notes' chunks, want nearly all", differ, notes)
	}
	if c.Config().Stamp() == other.Config().Stamp() {
		t.Errorf("two seeds share the cache stamp %q", c.Config().Stamp())
	}
}

func TestEveryXQuADParagraphIsPlantedOnceAndEveryQuestionsGoldIsPlanted(t *testing.T) {
	c := small(t)
	planted := map[string]int{}
	for i := range smallChunks {
		if ch := c.Chunk(i); ch.Planted {
			planted[ch.DocID]++
		}
	}
	if len(planted) != len(c.Paragraphs) {
		t.Fatalf("%d distinct paragraphs planted, want %d", len(planted), len(c.Paragraphs))
	}
	for id, n := range planted {
		if n != 1 {
			t.Errorf("paragraph %s planted %d times", id, n)
		}
	}
	if len(c.Questions) != 100 {
		t.Fatalf("%d questions, want 100", len(c.Questions))
	}
	langs := map[string]int{}
	for _, q := range c.Questions {
		langs[q.Lang]++
		if planted[q.Gold[0]] != 1 {
			t.Errorf("question %q: gold %s is not planted", q.Question, q.Gold[0])
		}
	}
	if langs["ru"] != 50 || langs["en"] != 50 {
		t.Errorf("questions per language %v, want 50 ru and 50 en", langs)
	}
}

// The questions are XQuAD's test part; the notes' prose is recombined from
// the dev part only, so a question's answer sentence is in its planted
// paragraph and nowhere else.
func TestNotesNeverRepeatASentenceOfAQuestionsParagraph(t *testing.T) {
	c := small(t)
	gold := map[string]bool{}
	for _, q := range c.Questions {
		gold[q.Gold[0]] = true
	}
	var goldSents []string
	for _, p := range c.Paragraphs {
		if gold[p.DocID] {
			for _, s := range strings.Split(sentenceEnd.ReplaceAllString(p.Blocks[0].Text, "$1\n"), "\n") {
				if len(s) > 60 {
					goldSents = append(goldSents, strings.TrimSpace(s))
				}
			}
		}
	}
	for _, lang := range []string{"ru", "en"} {
		for _, s := range c.sents[lang] {
			if slices.Contains(goldSents, s) {
				t.Fatalf("the %s prose holds a sentence of a gold paragraph: %q", lang, s)
			}
		}
	}
}

func TestChunksLookLikeNotesInBothLanguagesWithTheDictionarysWords(t *testing.T) {
	c := small(t)
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	d, err := analysis.Russian()
	if err != nil {
		t.Fatal(err)
	}
	var n, headings, lists, links, tags, ru, known, ruWords int
	var words []int
	for i := range smallChunks {
		ch := c.Chunk(i)
		if ch.Planted {
			continue
		}
		n++
		if ch.Lang == "ru" {
			ru++
			for _, w := range strings.Fields(a.Words(ch.Text)) {
				if !strings.ContainsAny(w, "абвгдежзийклмнопрстуфхцчшщъыьэюя") {
					continue
				}
				ruWords++
				if len(d.Lemmas(nil, w)) > 0 {
					known++
				}
			}
		}
		words = append(words, len(strings.Fields(ch.Text)))
		if strings.HasPrefix(ch.Text, "## ") {
			headings++
			if len(ch.SectionPath) != 2 {
				t.Errorf("chunk %s has a heading but section path %v", ch.ID, ch.SectionPath)
			}
		}
		if strings.Contains(ch.Text, "\n- ") {
			lists++
		}
		if strings.Contains(ch.Text, "[[") || strings.Contains(ch.Text, "](https://") {
			links++
		}
		if strings.Contains(ch.Text, "#") && !strings.Contains(ch.Text, "## ") || strings.Count(ch.Text, "#") > 2 {
			tags++
		}
	}
	share := func(k int) float64 { return float64(k) / float64(n) }
	for _, x := range []struct {
		what     string
		got      float64
		min, max float64
	}{
		{"headings", share(headings), 0.25, 0.45},
		{"lists", share(lists), 0.35, 0.55},
		{"links", share(links), 0.2, 0.4},
		{"tags", share(tags), 0.3, 0.5},
		{"Russian chunks", share(ru), 0.45, 0.65},
		{"Russian words the dictionary knows", float64(known) / float64(ruWords), 0.8, 1},
	} {
		if x.got < x.min || x.got > x.max {
			t.Errorf("%s: %.2f of the chunks, want %.2f-%.2f", x.what, x.got, x.min, x.max)
		}
	}
	slices.Sort(words)
	if med := words[len(words)/2]; med < 60 || med > 200 {
		t.Errorf("median chunk has %d words, want 60-200", med)
	}
	if c.VocabSize("ru") < 100_000 {
		t.Errorf("Russian vocabulary of %d words: the dictionary's forms are missing", c.VocabSize("ru"))
	}
}

func TestBuildIndexesTheCorpusSoPlantedParagraphsAreFoundAndReusesIt(t *testing.T) {
	c := small(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "build")
	info, err := Build(ctx, dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cached || info.Chunks != smallChunks || info.Words < smallChunks*50 {
		t.Fatalf("first build: %+v", info)
	}
	st, err := store.Open(StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	docs, chunks, err := st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if chunks != smallChunks || docs != c.Docs()+len(c.Paragraphs) {
		t.Errorf("store holds %d docs and %d chunks, want %d and %d", docs, chunks, c.Docs()+len(c.Paragraphs), smallChunks)
	}
	var ranks []int
	for _, q := range c.Questions {
		hits, err := st.Search(ctx, q.Question, store.SearchOptions{K: 10, SnippetTokens: -1})
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, eval.GoldRank(hits, q.Gold))
	}
	if recall, _ := recallOf(ranks); recall < 0.5 {
		t.Errorf("lexical recall@10 of the planted paragraphs %.2f, want at least 0.5", recall)
	}
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	if n, _ := vs.Count(ctx); n != smallChunks {
		t.Errorf("vector index holds %d points, want %d", n, smallChunks)
	}
	vg := NewVectors(c)
	res, err := vs.Search(ctx, vg.Vector(123, nil), vectors.SearchOptions{K: 1})
	if err != nil || len(res) == 0 || res[0].ID != c.Chunk(123).ID {
		t.Errorf("searching chunk 123's own vector found %v (%v), want it first", res, err)
	}
	again, err := Build(ctx, dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Seconds != info.Seconds {
		t.Errorf("second build of the same corpus: %+v, want the first one's, cached", again)
	}
}

func TestTheSameCorpusStampReusesADirectoryAndAnotherRebuildsIt(t *testing.T) {
	c := small(t)
	dir := t.TempDir()
	raw := `{"stamp":"v0-n4000-seed17","seconds":1,"chunks":4000}`
	if err := writeFile(filepath.Join(dir, buildInfoFile), raw); err != nil {
		t.Fatal(err)
	}
	info, err := Build(context.Background(), dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cached || info.Stamp != c.Config().Stamp() {
		t.Errorf("a directory built by an older generator was reused: %+v", info)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
