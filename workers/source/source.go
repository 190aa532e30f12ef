// Package source is the one interface every source of notes implements
// (the folder source in workers/watch, the SiYuan bridge in
// workers/siyuan, any new one): what it holds now, what it remembers
// sending (its entries in KB_SOURCES), the resends and deletions a repair
// asks of it, and its state for status and metrics. exocortex check and
// repair (internal/maintenance), status and metrics work through it and
// name no source.
//
// A source declares itself as a role (workers/stage.Declaration with Kind
// KindSource) whose Source field opens this interface; adding a source is
// its own folder and one line in workers/registry. The package imports
// only bus and schemas; nothing of the application's workers.
package source

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// Source is one source of notes as check, repair, status and metrics see
// it. It is opened for one check (or one status) with the system's parts:
// the source state, a publisher and the bus (see stage.Declaration.Source).
type Source interface {
	// Name is the source's role name ("files", "siyuan").
	Name() string
	// Sent lists the documents the source remembers sending and has not
	// deleted (its source state).
	Sent(ctx context.Context) ([]Doc, error)
	// Held reads what the source holds now, within scope, and says of
	// each document sent whether it is still held.
	Held(ctx context.Context, scope Scope) (*Holding, error)
	// Claim says whether a document only the index holds (no source
	// remembers sending it) is this source's, and how a report names it.
	// d has the index's ID, Kind, Path and Title.
	Claim(d Doc) (where string, ok bool)
	// Look looks for a document of this source that Held did not report
	// on (one only the index holds): nil when it is gone; an error when it
	// could not be read (it is then never taken for gone).
	Look(ctx context.Context, d Doc) (*Doc, error)
	// Resend sends docs again through the source's normal path: with
	// force, marked Force at a version above each Doc.Floor, so that the
	// stages redo them in full. tick is called once per document sent.
	Resend(ctx context.Context, docs []Doc, force bool, tick func()) (Resent, error)
	// Remove sends the deletion of docs whose source is gone (the normal
	// deletion path) and forgets them; forget are the roots Held found
	// gone for good (Holding.Forget), forgotten too.
	Remove(ctx context.Context, docs []Doc, forget []string, tick func()) (int, error)
	// Status is the source's state as its running role last reported it
	// (nil when it never ran here), for status and metrics.
	Status(ctx context.Context) (*Status, error)
}

// Doc is one document as a source knows it.
type Doc struct {
	ID string
	// Kind is its schemas.Source* value ("markdown", "siyuan"); "" when
	// the source does not say.
	Kind string
	// Where names it in a report: its path, or "siyuan <id> <notebook/hpath>".
	Where string
	// Path is the path it was sent with; Title its title (from the index).
	Path  string
	Title string
	// Hash is its content's hash (as sent, or as held now: "" when the
	// source compares versions itself, see Drift); Version the version sent.
	Hash    string
	Version int64
	// Drift is how the source says it differs from what was sent ("" when
	// it does not, or when Hash tells); Held sets it.
	Drift string
	// Group is what a resend reads it from (the folder walked), "" for
	// the document alone.
	Group string
	// Sent: the source remembers sending it (Sent listed it).
	Sent bool
	// Floor is the newest version the stages hold of it: a repair's
	// resend or deletion goes above it.
	Floor int64
}

// Scope is what a check compares.
type Scope struct {
	// Explicit: the person named what to compare (Paths, or a source's
	// configuration in Config); only that is compared.
	Explicit bool
	// Paths are the folders and files named (canonical); Forget folders
	// removed for good.
	Paths  []string
	Forget []string
	// Config are the sources' configurations for this check (a kernel to
	// compare...); a source finds its own by type.
	Config []any
	// Sent is what Sent returned.
	Sent []Doc
	// Progress, when set, is told how many documents were read.
	Progress func(done int)
}

// Holding is what a source holds now, as Held read it.
type Holding struct {
	// Docs are the documents it holds now.
	Docs []Doc
	// Gone are ids of sent documents looked for and not held; Unread those
	// that could not be read (never taken for gone).
	Gone   []string
	Unread []string
	// Compared is false when the source was not read at all (no kernel to
	// compare): what it sent is then checked against the index only.
	Compared bool
	// InScope says whether a document at path is among what is compared
	// (nil: every one).
	InScope func(path string) bool
	// Problems are differences of the source itself (a folder missing).
	Problems []Problem
	// Notes are what was not compared, and why.
	Notes []string
	// Roots are the folders and files compared; Address the service
	// compared (a kernel's URL); both shown in the report.
	Roots   []string
	Address string
	// Forget are roots gone for good: a repair forgets them (Remove).
	Forget []string
	// GoneText says a document is gone ("file is gone").
	GoneText string
}

// Problem is a difference a source found in itself; it needs a person.
type Problem struct {
	Where  string
	Detail string
}

// Resent is what Resend did.
type Resent struct {
	Sent int
	// Deleted are documents found gone on the way, their deletions sent.
	Deleted []string
	// Missed are documents not found again where they were.
	Missed int
}

// Status is a source's state for status and metrics.
type Status struct {
	// Key is its field in status --json ("siyuan", "watch"); Value the
	// state itself as its role reported it.
	Key   string
	Value any
	// Lines are what status prints of it.
	Lines []string
}

// Deletion is the event that deletes d (the normal deletion path: the
// chunk stage tombstones its chunks, the index drops it), at a version
// above d.Floor (of Kind markdown when d has none).
func Deletion(d Doc) *schemas.DocChanged {
	kind := d.Kind
	if kind == "" {
		kind = schemas.SourceMarkdown
	}
	return &schemas.DocChanged{DocID: d.ID, Source: kind, Path: d.Path, Hash: d.Hash,
		Version: max(time.Now().UnixNano(), d.Floor+1), Deleted: true}
}
