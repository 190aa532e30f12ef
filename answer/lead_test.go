package answer

import "testing"

// TestTheSearchOnlyLeadDoesNotSayNoModelIsConfiguredWhenOneAnswered: a
// model that looped, or answered in another language even when asked again,
// was configured and did answer; the passages that answer instead must not
// be led by "No language model is configured". searchOnlyLead knows neither
// reason and falls through to that lead: every door shows it for the
// scripted provider's Endless behaviour (llmtest.Endless over the SiYuan
// guide, found by cmd/exocortex's door tests).
func TestTheSearchOnlyLeadDoesNotSayNoModelIsConfiguredWhenOneAnswered(t *testing.T) {
	noModel := map[string]string{"en": searchOnlyLead("en", []string{ReasonNoProvider, ReasonNoQA}),
		"ru": searchOnlyLead("ru", []string{ReasonNoProvider, ReasonNoQA})}
	for _, c := range []struct {
		name    string
		reasons []string
	}{
		{"a model stopped for repeating itself",
			[]string{ReasonLoop + ": the model said the same sentence again and again (2 repeats) and was stopped", ReasonNoQA}},
		{"a model that answered in another language twice",
			[]string{DropLanguage + ": the model answered in another language than the question's (ru); asked again",
				DropLanguage + ": the model's answer is not in the question's language", ReasonNoQA}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, lang := range []string{"en", "ru"} {
				if got := searchOnlyLead(lang, c.reasons); got == noModel[lang] {
					t.Errorf("%s lead %q: it says no language model is configured", lang, got)
				}
			}
		})
	}
}
