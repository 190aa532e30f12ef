package system_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/vectors"
)

func contextIDs(rr *schemas.QueryReranked) []string {
	var ids []string
	for _, c := range rr.Contexts {
		ids = append(ids, c.ChunkID)
	}
	return ids
}

// TestALocalOpensOnlyWhatItsQueryNeedsAndAnswersAsTheBusDoes: a data
// directory indexed with every model; each Local opens the parts its mode
// and rung need, and finds what the running system found on the bus.
func TestALocalOpensOnlyWhatItsQueryNeedsAndAnswersAsTheBusDoes(t *testing.T) {
	ctx := context.Background()
	modelsDir := modeltest.Dir(t, modeltest.Options{})
	dir, vault := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n\n## Owls\n\nOwls hunt at night.\n")
	writeFile(t, filepath.Join(vault, "птицы.md"), "# Птицы\n\nВороны используют инструменты для добычи пищи.\n")
	sys := startNeural(t, dir, modelsDir, vectors.Config{})
	syncPaths(t, sys.Bus, vault)
	if n, total := embeddedAll(t, sys); n != total || n == 0 {
		t.Fatalf("%d of %d chunks embedded", n, total)
	}
	questions := []string{"What do crows use?", "Что используют вороны?"}
	onBus := map[string][]string{}
	for _, mode := range []string{schemas.ModeLexical, schemas.ModeHybrid, schemas.ModeRerank} {
		for _, q := range questions {
			onBus[mode+" "+q] = contextIDs(ask(t, sys, q, schemas.QueryOptions{Mode: mode, NoAnswer: true}))
		}
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	srv := llmtest.New(t)
	srv.SetAnswer("Crows «use tools to get food» [1].")
	provider := &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(), Models: map[string]string{llm.RoleFast: "m"}}}}
	models := []string{"index", "embedding model", "vector store", "reranker"}
	for _, tc := range []struct {
		name     string
		cfg      func(*system.Config)
		opts     system.LocalOptions
		parts    []string
		answer   string // the answer's mode, when it answers
		provider bool
	}{
		{"a lexical search loads no model", nil, system.LocalOptions{Mode: schemas.ModeLexical}, []string{"index"}, "", false},
		{"a hybrid search loads the embedding model and opens the vectors", nil, system.LocalOptions{Mode: schemas.ModeHybrid},
			[]string{"index", "embedding model", "vector store"}, "", false},
		{"a search in the fullest mode also prepares the reranker", nil, system.LocalOptions{Mode: schemas.ModeRerank}, models, "", false},
		{"an answer without models or a provider: the passages, no answer cache",
			func(c *system.Config) { c.NoModels = true },
			system.LocalOptions{Mode: schemas.ModeLexical, Answer: true}, []string{"index", "answerer"}, schemas.AnswerSearchOnly, false},
		{"an answer without a provider: the extractive model, the answer cache",
			nil, system.LocalOptions{Answer: true}, append(slices.Clone(models), "answerer", "extractive model", "answer cache"), "", false},
		{"an answer with a provider: the providers too",
			func(c *system.Config) { c.LLM = provider },
			system.LocalOptions{Answer: true}, append(slices.Clone(models), "language-model providers", "answerer", "extractive model", "answer cache"),
			schemas.AnswerLLM, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := system.Config{DataDir: dir, ModelsDir: modelsDir, Log: testLog(t), LLM: &llm.Config{}}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			l, err := system.OpenLocal(ctx, cfg, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.Parts(); strings.Join(got, ", ") != strings.Join(tc.parts, ", ") {
				t.Errorf("opened %q, want %q", got, tc.parts)
			}
			mode := tc.opts.Mode
			if mode == "" {
				mode = schemas.ModeRerank
			}
			for _, q := range questions {
				if !tc.opts.Answer {
					rr, err := l.Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "s", Question: q, Options: schemas.QueryOptions{Mode: tc.opts.Mode}}}, 30*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := contextIDs(rr), onBus[mode+" "+q]; rr.Mode != mode || strings.Join(got, " ") != strings.Join(want, " ") {
						t.Errorf("%q in mode %s: %s %v, on the bus %v", q, tc.opts.Mode, rr.Mode, got, want)
					}
					continue
				}
				var streamed strings.Builder
				done, stop, err := l.Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "a", Question: q, Options: schemas.QueryOptions{Mode: tc.opts.Mode}}},
					30*time.Second, func(tok *schemas.AnswerToken) { streamed.WriteString(tok.Text) }, nil)
				if err != nil {
					t.Fatal(err)
				}
				stop()
				if len(done.Citations) == 0 || streamed.String() != done.Answer || tc.answer != "" && q == questions[0] && done.Mode != tc.answer {
					t.Errorf("%q: mode %s, %d citations, streamed %q, answer %q; want mode %s with citations, streamed as answered",
						q, done.Mode, len(done.Citations), streamed.String(), done.Answer, tc.answer)
				}
			}
			if asked := len(srv.Requests()) > 0; asked != tc.provider {
				t.Errorf("the provider was asked: %v, want %v", asked, tc.provider)
			}
		})
	}
}
