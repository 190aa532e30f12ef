package researching

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// InvestigateConfig bounds a task. Zero fields take the defaults.
type InvestigateConfig struct {
	// DocsPerTask is how many documents a task reads at most (8); a task's
	// budget may ask for another number.
	DocsPerTask int
	// DocChars bounds the text of one document sent to the provider
	// (16,000 bytes): the retrieved chunks always, then the document's other
	// chunks in order while they fit.
	DocChars int
	// ReservedCalls are the provider calls of a research's LLM-call budget
	// kept for plan, draft and report (3); the rest is shared evenly among
	// its tasks, at least one each.
	ReservedCalls int
	// SummaryFacts is how many facts the finding's summary states (5).
	SummaryFacts int
	// MaxDeliver is the investigate stage's max deliveries: on the last one
	// a failing task ends with a failed finding and the facts so far.
	MaxDeliver int
	// ReplyRetries is how many more times a fact step reply that cannot be
	// read is asked for within one delivery, with the parse error
	// (research.DefaultReplyRetries, 2; negative: none).
	ReplyRetries int
	// FactDeliveries is how many deliveries of the task a document's fact
	// step gets when its replies cannot be read (2): after the first the
	// task is redelivered through the bus and resumes at that document;
	// after the last the document is skipped, with the reason.
	FactDeliveries int
	// AbandonAfter is how many documents in a row may be skipped for
	// unreadable replies (2) before the task stops asking the model and
	// keeps the remaining documents' best passages only.
	AbandonAfter int
}

func (c InvestigateConfig) withDefaults() InvestigateConfig {
	if c.DocsPerTask <= 0 {
		c.DocsPerTask = DefaultDocsPerTask
	}
	if c.DocChars <= 0 {
		c.DocChars = 16000
	}
	if c.ReservedCalls <= 0 {
		c.ReservedCalls = 3
	}
	if c.SummaryFacts <= 0 {
		c.SummaryFacts = 5
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = InvestigateMaxDeliver
	}
	if c.FactDeliveries <= 0 {
		c.FactDeliveries = 2
	}
	if c.AbandonAfter <= 0 {
		c.AbandonAfter = 2
	}
	return c
}

// Validate reports every problem of c.
func (c InvestigateConfig) Validate() error {
	var errs []error
	if c.DocsPerTask < 0 {
		errs = append(errs, fmt.Errorf("research docs per task %d: want positive", c.DocsPerTask))
	}
	if c.DocChars < 0 {
		errs = append(errs, fmt.Errorf("research doc chars %d: want positive", c.DocChars))
	}
	return errors.Join(errs...)
}

// DocReader reads whole documents from the index (*store.Store).
type DocReader interface {
	DocChunkIDs(ctx context.Context, docID string) ([]string, error)
	Passages(ctx context.Context, ids []string) ([]store.Hit, error)
}

// DocTimer gives documents' own times (*store.Store: the front matter's
// date, else the source's update time), which date the facts read from
// them and order the sides of a disagreement.
type DocTimer interface {
	DocTimes(ctx context.Context, docIDs []string) (map[string]time.Time, error)
}

// InvestigateDeps are what the investigate stage uses. Router nil: no
// provider, every task is evidence_only. Docs nil: a document is its
// retrieved chunks only. Docs that is also a DocTimer dates the documents.
type InvestigateDeps struct {
	Router    *llm.Router
	Retriever *retrieval.Retriever
	Docs      DocReader
	// Analyzer is the index's (store.Analyzer()): the verifier's lemmas.
	Analyzer *analysis.Analyzer
	// State holds the checkpoints (KB_RESEARCH_STATE).
	State    bus.KV
	Progress func(*schemas.ResearchProgress)
	Config   InvestigateConfig
	Now      func() time.Time
	// AfterDocument, when set, is called after each document's checkpoint;
	// an error ends the delivery with that error, as a crash would (tests
	// kill a worker with it).
	AfterDocument func(task *schemas.ResearchTask, docsDone int) error
}

// Reasons a finding gives.
const (
	ReasonWallBudget  = "wall_budget"
	ReasonCallBudget  = "llm_call_budget"
	ReasonTaskFailed  = "task_failed"
	ReasonUnparsable  = "unparsable_reply"
	ReasonNoDocuments = "no_documents"
	// ReasonFactStepSkipped: a document whose fact step replies could not
	// be read, also when asked again and redelivered, is skipped.
	ReasonFactStepSkipped = "fact_step_skipped"
	// ReasonFactStepAbandoned: after AbandonAfter skipped documents in a
	// row the task asks the model no more.
	ReasonFactStepAbandoned = "fact_step_abandoned"
)

// errUnreadable is a fact step whose replies could not be read in this
// delivery: the task is redelivered and resumes at that document.
var errUnreadable = errors.New("fact step reply unreadable; redelivered to try the document again")

// checkpoint is a task's state in KB_RESEARCH_STATE, written after every
// document: a redelivered task resumes at Docs[DocsDone].
type checkpoint struct {
	Docs     []research.Document      `json:"docs"`
	Planned  bool                     `json:"planned"`
	DocsDone int                      `json:"docs_done"`
	Facts    research.Facts           `json:"facts"`
	LLMCalls int                      `json:"llm_calls"`
	Reasons  []string                 `json:"reasons,omitempty"`
	Finding  *schemas.ResearchFinding `json:"finding,omitempty"`
	// DocTries counts the deliveries whose fact step on Docs[DocsDone]
	// gave no readable reply.
	DocTries int `json:"doc_tries,omitempty"`
	// Unreadable counts the documents skipped in a row for unreadable
	// replies; NoModel says the task stopped asking the model.
	Unreadable int  `json:"unreadable,omitempty"`
	NoModel    bool `json:"no_model,omitempty"`
	// Evidence holds the best passage of each document done (synthesis
	// tasks): the finding's Evidence.
	Evidence []schemas.Fact `json:"evidence,omitempty"`
}

var keyUnsafe = regexp.MustCompile(`[^A-Za-z0-9_=-]`)

// TaskKey is the task's checkpoint key in KB_RESEARCH_STATE:
// task.<research id>.<task id> (characters a key may not hold become _).
func TaskKey(researchID, taskID string) string {
	return "task." + keyUnsafe.ReplaceAllString(researchID, "_") + "." + keyUnsafe.ReplaceAllString(taskID, "_")
}

type investigator struct {
	d   InvestigateDeps
	cfg InvestigateConfig
	now func() time.Time
}

// NewInvestigate returns the investigate stage's handler. A task retrieves
// for its sub-question (Retrieve then Rerank: the best mode available, graph
// expansion included), groups the contexts into documents (best first, at
// most the task's documents budget) and reads them one at a time: one
// fast-role call per document with the facts so far returns new, updated
// and contradicted facts; every new or changed fact is verified against the
// blocks it names (research.Facts.Apply) and the checkpoint written, so a
// redelivered task resumes at the next document. Between documents it
// checks the research's deadline and its share of the LLM-call budget
// (status budget). A failing step returns its error (the bus redelivers);
// on the last delivery the task ends with a failed finding and the facts so
// far. Every task ends with exactly one finding. Evidence_only tasks (no
// provider, or asked for) make no call: each document's fact is the
// passage of the block that best matches the sub-question.
func NewInvestigate(d InvestigateDeps) (bus.Handler, error) {
	if d.Retriever == nil {
		return nil, errors.New("investigate stage: a retriever is required")
	}
	if d.State == nil {
		return nil, errors.New("investigate stage: a state bucket is required")
	}
	if d.Analyzer == nil {
		a, err := analysis.New(analysis.Full)
		if err != nil {
			return nil, fmt.Errorf("investigate stage: analyzer: %w", err)
		}
		d.Analyzer = a
	}
	if err := d.Config.Validate(); err != nil {
		return nil, err
	}
	inv := &investigator{d: d, cfg: d.Config.withDefaults(), now: d.Now}
	if inv.now == nil {
		inv.now = time.Now
	}
	return bus.HandlerFunc(inv.handle), nil
}

func (iv *investigator) handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	task, err := bus.Decode[*schemas.ResearchTask](m)
	if err != nil {
		return nil, err
	}
	if err := task.Validate(); err != nil {
		return nil, bus.Permanent(fmt.Errorf("research task: %w", err))
	}
	log := zerolog.Ctx(ctx).With().Str("research_id", task.ResearchID).Str("task_id", task.TaskID).Logger()
	ctx = log.WithContext(ctx)
	key := TaskKey(task.ResearchID, task.TaskID)
	cp, err := iv.load(ctx, key)
	if err != nil {
		if bus.IsPermanent(err) || m.Delivered < uint64(iv.cfg.MaxDeliver) {
			return nil, err
		}
		// Every task ends with a finding, even one whose state is lost.
		cp = &checkpoint{Reasons: []string{fmt.Sprintf("%s: after %d deliveries: %v", ReasonTaskFailed, m.Delivered, err)}}
		return []schemas.Event{iv.finding(task, cp, schemas.TaskFailed)}, nil
	}
	if cp.Finding != nil {
		// Finished before; its finding was not acknowledged as published.
		return []schemas.Event{cp.Finding}, nil
	}
	status, err := iv.run(ctx, task, cp, key, m.Delivered >= uint64(iv.cfg.MaxDeliver))
	if err != nil {
		if bus.IsPermanent(err) || m.Delivered < uint64(iv.cfg.MaxDeliver) {
			return nil, err
		}
		log.Error().Err(err).Uint64("delivered", m.Delivered).Msg("research task failed for good; its finding keeps the facts so far")
		status = schemas.TaskFailed
		cp.Reasons = append(cp.Reasons, fmt.Sprintf("%s: after %d deliveries: %v", ReasonTaskFailed, m.Delivered, err))
	}
	f := iv.finding(task, cp, status)
	cp.Finding = f
	if err := iv.save(ctx, key, cp); err != nil && status != schemas.TaskFailed {
		return nil, err
	}
	iv.progress(task, &schemas.ResearchProgress{ResearchID: task.ResearchID, Step: "task", TaskID: task.TaskID,
		DocsRead: len(f.DocsRead), DocsTotal: len(cp.Docs), FactsKept: len(f.Facts), Done: true,
		Message: fmt.Sprintf("%s: %s (%d documents, %d facts)", task.TaskID, status, len(f.DocsRead), len(f.Facts))})
	log.Info().Str("status", status).Int("docs", len(f.DocsRead)).Int("facts", len(f.Facts)).Int("dropped", f.Dropped).
		Int("llm_calls", f.LLMCalls).Msg("research task finished")
	return []schemas.Event{f}, nil
}

// run reads the task's documents from the checkpoint's place on; it returns
// the task's status, or an error to retry.
func (iv *investigator) run(ctx context.Context, task *schemas.ResearchTask, cp *checkpoint, key string, lastDelivery bool) (string, error) {
	evidence := task.Mode == schemas.ResearchEvidenceOnly || iv.d.Router == nil
	if evidence && len(cp.Reasons) == 0 {
		if iv.d.Router == nil {
			cp.Reasons = append(cp.Reasons, ReasonNoLLMProvider+": no language-model provider is configured; the best passages are kept as they are")
		} else {
			cp.Reasons = append(cp.Reasons, ReasonNoLLMAsked+": the request asked for no language model; the best passages are kept as they are")
		}
	}
	if !cp.Planned {
		if task.PlanReason != "" {
			cp.Reasons = append(cp.Reasons, task.PlanReason)
		}
		docs, reasons, err := iv.retrieve(ctx, task)
		if err != nil {
			return "", err
		}
		cp.Docs, cp.Planned = docs, true
		cp.Reasons = append(cp.Reasons, reasons...)
		if len(docs) == 0 {
			cp.Reasons = append(cp.Reasons, ReasonNoDocuments+": nothing in the notes matched the sub-question")
		}
		if err := iv.save(ctx, key, cp); err != nil {
			return "", err
		}
	}
	calls := iv.callShare(task)
	for cp.DocsDone < len(cp.Docs) {
		if !task.Deadline.IsZero() && iv.now().After(task.Deadline) {
			cp.Reasons = append(cp.Reasons, fmt.Sprintf("%s: the research's time ran out after %d of %d documents", ReasonWallBudget, cp.DocsDone, len(cp.Docs)))
			return schemas.TaskBudget, nil
		}
		if !evidence && calls > 0 && cp.LLMCalls >= calls {
			cp.Reasons = append(cp.Reasons, fmt.Sprintf("%s: this task's share of the research's provider calls (%d) was spent after %d of %d documents",
				ReasonCallBudget, calls, cp.DocsDone, len(cp.Docs)))
			return schemas.TaskBudget, nil
		}
		doc := cp.Docs[cp.DocsDone]
		switch {
		case evidence:
			iv.passageFact(ctx, task, cp, doc)
		case cp.NoModel:
		default:
			err := iv.readDocument(ctx, task, cp, doc, calls, lastDelivery)
			if errors.Is(err, errUnreadable) {
				if serr := iv.save(ctx, key, cp); serr != nil {
					return "", serr
				}
			}
			if err != nil {
				return "", err
			}
		}
		if !evidence {
			cp.Evidence = append(cp.Evidence, iv.bestPassages(ctx, task, cp, doc, len(cp.Evidence))...)
		}
		cp.DocsDone++
		if err := iv.save(ctx, key, cp); err != nil {
			return "", err
		}
		iv.progress(task, &schemas.ResearchProgress{ResearchID: task.ResearchID, Step: "task", TaskID: task.TaskID,
			DocsRead: cp.DocsDone, DocsTotal: len(cp.Docs), FactsKept: len(cp.Facts.List),
			Message: fmt.Sprintf("%s: read %d of %d documents (%s), %d facts kept", task.TaskID, cp.DocsDone, len(cp.Docs), doc.Title, len(cp.Facts.List))})
		if iv.d.AfterDocument != nil {
			if err := iv.d.AfterDocument(task, cp.DocsDone); err != nil {
				return "", err
			}
		}
	}
	return schemas.TaskDone, nil
}

// callShare is the task's share of the research's provider calls (0: no
// bound): its own (a follow-up task's), else an even share of the budget
// less the calls kept for plan, draft and report and the plan's retries.
func (iv *investigator) callShare(task *schemas.ResearchTask) int {
	switch {
	case task.Calls > 0:
		return task.Calls
	case task.Budget.LLMCalls > 0:
		return max(1, (task.Budget.LLMCalls-iv.cfg.ReservedCalls-max(0, task.PlanCalls-1))/task.Of)
	}
	return 0
}

// readDocument makes the fact step's call for doc and applies its reply.
// A reply that cannot be read is repaired, else asked for again with the
// parse error (each try a call of the task's share); when none can be
// read, the task is redelivered (errUnreadable, the checkpoint to be
// saved) until the document has had FactDeliveries deliveries or this is
// the task's last, and then the document is skipped with the reason.
func (iv *investigator) readDocument(ctx context.Context, task *schemas.ResearchTask, cp *checkpoint, doc research.Document, share int, lastDelivery bool) error {
	log := zerolog.Ctx(ctx)
	var step research.FactStep
	_, calls, err := research.AskStructured(ctx, research.Ask{What: "fact step",
		Messages: research.FactMessages(task.Original, task.Question, task.Lang, cp.Facts.List, doc),
		Call: func(ctx context.Context, msgs []llm.Message) (llm.Result, error) {
			return iv.d.Router.Stream(ctx, llm.Request{Role: llm.RoleFast, Messages: msgs, JSONSchema: research.FactStepSchema()}, nil)
		},
		Parse: func(text string) error {
			var err error
			step, err = research.ParseFactStep(text)
			return err
		},
		Retries: iv.cfg.ReplyRetries,
		Allow:   func(n int) bool { return share <= 0 || cp.LLMCalls+n < share },
	})
	if err != nil && !research.IsReplyError(err) {
		// The failed call is not counted: the provider gave nothing (the
		// retries of unreadable replies before it are).
		cp.LLMCalls += calls - 1
		return fmt.Errorf("investigate %s/%s: fact step on document %s (%d of %d): %w",
			task.ResearchID, task.TaskID, doc.DocID, cp.DocsDone+1, len(cp.Docs), err)
	}
	cp.LLMCalls += calls
	if err != nil {
		cp.DocTries++
		if cp.DocTries < iv.cfg.FactDeliveries && !lastDelivery && (share <= 0 || cp.LLMCalls < share) {
			log.Warn().Str("doc_id", doc.DocID).Int("doc_tries", cp.DocTries).Err(err).Msg("fact step unreadable; the task is redelivered to try the document again")
			return fmt.Errorf("investigate %s/%s: document %s: %w: %v", task.ResearchID, task.TaskID, doc.DocID, errUnreadable, err)
		}
		cp.Reasons = append(cp.Reasons, fmt.Sprintf("%s: document %s (%s) skipped: %s (%d deliveries)",
			ReasonFactStepSkipped, doc.DocID, doc.Title, oneLine(err.Error()), cp.DocTries))
		log.Warn().Str("doc_id", doc.DocID).Int("doc_tries", cp.DocTries).Err(err).Msg("fact step unreadable for good; document skipped")
		cp.DocTries = 0
		cp.Unreadable++
		if cp.Unreadable >= iv.cfg.AbandonAfter && cp.DocsDone+1 < len(cp.Docs) {
			cp.NoModel = true
			cp.Reasons = append(cp.Reasons, fmt.Sprintf("%s: the model's fact steps could not be read for %d documents in a row; "+
				"the other %d documents were not sent to it (their best passages are kept as evidence)",
				ReasonFactStepAbandoned, cp.Unreadable, len(cp.Docs)-cp.DocsDone-1))
		}
		return nil
	}
	cp.DocTries, cp.Unreadable = 0, 0
	ap := cp.Facts.Apply(iv.d.Analyzer, step, doc)
	// What was dropped and why, and what was re-cited, merged or found
	// contradicted, goes to the log; the finding counts the drops
	// (Dropped), keeps the contradicted facts with their contradicted_by
	// links and its reasons for what concerns the whole task.
	log.Info().Str("doc_id", doc.DocID).Int("new", ap.New).Int("updated", ap.Updated).Int("contradicted", ap.Contradicted).
		Int("unsupported", ap.Unsupported).Int("merged", ap.Merged).Int("moved", len(ap.Moved)).Strs("dropped", ap.Reasons).
		Strs("notes", ap.Notes).Int("facts", len(cp.Facts.List)).Msg("document read")
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// passageFact keeps, without a language model, the passages of doc that
// answer the sub-question best (research.PassageFinder: sentences of its
// blocks, never a heading), each as a fact citing its block and carrying
// the note's time when the index knows it.
func (iv *investigator) passageFact(ctx context.Context, task *schemas.ResearchTask, cp *checkpoint, doc research.Document) {
	questions := append([]string{task.Question, task.Original}, research.TranslatedQuestions(cp.Reasons)...)
	pf := research.NewPassageFinder(iv.d.Analyzer, cp.Docs, questions...)
	updated := doc.Updated
	if updated == "" {
		updated = iv.docTime(ctx, doc.DocID)
	}
	for _, p := range pf.Passages(doc, passagesPerDoc) {
		if cp.Facts.Next == 0 {
			cp.Facts.Next = 1
		}
		f := p.Fact(fmt.Sprintf("f%d", cp.Facts.Next))
		f.Updated = updated
		cp.Facts.Next++
		cp.Facts.List = append(cp.Facts.List, f)
	}
}

// bestPassages are the passages of doc that answer the sub-question best
// (sentences, never a heading; at most passagesPerDoc, as an evidence_only
// task keeps), as facts with their citations and the note's time: the
// evidence a synthesis task keeps in case the synthesis fails. Their ids
// go on from e<have+1>. More than one: a note often answers a question
// that asks two things (a launch date and a budget) in two blocks, and a
// disagreement with another note is found only when both are kept.
func (iv *investigator) bestPassages(ctx context.Context, task *schemas.ResearchTask, cp *checkpoint, doc research.Document, have int) []schemas.Fact {
	questions := append([]string{task.Question, task.Original}, research.TranslatedQuestions(cp.Reasons)...)
	ps := research.NewPassageFinder(iv.d.Analyzer, cp.Docs, questions...).Passages(doc, passagesPerDoc)
	if len(ps) == 0 {
		return nil
	}
	updated := doc.Updated
	if updated == "" {
		updated = iv.docTime(ctx, doc.DocID)
	}
	out := make([]schemas.Fact, 0, len(ps))
	for i, p := range ps {
		f := p.Fact(fmt.Sprintf("e%d", have+i+1))
		f.Updated = updated
		out = append(out, f)
	}
	return out
}

// passagesPerDoc is how many passages an evidence_only task keeps of a document.
const passagesPerDoc = 2

// docTime is the document's own time (its source's update time) in RFC
// 3339, when the document reader knows it (*store.Store); "" otherwise.
func (iv *investigator) docTime(ctx context.Context, docID string) string {
	dr, ok := iv.d.Docs.(interface {
		Document(ctx context.Context, docID string) (*store.Document, error)
	})
	if !ok {
		return ""
	}
	d, err := dr.Document(ctx, docID)
	if err != nil || d.Version <= 0 {
		return ""
	}
	return time.Unix(0, d.Version).UTC().Format(time.RFC3339)
}

// retrieve finds the task's documents.
func (iv *investigator) retrieve(ctx context.Context, task *schemas.ResearchTask) ([]research.Document, []string, error) {
	n := iv.cfg.DocsPerTask
	if task.Budget.DocsPerTask > 0 {
		n = task.Budget.DocsPerTask
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: keyUnsafe.ReplaceAllString(task.ResearchID+"-"+task.TaskID, "_"), Question: task.Question,
		Lang: task.Lang, Options: schemas.QueryOptions{K: 3 * n, IncludeReports: task.IncludeReports,
			Scope: task.Scope}}}
	rq, err := iv.d.Retriever.Retrieve(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("investigate %s/%s: retrieve: %w", task.ResearchID, task.TaskID, err)
	}
	rr, err := iv.d.Retriever.Rerank(ctx, rq)
	if err != nil {
		return nil, nil, fmt.Errorf("investigate %s/%s: rerank: %w", task.ResearchID, task.TaskID, err)
	}
	docs := research.GroupDocuments(rr.Contexts, n)
	if iv.d.Docs != nil {
		for i := range docs {
			if err := iv.whole(ctx, &docs[i]); err != nil {
				return nil, nil, fmt.Errorf("investigate %s/%s: read document %s: %w", task.ResearchID, task.TaskID, docs[i].DocID, err)
			}
		}
	}
	if dt, ok := iv.d.Docs.(DocTimer); ok && len(docs) > 0 {
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.DocID
		}
		times, err := dt.DocTimes(ctx, ids)
		if err != nil {
			// Undated facts still count; only which side is newer is lost.
			zerolog.Ctx(ctx).Warn().Err(err).Msg("document times unreadable; facts are not dated")
		}
		for i := range docs {
			if t, ok := times[docs[i].DocID]; ok {
				docs[i].Updated = t.UTC().Format(time.RFC3339)
			}
		}
	}
	var reasons []string
	for _, r := range rr.Reasons {
		reasons = append(reasons, "retrieval: "+r)
	}
	return docs, reasons, nil
}

// whole gives doc the rest of its chunks, in order, while they fit in
// DocChars with the retrieved ones.
func (iv *investigator) whole(ctx context.Context, doc *research.Document) error {
	ids, err := iv.d.Docs.DocChunkIDs(ctx, doc.DocID)
	if err != nil || len(ids) <= len(doc.Contexts) {
		return err
	}
	have := map[string]schemas.Context{}
	size := 0
	for _, c := range doc.Contexts {
		have[c.ChunkID] = c
		size += len(c.Text)
	}
	var missing []string
	for _, id := range ids {
		if _, ok := have[id]; !ok {
			missing = append(missing, id)
		}
	}
	hits, err := iv.d.Docs.Passages(ctx, missing)
	if err != nil {
		return err
	}
	for _, h := range hits {
		if size+len(h.Text) > iv.cfg.DocChars {
			continue
		}
		size += len(h.Text)
		have[h.ChunkID] = schemas.Context{Passage: schemas.Passage{ChunkID: h.ChunkID, DocID: h.DocID, Title: h.Title, Path: h.Path,
			SectionPath: h.SectionPath, BlockID: h.BlockID, BlockIDs: h.BlockIDs, BlockSpans: h.BlockSpans, Lang: h.Lang, Text: h.Text},
			Source: "document"}
	}
	out := make([]schemas.Context, 0, len(have))
	for _, id := range ids {
		if c, ok := have[id]; ok {
			out = append(out, c)
		}
	}
	doc.Contexts = out
	return nil
}

func (iv *investigator) finding(task *schemas.ResearchTask, cp *checkpoint, status string) *schemas.ResearchFinding {
	f := &schemas.ResearchFinding{ResearchID: task.ResearchID, TaskID: task.TaskID, Index: task.Index, Of: task.Of,
		Question: task.Question, Status: status, Facts: append([]schemas.Fact{}, cp.Facts.List...), Dropped: cp.Facts.Dropped,
		LLMCalls: cp.LLMCalls, Reasons: cp.Reasons, Original: task.Original, Lang: task.Lang, Mode: task.Mode,
		Evidence: cp.Evidence, PlanCalls: task.PlanCalls, Gap: task.Gap, Budget: task.Budget, Deadline: task.Deadline}
	f.Envelope.TraceID = task.TraceID
	for _, d := range cp.Docs[:cp.DocsDone] {
		f.DocsRead = append(f.DocsRead, d.DocID)
	}
	f.Summary, f.Citations = research.Summary(f.Facts, iv.cfg.SummaryFacts)
	return f
}

func (iv *investigator) progress(task *schemas.ResearchTask, p *schemas.ResearchProgress) {
	if iv.d.Progress != nil {
		p.Envelope.TraceID = task.TraceID
		iv.d.Progress(p)
	}
}

func (iv *investigator) load(ctx context.Context, key string) (*checkpoint, error) {
	raw, err := iv.d.State.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("load research checkpoint %s: %w", key, err)
	}
	cp := &checkpoint{}
	if raw == nil {
		return cp, nil
	}
	if err := json.Unmarshal(raw, cp); err != nil {
		return nil, bus.Permanent(fmt.Errorf("research checkpoint %s is not JSON: %w", key, err))
	}
	if cp.DocsDone > len(cp.Docs) {
		cp.DocsDone = len(cp.Docs)
	}
	return cp, nil
}

func (iv *investigator) save(ctx context.Context, key string, cp *checkpoint) error {
	raw, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encode research checkpoint %s: %w", key, err)
	}
	if err := iv.d.State.Put(ctx, key, raw); err != nil {
		return fmt.Errorf("save research checkpoint %s: %w", key, err)
	}
	return nil
}
