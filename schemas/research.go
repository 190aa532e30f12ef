package schemas

import (
	"fmt"
	"time"
)

// Research event types.
const (
	// TypeResearchRequestedV1 is still read, never emitted.
	TypeResearchRequestedV1 = "kb.research.requested.v1"
	// TypeResearchRequestedV2 carries the research's scope (Scope); a
	// worker older than it refuses it as an unknown type instead of
	// researching every note.
	TypeResearchRequestedV2 = "kb.research.requested.v2"
	TypeResearchTaskV1      = "kb.research.task.v1"
	TypeResearchFindingV1   = "kb.research.finding.v1"
	TypeResearchDraftV1     = "kb.research.draft.v1"
	TypeResearchReportV1    = "kb.research.report.v1"
	TypeResearchProgressV1  = "kb.research.progress.v1"
)

// Research subjects. Progress goes to SubjectResearchProgressPrefix +
// research id on core NATS (not a stream).
const (
	SubjectResearchRequested      = "kb.research.requested"
	SubjectResearchTask           = "kb.research.task"
	SubjectResearchFinding        = "kb.research.finding"
	SubjectResearchDraft          = "kb.research.draft"
	SubjectResearchReport         = "kb.research.report"
	SubjectResearchProgressPrefix = "kb.research.progress."
)

// Research modes.
const (
	ResearchSynthesis    = "synthesis"     // a language model planned, read and wrote it; every statement verified
	ResearchEvidenceOnly = "evidence_only" // no language model: the best passages per theme, with citations
)

// Fact certainties.
const (
	CertaintyHigh   = "high"
	CertaintyMedium = "medium"
	CertaintyLow    = "low"
)

// Task and finding states.
const (
	TaskDone   = "done"   // every document read (or the budget of documents)
	TaskFailed = "failed" // failed for good (its messages dead-lettered, or no provider)
	TaskBudget = "budget" // stopped by the research's time or LLM-call budget
)

// ResearchBudget bounds one research. Zero fields take the defaults of the
// stage that reads them (sub-questions 5, documents per sub-question 8).
type ResearchBudget struct {
	SubQuestions int `json:"sub_questions,omitempty"`
	DocsPerTask  int `json:"docs_per_task,omitempty"`
	// LLMCalls bounds the provider calls of the whole research (0: none).
	LLMCalls int `json:"llm_calls,omitempty"`
	// WallSeconds bounds the research's wall time from its request (0: the
	// stage's default).
	WallSeconds int `json:"wall_seconds,omitempty"`
}

// ResearchRequested asks for a research report on a broad question.
type ResearchRequested struct {
	Envelope
	ResearchID string         `json:"research_id"`
	Question   string         `json:"question"`
	Lang       string         `json:"lang,omitempty"`
	Budget     ResearchBudget `json:"budget,omitempty"`
	// NoLLM asks for an evidence_only report even when a provider is set.
	NoLLM bool `json:"no_llm,omitempty"`
	// IncludeReports lets the research read saved research reports too
	// (QueryOptions.IncludeReports); by default they are left out.
	IncludeReports bool `json:"include_reports,omitempty"`
	// Scope keeps the research within part of the notes (QueryOptions.Scope):
	// the plan and every sub-question search only there. Nil: every note.
	Scope       *Scope    `json:"scope,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
}

// MsgID is "research:<research_id>".
func (e *ResearchRequested) MsgID() string { return "research:" + e.ResearchID }

// Validate checks the fields the plan stage relies on.
func (e *ResearchRequested) Validate() error {
	if e.ResearchID == "" || e.Question == "" {
		return fmt.Errorf("research_id and question are required")
	}
	if err := e.Scope.Validate(); err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	return nil
}

// ResearchTask is one sub-question of a research, for the investigate stage.
type ResearchTask struct {
	Envelope
	ResearchID string `json:"research_id"`
	TaskID     string `json:"task_id"`
	// Index is the task's place (0-based) among Of tasks.
	Index    int            `json:"index"`
	Of       int            `json:"of"`
	Question string         `json:"question"`
	Why      string         `json:"why,omitempty"`
	Lang     string         `json:"lang,omitempty"`
	Mode     string         `json:"mode"`
	Budget   ResearchBudget `json:"budget,omitempty"`
	// Deadline is when the research's wall-time budget runs out.
	Deadline time.Time `json:"deadline"`
	// Original is the research's question.
	Original string `json:"original"`
	// IncludeReports is the request's (ResearchRequested.IncludeReports).
	IncludeReports bool `json:"include_reports,omitempty"`
	// Scope is the request's (ResearchRequested.Scope).
	Scope *Scope `json:"scope,omitempty"`
	// PlanCalls are the provider calls the plan made (retries of an
	// unreadable reply included); they count in Budget.LLMCalls.
	PlanCalls int `json:"plan_calls,omitempty"`
	// PlanReason says why the plan is not the model's (plan_fallback,
	// plan_failed); the task's finding keeps it among its reasons.
	PlanReason string `json:"plan_reason,omitempty"`
	// Gap marks a follow-up task the draft stage asked for (a sub-question
	// the first findings left unanswered).
	Gap bool `json:"gap,omitempty"`
	// Calls, when set, is this task's own share of the provider calls (a
	// follow-up task's share of what is left); 0: an even share of Budget.
	Calls int `json:"calls,omitempty"`
}

// MsgID is "research-task:<research_id>:<task_id>".
func (e *ResearchTask) MsgID() string { return "research-task:" + e.ResearchID + ":" + e.TaskID }

// Validate checks the fields the investigate stage relies on.
func (e *ResearchTask) Validate() error {
	if e.ResearchID == "" || e.TaskID == "" || e.Question == "" || e.Of < 1 || e.Index < 0 || e.Index >= e.Of {
		return fmt.Errorf("research_id, task_id, question and index < of are required")
	}
	return nil
}

// Fact is what a research learned from the notes. It is kept only when the
// blocks it rests on support it (the answer stage's citation verifier).
type Fact struct {
	ID        string   `json:"id"`
	Text      string   `json:"text"`
	Certainty string   `json:"certainty"`
	Reasoning string   `json:"reasoning,omitempty"`
	BlockIDs  []string `json:"block_ids"`
	// Citations name the verified blocks (title, section path, link, quote).
	Citations []Citation `json:"citations,omitempty"`
	// DocID is the document the fact was first found in.
	DocID string `json:"doc_id,omitempty"`
	// ContradictedBy are the ids of the facts (of later documents) that
	// say otherwise: a contradicted fact is kept, both sides are reported.
	ContradictedBy []string `json:"contradicted_by,omitempty"`
	// Updated is the note's own time for the fact's blocks (the block's or
	// document's updated time, else the note's date), RFC 3339; empty when
	// unknown. It says which side of a disagreement is newer.
	Updated string `json:"updated,omitempty"`
}

// ResearchFinding is what one task found.
type ResearchFinding struct {
	Envelope
	ResearchID string `json:"research_id"`
	TaskID     string `json:"task_id"`
	Index      int    `json:"index"`
	Of         int    `json:"of"`
	Question   string `json:"question"`
	// Original, Lang and Mode are the research's question, language and
	// mode, copied from the task (the draft and report stages see only
	// findings).
	Original string `json:"original,omitempty"`
	Lang     string `json:"lang,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Status   string `json:"status"`
	Facts    []Fact `json:"facts"`
	// Summary is a short cited summary of the facts ([n] = Citations[n-1]).
	Summary   string     `json:"summary,omitempty"`
	Citations []Citation `json:"citations,omitempty"`
	DocsRead  []string   `json:"docs_read,omitempty"`
	// Dropped counts facts (and updates) their blocks do not state; a
	// contradicted fact is kept (ContradictedBy), not dropped.
	Dropped  int      `json:"dropped,omitempty"`
	LLMCalls int      `json:"llm_calls,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
	// Evidence is the best passage of each document read, kept without a
	// model (its own block quoted): what an evidence-only report shows when
	// the model's facts or report cannot be used.
	Evidence []Fact `json:"evidence,omitempty"`
	// PlanCalls, Gap, Budget and Deadline are copied from the task (the
	// draft stage counts the plan's calls and plans follow-up tasks).
	PlanCalls int            `json:"plan_calls,omitempty"`
	Gap       bool           `json:"gap,omitempty"`
	Budget    ResearchBudget `json:"budget,omitzero"`
	Deadline  time.Time      `json:"deadline,omitzero"`
}

// MsgID is "research-finding:<research_id>:<task_id>".
func (e *ResearchFinding) MsgID() string { return "research-finding:" + e.ResearchID + ":" + e.TaskID }

// Validate checks the fields the draft stage relies on.
func (e *ResearchFinding) Validate() error {
	if e.ResearchID == "" || e.TaskID == "" || e.Of < 1 {
		return fmt.Errorf("research_id, task_id and of are required")
	}
	return nil
}

// ResearchDraft is the supervisor's draft, written once every task finished,
// failed for good or ran out of budget.
type ResearchDraft struct {
	Envelope
	ResearchID string            `json:"research_id"`
	Question   string            `json:"question"`
	Lang       string            `json:"lang,omitempty"`
	Mode       string            `json:"mode"`
	Draft      string            `json:"draft"`
	Findings   []ResearchFinding `json:"findings"`
	Reasons    []string          `json:"reasons,omitempty"`
	// LLMCalls counts the provider calls of the research so far (the
	// findings' and the draft's own).
	LLMCalls int `json:"llm_calls,omitempty"`
	// Started is when the supervisor recorded the research's first finding.
	Started time.Time `json:"started"`
}

// MsgID is "research-draft:<research_id>".
func (e *ResearchDraft) MsgID() string { return "research-draft:" + e.ResearchID }

// Validate checks the fields the report stage relies on.
func (e *ResearchDraft) Validate() error {
	if e.ResearchID == "" || e.Question == "" {
		return fmt.Errorf("research_id and question are required")
	}
	return nil
}

// ReportSentence is one sentence of a report with the sources it cites
// (numbers into ResearchReport.Sources, 1-based).
type ReportSentence struct {
	Text    string `json:"text"`
	Sources []int  `json:"sources,omitempty"`
	// Sides are the sides of a disagreement sentence, in the sentence's
	// order, each with its own sources (Text is them joined, Sources all of
	// theirs): "where the notes disagree" states each side with its own
	// citation.
	Sides []ReportSide `json:"sides,omitempty"`
}

// ReportSide is one side of a disagreement: Lead says whose note and when
// ("Meeting 2024-04-02 (2024-04-02, newer):"), Text what the note says,
// checked against the side's blocks alone.
type ReportSide struct {
	Lead    string `json:"lead,omitempty"`
	Text    string `json:"text"`
	Sources []int  `json:"sources,omitempty"`
	// Updated is the side's note time (RFC 3339), when known; Newer marks
	// the newer side when the times say which it is.
	Updated string `json:"updated,omitempty"`
	Newer   bool   `json:"newer,omitempty"`
}

// ReportSection is one theme of a report.
type ReportSection struct {
	Title     string           `json:"title"`
	Sentences []ReportSentence `json:"sentences"`
}

// ResearchReport is the final report: structured, and as Markdown whose
// markers [n] are Sources[n-1].
type ResearchReport struct {
	Envelope
	ResearchID    string           `json:"research_id"`
	Question      string           `json:"question"`
	Lang          string           `json:"lang,omitempty"`
	Mode          string           `json:"mode"`
	Title         string           `json:"title"`
	Summary       []ReportSentence `json:"summary"`
	Sections      []ReportSection  `json:"sections"`
	Disagreements []ReportSentence `json:"disagreements,omitempty"`
	Conclusion    []ReportSentence `json:"conclusion,omitempty"`
	Sources       []Citation       `json:"sources"`
	Facts         []Fact           `json:"facts,omitempty"`
	Markdown      string           `json:"markdown"`
	// Reasons say why the report is what it is (evidence_only: why no
	// synthesis; tasks that failed; budgets that ran out).
	Reasons  []string  `json:"reasons,omitempty"`
	Tasks    int       `json:"tasks"`
	DocsRead int       `json:"docs_read"`
	LLMCalls int       `json:"llm_calls"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// MsgID is "research-report:<research_id>".
func (e *ResearchReport) MsgID() string { return "research-report:" + e.ResearchID }

// Validate checks the fields clients rely on.
func (e *ResearchReport) Validate() error {
	if e.ResearchID == "" {
		return fmt.Errorf("research_id is required")
	}
	switch e.Mode {
	case ResearchSynthesis, ResearchEvidenceOnly:
	default:
		return fmt.Errorf("mode %q: want synthesis or evidence_only", e.Mode)
	}
	for i, c := range e.Sources {
		if c.BlockID == "" {
			return fmt.Errorf("source %d has no block_id", i)
		}
	}
	return nil
}

// ResearchProgress is a step of a research, on core NATS
// (kb.research.progress.<research_id>).
type ResearchProgress struct {
	Envelope
	ResearchID string `json:"research_id"`
	// Step is "plan", "task", "draft", "report" or "failed".
	Step   string `json:"step"`
	TaskID string `json:"task_id,omitempty"`
	// Task is the task's number (1-based, among Tasks) on a "task" step, so
	// a client can say "task 2/5"; Tasks is then the research's task count.
	Task    int    `json:"task,omitempty"`
	Message string `json:"message"`
	// Tasks is the number of sub-questions once planned; DocsRead and
	// FactsKept are a task's counts so far.
	Tasks     int  `json:"tasks,omitempty"`
	DocsRead  int  `json:"docs_read,omitempty"`
	DocsTotal int  `json:"docs_total,omitempty"`
	FactsKept int  `json:"facts_kept,omitempty"`
	Done      bool `json:"done,omitempty"`
}

// Subject is kb.research.progress.<research_id>.
func (e *ResearchProgress) Subject() string { return SubjectResearchProgressPrefix + e.ResearchID }

// MsgID is "research-progress:<research_id>:<step>:<task>:<docs read>".
func (e *ResearchProgress) MsgID() string {
	return fmt.Sprintf("research-progress:%s:%s:%s:%d", e.ResearchID, e.Step, e.TaskID, e.DocsRead)
}
