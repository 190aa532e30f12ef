package main_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/models/llm/llmtest"
)

// TestEvalAnswersWithTheScriptedProviderMeetsTheIssuesTargets runs eval
// --answers on the SiYuan golden set against the scripted provider that
// answers well from the given contexts (and translates the Russian
// questions from the set's table): the words-based check of the citations'
// blocks (overlap_support_precision) at least 0.95 and at least 9 of the 10
// unanswerable questions abstained. Then --calibrate fits the llm
// threshold on the same answers.
func TestEvalAnswersWithTheScriptedProviderMeetsTheIssuesTargets(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	set, err := eval.Load(siyuanAnswers)
	if err != nil {
		t.Fatal(err)
	}
	tr := map[string]map[string]string{}
	for _, q := range set.Questions {
		if len(q.Translations) > 0 {
			tr[q.Question] = q.Translations
		}
	}
	good := llmtest.NewScripted(t, llmtest.ScriptOptions{Behaviour: llmtest.Good, Translations: tr})
	env := []string{"EXOCORTEX_LLM_BASE_URL=" + good.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_DATA=" + t.TempDir(), "EXOCORTEX_CALIBRATION="}
	rep := evalAnswersJSON(t, env, siyuanAnswers)
	t.Logf("modes %v; overlap support precision %.4f (%d of %d citations), recall %.4f (%d of %d claims); "+
		"gold citation precision %.4f (%d of %d), recall %.4f (%d of %d claims); abstained %d of %d unanswerable, %d answerable wrongly; misses %q",
		rep.Modes, rep.OverlapSupportPrecision, rep.OverlapSupporting, rep.OverlapCitations, rep.OverlapSupportRecall, rep.OverlapSupportedClaims, rep.OverlapClaims,
		rep.GoldCitationPrecision, rep.GoldCorrectCitations, rep.GoldCitations, rep.GoldCitationRecall, rep.GoldSupportedClaims, rep.GoldClaims,
		rep.AbstainedRight, rep.Unanswerable, rep.AbstainedWrong, rep.Misses)
	if rep.OverlapCitations < 20 || rep.OverlapSupportPrecision < 0.95 {
		t.Errorf("overlap support precision %.4f over %d citations, want at least 0.95", rep.OverlapSupportPrecision, rep.OverlapCitations)
	}
	if rep.Modes["llm"] < 30 {
		t.Errorf("modes %v: the good provider's answers should mostly stand", rep.Modes)
	}
	if rep.AbstainedRight < 9 {
		t.Errorf("abstained on %d of %d unanswerable questions, want at least 9", rep.AbstainedRight, rep.Unanswerable)
	}

	cal := evalAnswersJSON(t, env, "--calibrate", siyuanAnswers)
	if cal.Calibration == nil || cal.Calibration.LLM == nil || cal.Calibration.LLM.Samples < 20 {
		t.Fatalf("calibration %+v", cal.Calibration)
	}
	t.Logf("llm calibration: %s on %d answers, threshold %.4f", cal.Calibration.LLM.Method, cal.Calibration.LLM.Samples, cal.Calibration.LLM.Threshold)
}

// TestEvalAnswersScriptedMixedReportsEveryLabelField runs eval --answers
// --scripted mixed on the SiYuan golden set, in prose and in JSON mode: the
// provider starts in-process, perturbs about half of its answers and labels
// every claim; the report gives every label field, in the JSON and in the
// text under the same names. The figures are the verifier's of the day
// (logged, not asserted: the verifier is being rewritten); what is
// asserted is that they are computed from the labels: claims were labelled
// for most questions, some false claims were made, and the counts add up.
func TestEvalAnswersScriptedMixedReportsEveryLabelField(t *testing.T) {
	t.Parallel()
	skipWithoutGuide(t)
	env := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG=", "EXOCORTEX_DATA=" + t.TempDir(), "EXOCORTEX_CALIBRATION="}
	for _, mode := range [][]string{{"--scripted", "mixed"}, {"--scripted", "mixed", "--scripted-json"}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			rep := evalAnswersJSON(t, env, append(mode, siyuanAnswers)...)
			if rep.LabelledClaims == nil || rep.FalseSupported == nil || rep.FalseSupportedShare == nil || rep.CitationPrecision == nil ||
				rep.FaithfulKept == nil || rep.ConfidenceAUCClean == nil || !strings.Contains(rep.Labels, "behaviour mixed") {
				t.Fatalf("label fields missing: labels %q, missing %q", rep.Labels, rep.LabelsMissing)
			}
			auc := "n/a (" + rep.ConfidenceAUCNote + ")"
			if rep.ConfidenceAUC != nil {
				auc = fmt.Sprintf("%.4f", *rep.ConfidenceAUC)
			}
			t.Logf("modes %v; labelled claims %d %v; false_supported %d (share %.4f of %d shown cited claims; %v), unmatched %d; "+
				"citation_precision %.4f (%d of %d); faithful_kept %.4f (%d of %d); confidence_auc %s (%d clean, %d false); "+
				"abstention %.4f; wrong_language %d of %d; gold_citation_precision %.4f; overlap_support_precision %.4f",
				rep.Modes, *rep.LabelledClaims, rep.LabelledClaimsByLabel, *rep.FalseSupported, *rep.FalseSupportedShare, *rep.ShownCitedClaims,
				rep.FalseSupportedByLabel, *rep.UnmatchedCitedSentences, *rep.CitationPrecision, *rep.CorrectCitations, *rep.LabelledCitations,
				*rep.FaithfulKept, *rep.FaithfulKeptClaims, *rep.FaithfulClaims, auc, *rep.ConfidenceAUCClean, *rep.ConfidenceAUCFalse,
				rep.Abstention, rep.WrongLanguage, rep.LanguageChecked, rep.GoldCitationPrecision, rep.OverlapSupportPrecision)
			if *rep.LabelledClaims < 20 || rep.LabelledClaimsByLabel["faithful"]+rep.LabelledClaimsByLabel["translated"] < 10 {
				t.Errorf("labelled claims %d %v: the provider answered too few questions", *rep.LabelledClaims, rep.LabelledClaimsByLabel)
			}
			perturbed := *rep.LabelledClaims - rep.LabelledClaimsByLabel["faithful"] - rep.LabelledClaimsByLabel["translated"]
			if perturbed < 5 {
				t.Errorf("only %d perturbed claims %v", perturbed, rep.LabelledClaimsByLabel)
			}
			sum := 0
			for _, v := range rep.FalseSupportedByLabel {
				sum += v
			}
			if sum != *rep.FalseSupported || *rep.FalseSupported > *rep.ShownCitedClaims || *rep.CorrectCitations > *rep.LabelledCitations ||
				*rep.FaithfulKeptClaims > *rep.FaithfulClaims || *rep.ConfidenceAUCClean+*rep.ConfidenceAUCFalse > rep.Modes["llm"]+rep.Modes["extractive"] {
				t.Errorf("the counts do not add up: %+v", rep)
			}
			if rep.LanguageChecked < rep.Modes["llm"] {
				t.Errorf("language checked on %d answers, %d in mode llm", rep.LanguageChecked, rep.Modes["llm"])
			}
		})
	}
	// The text report names the same fields.
	out, errOut, err := exoEnv(t, env, "eval", "--answers", "--no-models", "--scripted", "mixed", siyuanAnswers)
	if err != nil {
		t.Fatalf("eval --answers --scripted mixed: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("eval --answers --no-models --scripted mixed %s:\n%s", siyuanAnswers, out)
	for _, name := range []string{"labels", "labelled_claims", "false_supported", "false_supported_share", "citation_precision", "faithful_kept",
		"confidence_auc", "abstention", "wrong_language", "gold_citation_precision", "overlap_support_precision"} {
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("the text report has no %s row:\n%s", name, out)
		}
	}
}

func TestEvalScriptedFlagsAreCheckedBeforeAnyWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown behaviour", []string{"--answers", "--scripted", "sloppy"}, "change-number"},
		{"--scripted without --answers", []string{"--scripted", "mixed"}, "give --answers too"},
		{"--scripted with --labels", []string{"--answers", "--scripted", "mixed", "--labels", "http://127.0.0.1:1/exocortex/claims"}, "leave out --labels"},
		{"--scripted-json alone", []string{"--answers", "--scripted-json"}, "--scripted KIND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, err := exo(t, append(append([]string{"eval"}, tc.args...), siyuanAnswers)...)
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Errorf("err %v, stderr %q; want a usage error saying %q", err, errOut, tc.want)
			}
		})
	}
}
