package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// The note view: GET /notes/{doc_id} is a whole indexed document as an
// HTML page, every block an element whose id is the block id, so that
// /notes/{doc_id}#{block_id} opens the note at the cited block and
// highlights it (CSS :target; ?block={block_id} highlights it too). With
// Accept: application/json the same route answers the Document.
//
// The page holds note text, so it is not public: when the gateway has a
// token, the request carries it (Authorization: Bearer) or a signed link's
// ?t= (GET /v1/notes/{doc_id}/link makes one, valid for NoteLinkTTL), as a
// browser following a link cannot send the header. The note view checks
// this itself (noteViewChecksItsOwnToken).

// NoteLinkTTL is how long a signed note link (?t=) opens its note.
const NoteLinkTTL = 15 * time.Minute

// Document is an indexed note: its metadata and every block in document
// order (GET /notes/{doc_id} with Accept: application/json).
type Document struct {
	DocID string `json:"doc_id"`
	Title string `json:"title"`
	// Source is markdown or siyuan.
	Source string `json:"source"`
	// Path is the Markdown file, or SiYuan's notebook/hpath.
	Path     string `json:"path"`
	Notebook string `json:"notebook,omitempty"`
	// TitlePath is the chain of titles down to the document (SiYuan).
	TitlePath []string `json:"title_path,omitempty"`
	// Link opens the document in SiYuan (siyuan://blocks/<doc_id>); empty
	// for a Markdown note (browsers refuse file:// links from a page).
	Link      string     `json:"link,omitempty"`
	UpdatedAt string     `json:"updated_at,omitempty"`
	Blocks    []DocBlock `json:"blocks"`
}

// DocBlock is one block of a Document.
type DocBlock struct {
	ID       string `json:"id"`
	Type     string `json:"type,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	// Text is the block's own Markdown-ish text ("## Heading", "- item");
	// empty for a container, whose children carry the text.
	Text        string   `json:"text,omitempty"`
	Lang        string   `json:"lang,omitempty"`
	SectionPath []string `json:"section_path,omitempty"`
	// Link opens the block in SiYuan; empty for a Markdown note's block.
	Link string `json:"link,omitempty"`
}

// DocumentReader is a Backend that can read a whole indexed document; the
// note view needs it (a Backend without it answers 503 there).
type DocumentReader interface {
	// Document returns the document with its blocks in order (nil, nil
	// when the index has no such document).
	Document(ctx context.Context, docID string) (*Document, error)
}

// NoteLink is what GET /v1/notes/{doc_id}/link answers: the note view's
// URL (relative to the gateway), signed when the gateway has a token.
type NoteLink struct {
	URL string `json:"url"`
	// ExpiresAt is when a signed URL stops opening the note; absent when
	// the gateway has no token and the URL needs none.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Document asks the index (kb.store.document.get) for the document and its
// blocks.
func (bb *BusBackend) Document(ctx context.Context, docID string) (*Document, error) {
	rep, err := bus.Request[*schemas.DocumentReply](ctx, bb.Bus, &schemas.DocumentGet{DocID: docID}, NewID("document"))
	if err != nil {
		return nil, bb.indexError(err)
	}
	if err := replyErr(rep.Error); err != nil || rep.Document == nil {
		return nil, err
	}
	return ViewDocument(rep.Document), nil
}

// ViewDocument is the Document of an indexed document, with SiYuan links
// for a SiYuan note and its blocks.
func ViewDocument(d *schemas.StoredDocument) *Document {
	out := &Document{DocID: d.DocID, Title: d.Title, Source: d.Source, Path: d.Path, Notebook: d.Notebook,
		TitlePath: d.TitlePath, UpdatedAt: d.UpdatedAt, Blocks: make([]DocBlock, 0, len(d.Blocks))}
	siyuan := d.Source == schemas.SourceSiYuan
	if siyuan {
		out.Link = siyuanLink(d.DocID)
	}
	for _, b := range d.Blocks {
		db := DocBlock{ID: b.BlockID, Type: b.Type, ParentID: b.ParentID, Text: b.Text, Lang: b.Lang, SectionPath: b.SectionPath}
		if siyuan {
			db.Link = siyuanLink(b.BlockID)
		}
		out.Blocks = append(out.Blocks, db)
	}
	return out
}

// siyuanLink is siyuan://blocks/<id> for a SiYuan id, else "".
func siyuanLink(id string) string {
	if l := answer.Link(id, ""); strings.HasPrefix(l, "siyuan://") {
		return l
	}
	return ""
}

// NotePath is the note view's path of a document: /notes/<doc_id>, the id
// escaped. Add "#" and the escaped block id to open it at a block.
func NotePath(docID string) string { return "/notes/" + url.PathEscape(docID) }

func (s *Server) notesRoutes() {
	s.handle("GET /notes/{doc_id}", s.noteView, true)
	s.handle("GET /v1/notes/{doc_id}/link", s.noteLink, true)
}

func init() {
	apiOps["GET /notes/{doc_id}"] = op{summary: "The note view: the whole document as an HTML page, each block an element with id=<block_id>, " +
		"so /notes/{doc_id}#{block_id} opens it at the cited block, highlighted (?block={block_id} highlights one too; ?lang=ru|en, " +
		"else Accept-Language). Accept: application/json answers the Document instead. With a token: Authorization: Bearer, or the ?t= " +
		"of a signed link (GET /v1/notes/{doc_id}/link). 404 when the document is not in the index.", resp: "html"}
	apiOps["GET /v1/notes/{doc_id}/link"] = op{summary: "A link to the note view that opens without the Authorization header " +
		"(a browser following a link cannot send it): signed for 15 minutes when the gateway has a token; ?block={block_id} adds the fragment.",
		resp: "NoteLink"}
	bodyTypes["NoteLink"] = reflect.TypeFor[NoteLink]()
	bodyTypes["Document"] = reflect.TypeFor[Document]()
	enums["Document"] = map[string][]string{"source": {schemas.SourceMarkdown, schemas.SourceSiYuan}}
}

// noteViewChecksItsOwnToken tells the access check to leave r to the note
// view, which checks the token itself (a bearer header or a signed link):
// a GET or HEAD of /notes/<one clean segment>, which only the note view
// serves.
func noteViewChecksItsOwnToken(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/notes/")
	return ok && id != "" && !strings.Contains(id, "/") && path.Clean(r.URL.Path) == r.URL.Path
}

var (
	errNoteLinkExpired = errors.New("the note link has expired")
	errNoteLinkBad     = errors.New("the note link's signature does not match")
)

// noteKey is the key note links are signed with, derived from the token
// (a new token voids the links signed with the old one).
func noteKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("exocortex note link v1"))
	return m.Sum(nil)
}

func noteMAC(token, docID string, exp int64) []byte {
	m := hmac.New(sha256.New, noteKey(token))
	fmt.Fprintf(m, "%s\x00%d", docID, exp)
	return m.Sum(nil)[:18]
}

// SignNoteLink is the ?t= value that opens docID's note view until exp:
// "<unix seconds>.<base64url HMAC-SHA256 of the id and the time>".
func SignNoteLink(token, docID string, exp time.Time) string {
	e := exp.Unix()
	return strconv.FormatInt(e, 10) + "." + base64.RawURLEncoding.EncodeToString(noteMAC(token, docID, e))
}

// checkNoteLink verifies a ?t= value for docID at now.
func checkNoteLink(token, docID, t string, now time.Time) error {
	es, sig, ok := strings.Cut(t, ".")
	e, err := strconv.ParseInt(es, 10, 64)
	if !ok || err != nil {
		return errNoteLinkBad
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, noteMAC(token, docID, e)) {
		return errNoteLinkBad
	}
	if now.Unix() >= e {
		return errNoteLinkExpired
	}
	return nil
}

// bearerIs reports whether an Authorization header carries token (the
// scheme in any case).
func bearerIs(header, token string) bool {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), []byte(token)) == 1
}

// noteAccess checks the token for the note view: nil when the gateway has
// none, the bearer header carries it, or ?t= is a valid link for docID.
func (s *Server) noteAccess(r *http.Request, docID string) error {
	if s.cfg.Token == "" || bearerIs(r.Header.Get("Authorization"), s.cfg.Token) {
		return nil
	}
	t := r.URL.Query().Get("t")
	if t == "" {
		return errors.New("no token")
	}
	return checkNoteLink(s.cfg.Token, docID, t, time.Now())
}

func (s *Server) noteLink(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("doc_id")
	link := NoteLink{URL: NotePath(id)}
	if s.cfg.Token != "" {
		exp := time.Now().Add(NoteLinkTTL).Truncate(time.Second)
		link.URL += "?t=" + SignNoteLink(s.cfg.Token, id, exp)
		link.ExpiresAt = &exp
	}
	if b := r.URL.Query().Get("block"); b != "" {
		link.URL += "#" + url.PathEscape(b)
	}
	writeJSON(w, http.StatusOK, link)
}

// wantsJSON reports whether the client asked for JSON rather than a page.
func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

func (s *Server) noteView(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("doc_id")
	lang := noteLang(r)
	l := noteLabels[lang]
	asJSON := wantsJSON(r)
	fail := func(status int, e *APIError, title, msg string) {
		if asJSON {
			writeError(w, e)
			return
		}
		writeNotePage(w, status, notePage{Lang: lang, L: l, Title: title, Message: msg})
	}
	if err := s.noteAccess(r, id); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="exocortex"`)
		if errors.Is(err, errNoteLinkExpired) {
			fail(http.StatusUnauthorized, apiErr(CodeUnauthorized, fmt.Sprintf("the note link has expired (links are signed for %s): get a new one from GET /v1/notes/{doc_id}/link", NoteLinkTTL)),
				l.TokenTitle, l.Expired)
			return
		}
		fail(http.StatusUnauthorized, apiErr(CodeUnauthorized, "missing or wrong token: send Authorization: Bearer <the gateway's "+EnvToken+">, or open a signed link from GET /v1/notes/{doc_id}/link"),
			l.TokenTitle, l.TokenNeeded)
		return
	}
	dr, ok := s.backend.(DocumentReader)
	if !ok || s.backend == nil {
		fail(http.StatusServiceUnavailable, apiErr(CodeUnavailable, "this gateway's backend cannot read documents, so it has no note view"),
			l.UnavailableTitle, l.Unavailable)
		return
	}
	doc, err := dr.Document(r.Context(), id)
	if err != nil {
		e := classify(err)
		if r.Context().Err() == context.DeadlineExceeded {
			e = apiErr(CodeTimeout, fmt.Sprintf("reading the document took longer than %s: %v", s.cfg.Timeouts.Request, err))
		}
		status, ok := codeStatus[e.Code]
		if !ok {
			status = http.StatusInternalServerError
		}
		zerolog.Ctx(r.Context()).Warn().Err(err).Str("route", r.URL.Path).Str("code", e.Code).Msg("note view failed")
		fail(status, e, l.UnavailableTitle, l.Unavailable+" ("+e.Message+")")
		return
	}
	if doc == nil {
		fail(http.StatusNotFound, apiErr(CodeNotFound, fmt.Sprintf("document %s is not in the index: it was deleted or moved, or is not indexed yet (exocortex ingest its folder, or wait for the SiYuan bridge)", id)),
			l.NotFoundTitle, fmt.Sprintf(l.NotFound, id))
		return
	}
	if asJSON {
		writeJSON(w, http.StatusOK, doc)
		return
	}
	writeNotePage(w, http.StatusOK, renderDocument(doc, lang, r.URL.Query().Get("block")))
}
