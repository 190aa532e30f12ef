package research

import (
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// ReasonSynthesisFailed starts the first reason of a report that was to be
// a synthesis and is evidence_only because the model's work could not be
// used: its fact replies could not be read, or it kept no verified fact,
// while retrieval found passages.
const ReasonSynthesisFailed = "synthesis_failed"

// ReasonReportFallback starts the reason of a synthesis whose report the
// model could not write (or not usably): the report lists the verified
// facts.
const ReasonReportFallback = "report_fallback"

// evidenceFallback makes b the evidence-only report of the best passages
// the tasks kept of the documents they read (the findings' Evidence), for
// a synthesis with no verified fact, with the reason first; false when
// there are none (the report then says the notes hold nothing).
func (r *Reporter) evidenceFallback(b *builder, d *schemas.ResearchDraft) bool {
	ed := *d
	ed.Findings = make([]schemas.ResearchFinding, len(d.Findings))
	passages, skipped, docs := 0, 0, 0
	for i, f := range d.Findings {
		f.Facts = f.Evidence
		ed.Findings[i] = f
		passages += len(f.Evidence)
		docs += len(f.DocsRead)
		for _, reason := range f.Reasons {
			if strings.HasPrefix(reason, "fact_step_skipped: ") {
				skipped++
			}
		}
	}
	if passages == 0 {
		return false
	}
	why := fmt.Sprintf("%s: the model kept no verified fact from the %d documents read; the report shows their best passages",
		ReasonSynthesisFailed, docs)
	if skipped > 0 {
		why = fmt.Sprintf("%s: the model's fact replies could not be read (%d documents skipped, also when asked again); "+
			"the report shows the best passages of the %d documents read", ReasonSynthesisFailed, skipped, docs)
	}
	rep := b.rep
	rep.Mode = schemas.ResearchEvidenceOnly
	reasons := []string{why}
	for _, reason := range rep.Reasons {
		reasons = appendOnce(reasons, reason)
	}
	rep.Reasons = reasons
	b.evidence(&ed, numberFacts(ed.Findings), r.d.Config)
	if b.kept == 0 {
		b.reset()
		rep.Mode = d.Mode
		rep.Reasons = reasons[1:]
		return false
	}
	return true
}

// callsLeft is how many provider calls the research's budget leaves after
// used calls (a large number without a budget).
func callsLeft(d *schemas.ResearchDraft, used int) int {
	for _, f := range d.Findings {
		if f.Budget.LLMCalls > 0 {
			return f.Budget.LLMCalls - used
		}
	}
	return 1 << 30
}

// Fallback says why a report is not what its research asked for: the
// reason of a synthesis that fell back to the evidence-only report
// (synthesis_failed) or to the list of verified facts (report_fallback);
// "" for a report that is what was asked (a synthesis, or evidence_only
// without a provider or with --no-llm).
func Fallback(rep *schemas.ResearchReport) string {
	for _, reason := range rep.Reasons {
		if strings.HasPrefix(reason, ReasonSynthesisFailed+": ") || strings.HasPrefix(reason, ReasonReportFallback+": ") {
			return reason
		}
	}
	return ""
}
