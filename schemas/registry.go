package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Subjects of the public events.
const (
	SubjectDocChanged   = "kb.doc.changed"
	SubjectDocStructure = "kb.doc.structure"
	SubjectChunkCreated = "kb.chunk.created"
	SubjectEmbedDone    = "kb.embed.done"
	SubjectEmbedRequest = "kb.embed.request"
	SubjectQuery        = "kb.query.submitted"
	SubjectRetrieved    = "kb.query.retrieved"
	SubjectReranked     = "kb.query.reranked"
	SubjectAnswerDone   = "kb.answer.done"
	// SubjectAnswerFollowUps carries an answer's follow-up questions, after
	// its kb.answer.done.
	SubjectAnswerFollowUps = "kb.answer.followups"
	// SubjectDLQPrefix + stage is where the bus copies poison messages.
	SubjectDLQPrefix = "kb.dlq."
)

// Spec describes one registered event type.
type Spec struct {
	Type        string
	Subject     string
	Description string
	// New returns a pointer to a zero event of this type.
	New func() Event
	// SupersededBy names the newer version of an older type that is still
	// decoded (into the same Go struct, see New) but no longer emitted:
	// Stamp gives that struct the newer type. Empty for a current type.
	SupersededBy string
	// Lacks lists the JSON properties (dotted paths, "options.literal")
	// of the Go struct that this older version does not have: its JSON
	// Schema leaves them out (and its Validate refuses them).
	Lacks []string
}

var (
	registry = map[string]Spec{}
	byGoType = map[reflect.Type]Spec{}
)

func register(s Spec) {
	if _, dup := registry[s.Type]; dup {
		panic("schemas: type registered twice: " + s.Type)
	}
	registry[s.Type] = s
	if s.SupersededBy == "" {
		byGoType[reflect.TypeOf(s.New())] = s
	}
}

func init() {
	register(Spec{Type: TypeDocChangedV1, Subject: SubjectDocChanged,
		Description: "A source document's blocks, or its deletion.",
		New:         func() Event { return new(DocChanged) }})
	register(Spec{Type: TypeChunkCreatedV1, Subject: SubjectChunkCreated,
		Description: "One chunk of a document with its section path, language, hash and block ids, or a tombstone.",
		New:         func() Event { return new(ChunkCreated) }})
	register(Spec{Type: TypeDocStructureV1, Subject: SubjectDocStructure,
		Description: "A document's metadata, chunk list and block skeleton (graph), or its deletion.",
		New:         func() Event { return new(DocStructure) }})
	register(Spec{Type: TypeEmbedDoneV1, Subject: SubjectEmbedDone,
		Description: "Vectors of chunks, each tied to the content hash it was computed from.",
		New:         func() Event { return new(EmbedDone) }})
	register(Spec{Type: TypeEmbedRequestV1, Subject: SubjectEmbedRequest,
		Description: "A chunk the index holds without a vector, to embed again (backfill).",
		New:         func() Event { return new(EmbedRequest) }})
	// v1 is still read, as it was (its question is searched as it is); v2
	// adds options.literal, and without it the retrieve stage reads the
	// question's scope operators and date phrases (see QueryOptions.Literal).
	register(Spec{Type: TypeQuerySubmittedV1, Subject: SubjectQuery, SupersededBy: TypeQuerySubmittedV2,
		Description: "A question from a client: text, language, chat history and retrieval options (superseded by kb.query.submitted.v2, still read: its question is searched as it is).",
		New:         func() Event { return new(QuerySubmitted) }, Lacks: []string{"options.literal"}})
	register(Spec{Type: TypeQuerySubmittedV2, Subject: SubjectQuery,
		Description: "A question from a client: text, language, chat history and retrieval options with its scope; without options.literal the retrieve stage reads the question's scope operators and date phrases.",
		New:         func() Event { return new(QuerySubmitted) }})
	register(Spec{Type: TypeQueryRetrievedV1, Subject: SubjectRetrieved,
		Description: "Fused retrieval candidates with each retriever's rank and score.",
		New:         func() Event { return new(QueryRetrieved) }})
	register(Spec{Type: TypeQueryRerankedV1, Subject: SubjectReranked,
		Description: "Final contexts for the answer: reranked passages plus graph neighbours.",
		New:         func() Event { return new(QueryReranked) }})
	register(Spec{Type: TypeAnswerDoneV1, Subject: SubjectAnswerDone,
		Description: "A finished answer: mode, text, verified citations, confidence, reasons, timings.",
		New:         func() Event { return new(AnswerDone) }})
	register(Spec{Type: TypeAnswerFollowUpsV1, Subject: SubjectAnswerFollowUps,
		Description: "An answer's follow-up questions, sent after its kb.answer.done so they never delay it.",
		New:         func() Event { return new(AnswerFollowUps) }})
	register(Spec{Type: TypeResearchRequestedV1, Subject: SubjectResearchRequested, SupersededBy: TypeResearchRequestedV2,
		Description: "A broad question to research over the notes, with its budget (superseded by kb.research.requested.v2, still read).",
		New:         func() Event { return new(ResearchRequested) }})
	register(Spec{Type: TypeResearchRequestedV2, Subject: SubjectResearchRequested,
		Description: "A broad question to research over the notes, with its budget and scope.",
		New:         func() Event { return new(ResearchRequested) }})
	register(Spec{Type: TypeResearchTaskV1, Subject: SubjectResearchTask,
		Description: "One planned sub-question of a research, for an investigate worker.",
		New:         func() Event { return new(ResearchTask) }})
	register(Spec{Type: TypeResearchFindingV1, Subject: SubjectResearchFinding,
		Description: "What one sub-question found: verified facts, a cited summary, the documents read.",
		New:         func() Event { return new(ResearchFinding) }})
	register(Spec{Type: TypeResearchDraftV1, Subject: SubjectResearchDraft,
		Description: "The supervisor's draft report, written from every finding.",
		New:         func() Event { return new(ResearchDraft) }})
	register(Spec{Type: TypeResearchReportV1, Subject: SubjectResearchReport,
		Description: "The final research report: structured, as Markdown, every statement cited to a verified block.",
		New:         func() Event { return new(ResearchReport) }})
	register(Spec{Type: TypeResearchProgressV1, Subject: SubjectResearchProgressPrefix + "*",
		Description: "A step of a research (core NATS, not a stream): plan ready, documents read, facts kept, draft, report.",
		New:         func() Event { return new(ResearchProgress) }})
	register(Spec{Type: TypeQueryCancelV1, Subject: SubjectQueryCancelPrefix + "*",
		Description: "A client's cancellation of its query (core NATS, not a stream): the answer stage stops and finishes at once.",
		New:         func() Event { return new(QueryCancel) }})
	// Tokens go to kb.answer.tokens.<query_id>; the registry names the prefix.
	register(Spec{Type: TypeAnswerTokenV1, Subject: SubjectAnswerTokensPrefix + "*",
		Description: "One streamed piece of an answer (core NATS, not a stream), with a sequence number; the last is final.",
		New:         func() Event { return new(AnswerToken) }})
}

// Lookup returns the spec of a registered type.
func Lookup(typ string) (Spec, bool) {
	s, ok := registry[typ]
	return s, ok
}

// Specs lists every registered type, sorted by type.
func Specs() []Spec {
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// Errors returned by Decode; match them with errors.Is.
var (
	ErrMalformed   = errors.New("malformed event")
	ErrUnknownType = errors.New("unknown event type")
	ErrInvalid     = errors.New("invalid event")
)

type validator interface{ Validate() error }

// Decode parses an event of any registered type. Unknown fields are rejected,
// so a typo in a producer surfaces as an error instead of a silently empty field.
func Decode(data []byte) (Event, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if head.Type == "" {
		return nil, fmt.Errorf("%w: no \"type\" field", ErrMalformed)
	}
	spec, ok := registry[head.Type]
	if !ok {
		return nil, unknownType(head.Type)
	}
	ev := spec.New()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ev); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, head.Type, err)
	}
	if v, ok := ev.(validator); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, head.Type, err)
		}
	}
	return ev, nil
}

// unknownType is the error of a type this build does not read. A newer
// version of a known type (kb.query.submitted.v3 where v1 and v2 are
// read) says so and what to do: the producer is newer than this worker.
func unknownType(typ string) error {
	family, version, ok := cutVersion(typ)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	var known []string
	newest := 0
	for t := range registry {
		if f, v, ok := cutVersion(t); ok && f == family {
			known = append(known, t)
			newest = max(newest, v)
		}
	}
	if len(known) == 0 || version < newest {
		return fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	sort.Strings(known)
	return fmt.Errorf("%w: %q is newer than this worker, which reads %s: upgrade the workers (before the doors that publish it)",
		ErrUnknownType, typ, strings.Join(known, ", "))
}

// cutVersion splits "kb.query.submitted.v2" into its family and version.
func cutVersion(typ string) (family string, version int, ok bool) {
	i := strings.LastIndex(typ, ".v")
	if i < 0 {
		return "", 0, false
	}
	v, err := strconv.Atoi(typ[i+2:])
	if err != nil || v < 1 {
		return "", 0, false
	}
	return typ[:i], v, true
}

// DecodeAs decodes data and checks that it is of the type T.
func DecodeAs[T Event](data []byte) (T, error) {
	var zero T
	ev, err := Decode(data)
	if err != nil {
		return zero, err
	}
	t, ok := ev.(T)
	if !ok {
		return zero, fmt.Errorf("%w: got %s, want %s", ErrUnknownType, ev.Env().Type, reflect.TypeOf(zero).Elem().Name())
	}
	return t, nil
}

// Stamp fills the envelope of ev: its registered type, id (the message id),
// time (now, unless already set) and trace id. It returns the subject to
// publish on. It panics for an unregistered Go type: that is a programming error.
func Stamp(ev Event, traceID string) string {
	spec := specOf(ev)
	env := ev.Env()
	env.Type = spec.Type
	env.ID = ev.MsgID()
	if env.Time.IsZero() {
		env.Time = time.Now().UTC()
	}
	if env.TraceID == "" {
		env.TraceID = traceID
	}
	if sub, ok := ev.(subjecter); ok {
		return sub.Subject()
	}
	return spec.Subject
}

// subjecter is an event whose subject depends on its content (an answer's
// tokens go to kb.answer.tokens.<query_id>).
type subjecter interface{ Subject() string }

func specOf(ev Event) Spec {
	s, ok := byGoType[reflect.TypeOf(ev)]
	if !ok {
		panic(fmt.Sprintf("schemas: %T is not a registered event", ev))
	}
	return s
}
