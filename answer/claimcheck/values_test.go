package claimcheck_test

import (
	"testing"

	"github.com/exocortex/exocortex/answer/claimcheck"
)

func TestValuesReadsWhatATextStatesWithItsPlaceAndUnit(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string // kind|unit|item
	}{
		{"an English date and an amount of money", "The launch is set for 15 March 2025 with a budget of $40,000.",
			[]string{"date||15 March 2025", "money|usd|$40,000"}},
		{"a Russian date and an amount in roubles", "Запуск назначен на 1 апреля 2025 года, бюджет 55 000 рублей.",
			[]string{"date||1 апреля 2025 года", "money|rub|55 000 рублей"}},
		{"a time and a quantity", "Backups run nightly at 02:00 and are kept for 30 days.",
			[]string{"time||02:00", "quantity|day|30 days"}},
		{"a link and a block id state nothing", "See https://example.com/2024/05 and 20210808180117-6v0mkxr for 3 files.",
			[]string{"quantity|file|3 files"}},
		{"one written as a word states no count", "One of the views is a table.", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := claimcheck.Values(c.text)
			var got []string
			for _, v := range vs {
				got = append(got, v.Kind+"|"+v.Unit+"|"+v.Item)
				if c.text[v.Start:v.End] != v.Item {
					t.Errorf("%q at %d:%d is %q in the text", v.Item, v.Start, v.End, c.text[v.Start:v.End])
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("values %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("value %d: %q, want %q", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestValuesAreTheSameAfterNormalisingTheirForm(t *testing.T) {
	one := func(text string) claimcheck.Value {
		t.Helper()
		vs := claimcheck.Values(text)
		if len(vs) != 1 {
			t.Fatalf("%q: %d values, want 1", text, len(vs))
		}
		return vs[0]
	}
	cases := []struct {
		name string
		a, b string
		same bool
	}{
		{"one date in English and in Russian", "on 15 March 2025", "15 марта 2025 г.", true},
		{"an ISO date and a written one", "on 2025-03-15", "on March 15, 2025", true},
		{"a date without its year fits the date with it", "on 15 March", "on 15 March 2025", true},
		{"two launch dates differ", "on 15 March 2025", "on 1 April 2025", false},
		{"two years differ", "in 2024", "in 2428", false},
		{"one amount written two ways", "$40,000", "$40000", true},
		{"two budgets differ", "$40,000", "$55,000", false},
		{"two times differ", "at 02:00", "at 02:03", false},
		{"the same number in another unit is not comparable", "30 days", "30 hours", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := one(c.a), one(c.b)
			if got := a.Same(b); got != c.same {
				t.Errorf("Same(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
			}
			if got := b.Same(a); got != c.same {
				t.Errorf("Same(%q, %q) = %v, want %v", c.b, c.a, got, c.same)
			}
		})
	}
	if one("30 days").Comparable(one("30 hours")) || !one("15 March 2025").Comparable(one("in 2024")) {
		t.Error("quantities of other units must not be comparable; a date and a year must be")
	}
}
