package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

// `exocortex research` over the SiYuan guide with no provider: for
// questions of the guide's golden set (eval/testdata/siyuan-guide-answers.jsonl)
// the evidence-only report's passages hold the sentence that answers,
// cited to its gold block, and none of them is a heading.
func TestResearchWithoutAProviderGivesThePassagesThatHoldTheGuidesAnswers(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	data := t.TempDir()
	if _, errOut, err := exo(t, "ingest", "../../../shared/eval/siyuan-guide", "--data", data); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	env := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}
	for _, tc := range []struct{ id, question, gold, sentence string }{
		{"en-02", "How often is a file history generated for updated documents?", "20220501135308-yr7v67z",
			"Every 10 minutes, a history will be generated for the documents updated within these 10 minutes"},
		{"en-03", "How many days of file history are kept by default?", "20220615120602-mjy7por",
			"By default, the history of files generated in the last 30 days is automatically saved"},
		{"en-10", "What is the default performance monitoring threshold?", "20230405172238-0dl0a2a",
			"the default is 15000, which is 15 seconds"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			out, errOut, code := exoResearch(t, env, "research", tc.question, "--data", data, "--json")
			if code != 0 {
				t.Fatalf("research: exit %d\n%s", code, errOut)
			}
			var rep schemas.ResearchReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("research --json: %v\n%s", err, out)
			}
			if rep.Mode != schemas.ResearchEvidenceOnly {
				t.Fatalf("mode %s", rep.Mode)
			}
			found := false
			for _, sec := range rep.Sections {
				for _, s := range sec.Sentences {
					if len(s.Sources) == 0 {
						continue
					}
					if strings.HasPrefix(strings.TrimSpace(s.Text), "#") {
						t.Errorf("passage %q is a heading", s.Text)
					}
					for _, n := range s.Sources {
						if strings.Contains(s.Text, tc.sentence) && rep.Sources[n-1].BlockID == tc.gold {
							found = true
						}
					}
				}
			}
			if !found {
				t.Errorf("no passage holds %q citing %s:\n%s", tc.sentence, tc.gold, rep.Markdown)
			}
			if !strings.Contains(rep.Markdown, "siyuan://blocks/"+tc.gold) {
				t.Errorf("the Markdown does not link the gold block:\n%s", rep.Markdown)
			}
		})
	}
}
