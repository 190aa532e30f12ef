package retrieval_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// byText is a cross-encoder whose score of a passage is looked up by its
// text (a logit, as the real one gives).
type byText map[string]float32

func (b byText) Score(_ context.Context, _ string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		out[i] = b[p]
	}
	return out, nil
}

func (byText) Name() string { return "by-text" }

// withoutTimes is an index that knows no note times (a rerank worker
// without the SQLite file's DocTimes).
type withoutTimes struct{ retrieval.Index }

// TestRecentShapesTheCrossEncodersOrder: in rerank mode a query that
// prefers recent notes orders the cross-encoder's candidates by its score
// plus their recency bonus, with the default half-life and weight.
func TestRecentShapesTheCrossEncodersOrder(t *testing.T) {
	now := time.Now().UTC()
	notes := []scopeNote{
		{id: "old", notebook: "/v", path: "/v/old.md", lang: "ru", text: "Бюджет Атласа утверждён: 40 тысяч на квартал.", updated: now.AddDate(-1, 0, 0)},
		{id: "new", notebook: "/v", path: "/v/new.md", lang: "en", text: "The Atlas budget was approved: 40k for the quarter.", updated: now.AddDate(0, 0, -3)},
	}
	st, _ := scopeCorpus(t, store.LexicalMemory, notes)
	recent := &schemas.Scope{Recent: true}
	for _, tc := range []struct {
		name            string
		index           retrieval.Index
		scope           *schemas.Scope
		oldScore, newSc float32
		docs            []string // the candidates' documents, old first by fused rank
		want            []string
		wantNoRecency   bool
	}{
		{"with recent the newer of two similarly relevant notes comes first", st, recent, 5.0, 4.6, nil, []string{"new", "old"}, false},
		{"without recent the order is the cross-encoder's", st, nil, 5.0, 4.6, nil, []string{"old", "new"}, false},
		{"a scope without recent leaves the cross-encoder's order", st, &schemas.Scope{Include: schemas.ScopeSet{Langs: []string{"ru", "en"}}}, 5.0, 4.6, nil, []string{"old", "new"}, false},
		{"a clearly better old note still comes first", st, recent, 8.0, 3.0, nil, []string{"old", "new"}, false},
		{"the newer note the cross-encoder prefers stays first", st, recent, 4.0, 4.5, nil, []string{"new", "old"}, false},
		{"an index without note times keeps the cross-encoder's order", withoutTimes{st}, recent, 5.0, 4.6, nil, []string{"old", "new"}, true},
		{"notes of unknown time keep the cross-encoder's order", st, recent, 5.0, 4.6, []string{"gone-a", "gone-b"}, []string{"gone-a", "gone-b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := tc.docs
			if docs == nil {
				docs = []string{"old", "new"}
			}
			cands := []schemas.Candidate{
				{Passage: schemas.Passage{ChunkID: chunkOf(docs[0]), DocID: docs[0], Text: notes[0].text}, FusedRank: 1, Fused: 1.0 / 61},
				{Passage: schemas.Passage{ChunkID: chunkOf(docs[1]), DocID: docs[1], Text: notes[1].text}, FusedRank: 2, Fused: 1.0 / 62},
			}
			r := &retrieval.Retriever{Index: tc.index, Reranker: byText{notes[0].text: tc.oldScore, notes[1].text: tc.newSc}}
			out, err := r.Rerank(context.Background(), &schemas.QueryRetrieved{Query: schemas.Query{QueryID: "q",
				Options: schemas.QueryOptions{Expand: -1, Scope: tc.scope}}, Searched: "бюджет Атласа", Mode: schemas.ModeRerank, Candidates: cands})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range out.Contexts {
				got = append(got, c.DocID)
				if c.Source != "rerank" {
					t.Errorf("context %s: source %q, want rerank (the cross-encoder's score shown)", c.DocID, c.Source)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v (reasons %v)", got, tc.want, out.Reasons)
			}
			noRecency := strings.Contains(strings.Join(out.Reasons, "\n"), retrieval.ReasonNoRecency)
			if noRecency != tc.wantNoRecency {
				t.Fatalf("reason %s given %v, want %v (reasons %v)", retrieval.ReasonNoRecency, noRecency, tc.wantNoRecency, out.Reasons)
			}
		})
	}
}

// TestTheRerankRecencyReasonIsNotRepeated: a query whose retrieve worker
// already said recency_unavailable does not get it twice from the rerank.
func TestTheRerankRecencyReasonIsNotRepeated(t *testing.T) {
	r := &retrieval.Retriever{Reranker: byText{"a": 1, "b": 2}}
	out, err := r.Rerank(context.Background(), &schemas.QueryRetrieved{Query: schemas.Query{QueryID: "q",
		Options: schemas.QueryOptions{Expand: -1, Scope: &schemas.Scope{Recent: true}}}, Searched: "q", Mode: schemas.ModeRerank,
		Reasons: []string{retrieval.ReasonNoRecency + ": this retrieve worker has no index of note times; ranked without recency"},
		Candidates: []schemas.Candidate{{Passage: schemas.Passage{ChunkID: "d1:1", DocID: "d1", Text: "a"}, FusedRank: 1},
			{Passage: schemas.Passage{ChunkID: "d2:1", DocID: "d2", Text: "b"}, FusedRank: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(out.Reasons, "\n"), retrieval.ReasonNoRecency); n != 1 {
		t.Fatalf("%s said %d times, want once: %v", retrieval.ReasonNoRecency, n, out.Reasons)
	}
	if out.Contexts[0].DocID != "d2" {
		t.Fatalf("first %s, want the cross-encoder's best d2", out.Contexts[0].DocID)
	}
}

func TestRecencyBonusIsWeightLogitsHalvedEveryHalfLife(t *testing.T) {
	cfg := retrieval.Config{RecencyHalfLife: 10 * 24 * time.Hour, RecencyWeight: 2}
	for _, tc := range []struct {
		name string
		age  time.Duration
		want float64
	}{
		{"a fresh note gains the weight", 0, 2},
		{"a note one half-life old gains half of it", 10 * 24 * time.Hour, 1},
		{"a note two half-lives old a quarter", 20 * 24 * time.Hour, 0.5},
		{"a note from the future counts as fresh", -time.Hour, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retrieval.RecencyBonus(tc.age, cfg); got != tc.want {
				t.Fatalf("bonus %v, want %v", got, tc.want)
			}
		})
	}
	if got := retrieval.RecencyBonus(0, retrieval.Config{}); got != 1 {
		t.Fatalf("default weight: a fresh note gains %v, want 1", got)
	}
}
