package models_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

// filler is text without any word of the test queries.
func filler(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Sentence %d tells nothing about the matter at hand. ", i)
	}
	return b.String()
}

func TestThePassageWindowHoldsTheQueryWords(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	spec := specOf(t, dir, models.RoleRerank)
	open := func(window bool) *models.CrossEncoder {
		ce, err := models.OpenCrossEncoder(dir, spec, models.Options{MaxLength: 64, QueryWindow: window})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ce.Close() })
		return ce
	}
	win, head := open(true), open(false)
	for _, tc := range []struct {
		name, query, passage, span string
	}{
		{"an English span deep in a long passage", "Which tools do ravens use?",
			filler(30) + "Ravens use sticks as tools to reach food. " + filler(30),
			"Ravens use sticks as tools"},
		{"a Russian span whose words are inflected otherwise than in the query", "Какие инструменты используют вороны?",
			filler(40) + "Воронами используются палки как инструменты. " + filler(10),
			"Воронами используются палки как инструменты"},
		{"a span at the very end", "When did the bridge collapse?",
			filler(50) + "The bridge collapsed in 1907.", "bridge collapsed in 1907"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := win.Windows(tc.query, []string{tc.passage})[0]
			if !strings.Contains(w, tc.span) {
				t.Errorf("the window %q does not hold %q", w, tc.span)
			}
			if len(w) >= len(tc.passage) {
				t.Errorf("the window is the whole passage (%d bytes)", len(w))
			}
			if h := head.Windows(tc.query, []string{tc.passage})[0]; strings.Contains(h, tc.span) || !strings.HasPrefix(tc.passage, h) {
				t.Errorf("without the window the head should be read: %q", h)
			}
		})
	}
	t.Run("a passage without the query's words is read from its head", func(t *testing.T) {
		p := filler(40)
		if w := win.Windows("crows", []string{p})[0]; !strings.HasPrefix(p, w) || len(w) == 0 {
			t.Errorf("window %q", w)
		}
	})
	t.Run("a passage that fits is read whole", func(t *testing.T) {
		p := "Ravens use sticks."
		if w := win.Windows("ravens", []string{p})[0]; w != p {
			t.Errorf("window %q", w)
		}
	})
}

func TestCrossEncoderScoresDoNotDependOnBatchOrderOrSize(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	spec := specOf(t, dir, models.RoleRerank)
	passages := append([]string{filler(3), filler(40) + "Ravens use sticks.", "short", filler(1) + " ravens"}, texts...)
	query := "do ravens use sticks?"
	score := func(maxTokens int, order []int) []float32 {
		ce, err := models.OpenCrossEncoder(dir, spec, models.Options{MaxLength: 96, QueryWindow: true, MaxTokens: maxTokens})
		if err != nil {
			t.Fatal(err)
		}
		defer ce.Close()
		in := make([]string, len(order))
		for i, j := range order {
			in[i] = passages[j]
		}
		s, err := ce.Score(context.Background(), query, in)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(passages))
		for i, j := range order {
			out[j] = s[i]
		}
		return out
	}
	fwd := make([]int, len(passages))
	rev := make([]int, len(passages))
	for i := range passages {
		fwd[i], rev[i] = i, len(passages)-1-i
	}
	want := score(0, fwd)
	for _, tc := range []struct {
		name      string
		maxTokens int
		order     []int
	}{
		{"reversed, one batch", 0, rev},
		{"in order, one pair per run", 1, fwd},
		{"reversed, a few pairs per run", 200, rev},
	} {
		got := score(tc.maxTokens, tc.order)
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-4 {
				t.Errorf("%s: passage %d scores %v, %v in order in one batch", tc.name, i, got[i], want[i])
			}
		}
	}
}

func TestThePassageWindowIsAlwaysAPieceOfThePassage(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	spec := specOf(t, dir, models.RoleRerank)
	passages := append([]string{
		filler(20) + "Вороны используют палки. " + filler(20),
		strings.Repeat("ravens ", 300),
		strings.Repeat("Москва-река, ёлки; ", 100) + "ravens",
		"ravens" + strings.Repeat("x", 3000),
	}, texts...)
	for _, maxLen := range []int{32, 33, 47, 64, 96} {
		ce, err := models.OpenCrossEncoder(dir, spec, models.Options{MaxLength: maxLen, QueryWindow: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range ce.Windows("Do ravens use sticks in Moscow?", passages) {
			if !strings.Contains(passages[i], w) || w == "" && passages[i] != "" {
				t.Errorf("max length %d, passage %d: window %q is not a piece of it", maxLen, i, w)
			}
		}
		ce.Close()
	}
}
