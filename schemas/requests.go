package schemas

// Requests answered over core NATS request-reply (not streams): a door (the
// HTTP gateway) asks the process that holds the data directory for what
// only that machine has, the index and its files. Every process with the
// index open answers kb.store.block.get and kb.store.document.get (one of
// them per request: a queue group); the process with the index open for
// writing answers kb.files.ingest, reading the paths on its own machine.
// Nobody answering means no such process runs (see bus.ErrNoResponders).
const (
	SubjectBlockGet    = "kb.store.block.get"
	SubjectDocumentGet = "kb.store.document.get"
	SubjectIngest      = "kb.files.ingest"
)

// Types of the requests and of their replies.
const (
	TypeBlockGetV1        = "kb.store.block.get.v1"
	TypeBlockReplyV1      = "kb.store.block.reply.v1"
	TypeDocumentGetV1     = "kb.store.document.get.v1"
	TypeDocumentReplyV1   = "kb.store.document.reply.v1"
	TypeIngestRequestV1   = "kb.files.ingest.v1"
	TypeIngestReplyV1     = "kb.files.ingest.reply.v1"
	replySubjectOfRequest = "the request's reply inbox"
)

// ReplyError is why a request failed: a code the door maps to its own
// status (bad_request, not_found, unavailable, internal) and a message to
// act on.
type ReplyError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *ReplyError) Error() string { return e.Code + ": " + e.Message }

// Codes of a ReplyError.
const (
	ReplyBadRequest = "bad_request"
	ReplyInternal   = "internal"
)

// BlockGet asks the index for one block with its graph neighbours; an
// empty BlockID only checks that the index answers.
type BlockGet struct {
	Envelope
	BlockID string `json:"block_id"`
}

// MsgID is "block-get:<block_id>".
func (e *BlockGet) MsgID() string { return "block-get:" + e.BlockID }

// BlockReply answers a BlockGet: the block (absent when the index has no
// such block) or the error.
type BlockReply struct {
	Envelope
	Block *StoredBlock `json:"block,omitempty"`
	Error *ReplyError  `json:"error,omitempty"`
}

// MsgID is "block-reply:<block_id>".
func (e *BlockReply) MsgID() string {
	if e.Block == nil {
		return "block-reply:"
	}
	return "block-reply:" + e.Block.BlockID
}

// StoredBlock is an indexed block with its place in the notes: Path is its
// document's (the file, or SiYuan's notebook/hpath).
type StoredBlock struct {
	BlockID     string           `json:"block_id"`
	DocID       string           `json:"doc_id"`
	Title       string           `json:"title"`
	SectionPath []string         `json:"section_path,omitempty"`
	Type        string           `json:"type,omitempty"`
	Text        string           `json:"text"`
	Path        string           `json:"path,omitempty"`
	Neighbors   []StoredNeighbor `json:"neighbors,omitempty"`
}

// StoredNeighbor is a block linked to another in the graph (Kind: parent,
// child, sibling, prev, next, ref), its text shortened.
type StoredNeighbor struct {
	BlockID string `json:"block_id"`
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
}

// DocumentGet asks the index for a whole document, its blocks in order.
type DocumentGet struct {
	Envelope
	DocID string `json:"doc_id"`
}

// MsgID is "document-get:<doc_id>".
func (e *DocumentGet) MsgID() string { return "document-get:" + e.DocID }

// DocumentReply answers a DocumentGet: the document (absent when the index
// has no such document) or the error.
type DocumentReply struct {
	Envelope
	Document *StoredDocument `json:"document,omitempty"`
	Error    *ReplyError     `json:"error,omitempty"`
}

// MsgID is "document-reply:<doc_id>".
func (e *DocumentReply) MsgID() string {
	if e.Document == nil {
		return "document-reply:"
	}
	return "document-reply:" + e.Document.DocID
}

// StoredDocument is an indexed note: its metadata and every block in
// document order.
type StoredDocument struct {
	DocID     string           `json:"doc_id"`
	Title     string           `json:"title"`
	Source    string           `json:"source"`
	Path      string           `json:"path"`
	Notebook  string           `json:"notebook,omitempty"`
	TitlePath []string         `json:"title_path,omitempty"`
	UpdatedAt string           `json:"updated_at,omitempty"`
	Blocks    []StoredDocBlock `json:"blocks"`
}

// StoredDocBlock is one block of a StoredDocument.
type StoredDocBlock struct {
	BlockID     string   `json:"block_id"`
	Type        string   `json:"type,omitempty"`
	ParentID    string   `json:"parent_id,omitempty"`
	Text        string   `json:"text,omitempty"`
	Lang        string   `json:"lang,omitempty"`
	SectionPath []string `json:"section_path,omitempty"`
}

// IngestRequest asks the process that holds the data directory to read
// files or folders on its machine and put their documents on the bus (as
// `exocortex ingest` does).
type IngestRequest struct {
	Envelope
	Paths []string `json:"paths"`
	Force bool     `json:"force,omitempty"`
}

// MsgID is "ingest:<trace_id>".
func (e *IngestRequest) MsgID() string { return "ingest:" + e.TraceID }

// IngestReply answers an IngestRequest once the documents are on the bus.
type IngestReply struct {
	Envelope
	Files      IngestStats       `json:"files"`
	FileErrors []IngestFileError `json:"file_errors,omitempty"`
	Error      *ReplyError       `json:"error,omitempty"`
}

// MsgID is "ingest-reply:<trace_id>".
func (e *IngestReply) MsgID() string { return "ingest-reply:" + e.TraceID }

// IngestStats counts what an ingest did (the files source's SyncStats).
type IngestStats struct {
	Seen      int `json:"seen"`
	Sent      int `json:"sent"`
	Unchanged int `json:"unchanged"`
	Deleted   int `json:"deleted"`
	Failed    int `json:"failed"`
	// Warned counts files read with a repair (not UTF-8: transcoded from
	// Windows-1251 or invalid bytes replaced; front matter that is not valid
	// YAML: kept as text, without properties); they are sent all the same.
	Warned int `json:"warned"`
}

// IngestFileError is a file that could not be read or parsed (it was
// skipped), or a warning about one read with a repair. Err is the reason
// without the path.
type IngestFileError struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

func init() {
	register(Spec{Type: TypeBlockGetV1, Subject: SubjectBlockGet,
		Description: "A door's request (core NATS request-reply) for an indexed block and its graph neighbours, answered by a process with the index open.",
		New:         func() Event { return new(BlockGet) }})
	register(Spec{Type: TypeBlockReplyV1, Subject: replySubjectOfRequest,
		Description: "The reply to kb.store.block.get: the block, none when the index has no such block, or the error.",
		New:         func() Event { return new(BlockReply) }})
	register(Spec{Type: TypeDocumentGetV1, Subject: SubjectDocumentGet,
		Description: "A door's request (core NATS request-reply) for a whole indexed document, answered by a process with the index open.",
		New:         func() Event { return new(DocumentGet) }})
	register(Spec{Type: TypeDocumentReplyV1, Subject: replySubjectOfRequest,
		Description: "The reply to kb.store.document.get: the document with its blocks in order, none when the index has no such document, or the error.",
		New:         func() Event { return new(DocumentReply) }})
	register(Spec{Type: TypeIngestRequestV1, Subject: SubjectIngest,
		Description: "A door's request (core NATS request-reply) to ingest files or folders on the machine of the process that writes the index.",
		New:         func() Event { return new(IngestRequest) }})
	register(Spec{Type: TypeIngestReplyV1, Subject: replySubjectOfRequest,
		Description: "The reply to kb.files.ingest once the documents are on the bus: what was seen, sent, unchanged, deleted, failed, and the files skipped.",
		New:         func() Event { return new(IngestReply) }})
}
