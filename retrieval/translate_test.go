package retrieval_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// named is a query embedder with a chosen name.
type named struct {
	fixedQuery
	name string
}

func (n named) Name() string { return n.name }

// strategicOnly routes only the strategic role to srv, so a request that
// reaches it was a strategic one.
func strategicOnly(t *testing.T, srv *llmtest.Server) *llm.Router {
	t.Helper()
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleStrategic: "strategic-model"}}}},
		llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func reasonWith(reasons []string, prefix string) string {
	for _, r := range reasons {
		if strings.HasPrefix(r, prefix) {
			return r
		}
	}
	return ""
}

func hasChunk(cands []schemas.Candidate, id string) bool {
	for _, c := range cands {
		if c.ChunkID == id {
			return true
		}
	}
	return false
}

const ruQuestion = "Как вороны добывают еду с помощью инструментов?"

func TestARussianQuestionOverEnglishNotesIsAlsoSearchedTranslated(t *testing.T) {
	ctx := context.Background()
	st, _ := corpus(t)
	srv := llmtest.New(t)
	srv.SetAnswer("en: How do crows use tools to get food?")
	r := &retrieval.Retriever{Index: st, Translate: retrieval.Translator(strategicOnly(t, srv))}

	out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: ruQuestion}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Lang != "ru" || len(out.Candidates) == 0 || out.Candidates[0].ChunkID != "ch-b" {
		t.Fatalf("lang %s, candidates %v (%v): want the English crows passage first", out.Lang, out.Candidates, out.Reasons)
	}
	if got := reasonWith(out.Reasons, "translated: en: How do crows"); got == "" {
		t.Errorf("reasons %v lack the translation", out.Reasons)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the provider, want one", len(reqs))
	}
	body := reqs[0].Body
	if body.Model != "strategic-model" || len(body.Messages) != 2 || body.Messages[0].Role != "system" ||
		!strings.HasPrefix(body.Messages[0].Content, "Translate the question into English (en)") ||
		body.Messages[1].Content != ruQuestion || body.MaxTokens == 0 {
		t.Errorf("the translation request: %+v", body)
	}
	// The rerank stage keeps the candidates' order and the language.
	rr, err := r.Rerank(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Lang != "ru" || len(rr.Contexts) == 0 || rr.Contexts[0].ChunkID != "ch-b" {
		t.Errorf("reranked: lang %s, contexts %v", rr.Lang, rr.Contexts)
	}
}

func TestWithoutATranslatorTheRussianQuestionMissesTheEnglishNotesAndSaysWhy(t *testing.T) {
	ctx := context.Background()
	st, _ := corpus(t)
	out, err := (&retrieval.Retriever{Index: st}).Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: ruQuestion}})
	if err != nil {
		t.Fatal(err)
	}
	if hasChunk(out.Candidates, "ch-b") {
		t.Errorf("found the English passage without a translation: the test proves nothing")
	}
	if reasonWith(out.Reasons, retrieval.ReasonNoTranslator+": the question is in ru and notes are in en") == "" {
		t.Errorf("reasons %v do not say why", out.Reasons)
	}

	// A failing provider: the original search stands, with the reason.
	srv := llmtest.New(t)
	srv.Always(llmtest.Fail(500))
	r := &retrieval.Retriever{Index: st, Translate: retrieval.Translator(strategicOnly(t, srv))}
	out, err = r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q2", Question: ruQuestion}})
	if err != nil {
		t.Fatalf("a failing translation failed the query: %v", err)
	}
	if hasChunk(out.Candidates, "ch-b") || reasonWith(out.Reasons, retrieval.ReasonTranslationFailed) == "" {
		t.Errorf("with a failing provider: candidates %v, reasons %v", out.Candidates, out.Reasons)
	}
	// A reply that is no translation is a failure too.
	srv2 := llmtest.New(t)
	srv2.SetAnswer("I cannot help with that.\nSorry.")
	r.Translate = retrieval.Translator(strategicOnly(t, srv2))
	out, err = r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q3", Question: ruQuestion}})
	if err != nil || reasonWith(out.Reasons, retrieval.ReasonTranslationFailed) == "" {
		t.Errorf("an unusable reply: %v, reasons %v", err, out.Reasons)
	}
}

func TestNoTranslationWhenTheLanguagesMatchOrAMultilingualModelSearches(t *testing.T) {
	ctx := context.Background()
	st, vs := corpus(t)
	srv := llmtest.New(t)
	srv.SetAnswer("en: How do crows use tools to get food?")
	tr := retrieval.Translator(strategicOnly(t, srv))

	// An English question over English notes.
	r := &retrieval.Retriever{Index: st, Translate: tr}
	if _, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "crows tools"}}); err != nil {
		t.Fatal(err)
	}
	// A multilingual embedding model bridges the languages itself.
	r = &retrieval.Retriever{Index: st, Vectors: vs, Embedder: named{fixedQuery(unit(8, 2)), "multilingual-e5-small@x"},
		Translate: tr, Config: retrieval.Config{WeakScore: 0.1}}
	out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q2", Question: ruQuestion}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d translation requests, want none", n)
	}
	if reasonWith(out.Reasons, "translat") != "" {
		t.Errorf("reasons %v", out.Reasons)
	}
	// An English-only embedding model does not: translated.
	r.Embedder = named{fixedQuery(unit(8, 2)), "all-minilm-l6-v2"}
	out, err = r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q3", Question: ruQuestion}})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Requests()) != 1 || reasonWith(out.Reasons, "translated: en") == "" {
		t.Errorf("an English-only embedder: %d requests, reasons %v", len(srv.Requests()), out.Reasons)
	}
}

func TestParseTranslationsReadsOneLinePerLanguage(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		to          []string
		want        map[string]string
	}{
		{"one line", "en: How do I sync?", []string{"en"}, map[string]string{"en": "How do I sync?"}},
		{"two languages, quotes and bullets", "- ru: «Как синхронизировать?»\n* EN: \"How to sync?\"\n", []string{"en", "ru"},
			map[string]string{"en": "How to sync?", "ru": "Как синхронизировать?"}},
		{"a bare translation for one language", "How do I sync?", []string{"en"}, map[string]string{"en": "How do I sync?"}},
		{"other languages are ignored", "de: Wie?\nen: How?", []string{"en"}, map[string]string{"en": "How?"}},
		{"nothing usable", "Sorry,\nI can't.", []string{"en"}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := retrieval.ParseTranslations(tc.reply, tc.to)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
