package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

// TestQATokensAreWhatTheModelReads: the cost of a passage grows with its
// tokens, question and specials included, up to the model's length.
func TestQATokensAreWhatTheModelReads(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true})
	spec := specOf(t, dir, models.RoleQA)
	qa, err := models.OpenQA(dir, spec, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	cases := []struct {
		name, question, short, long string
	}{
		{"in English", "Who uses tools?", "Crows use tools.", strings.Repeat("Crows use tools to get food. ", 4)},
		{"in Russian", "Кто использует инструменты?", "Вороны используют инструменты.", strings.Repeat("Вороны используют инструменты для добычи пищи. ", 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			huge := strings.Repeat(c.long, 100)
			n := qa.Tokens(c.question, []string{c.short, c.long, huge})
			if len(n) != 3 || n[0] <= 4 || n[1] <= n[0] || n[2] != spec.MaxLength {
				t.Fatalf("tokens %v: want short < long < the model's length %d, which cuts the huge one", n, spec.MaxLength)
			}
		})
	}
}

// TestQAStopsWhenItsContextIsDone: a done context gives its error and no
// spans; a live one with a deadline gives what no deadline gives.
func TestQAStopsWhenItsContextIsDone(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true})
	qa, err := models.OpenQA(dir, specOf(t, dir, models.RoleQA), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if spans, err := qa.Answer(cancelled, "Who uses tools?", texts, 10); !errors.Is(err, context.Canceled) || spans != nil {
		t.Fatalf("a cancelled context: spans %v, err %v", spans, err)
	}
	want, err := qa.Answer(context.Background(), "Кто использует инструменты?", texts, 10)
	if err != nil {
		t.Fatal(err)
	}
	live, cancelLive := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLive()
	got, err := qa.Answer(live, "Кто использует инструменты?", texts, 10)
	if err != nil || len(got) != len(want) {
		t.Fatalf("with a deadline: %v, %v", got, err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("context %d: %+v with a deadline, %+v without", i, got[i], want[i])
		}
	}
}
