package system

import (
	"context"
	"errors"
	"fmt"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// The doors' requests (schemas/requests.go) that only the machine with the
// data directory can answer: a process with the index open answers
// kb.store.block.get and kb.store.document.get from it; the process that
// writes the index also answers kb.files.ingest, reading the paths on its
// machine. A door (the HTTP gateway) then needs no data directory.

// maxNeighbors and neighborText bound a block's neighbours in a reply.
const (
	maxNeighbors = 24
	neighborText = 300
)

// answerRequests starts answering what this process can; the answers stop
// when ctx ends, before the system closes the index (Stop waits for them).
func (s *System) answerRequests(ctx context.Context, writes bool) error {
	if s.Store == nil {
		return nil
	}
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for subject, handle := range map[string]func(ctx context.Context, req schemas.Event) schemas.Event{
		schemas.SubjectBlockGet:    s.answerBlock,
		schemas.SubjectDocumentGet: s.answerDocument,
		schemas.SubjectScopesGet:   s.answerScopes,
	} {
		stop, err := s.Bus.Answer(subject, handle)
		if err != nil {
			stopAll()
			return err
		}
		stops = append(stops, stop)
	}
	if writes {
		state, err := s.Bus.KV(ctx, stage.BucketSources)
		var stop func()
		if err == nil {
			stop, err = files.AnswerIngests(s.Bus, state)
		}
		if err == nil {
			stops = append(stops, stop)
		} else {
			stopAll()
			return fmt.Errorf("answer ingests: %w", err)
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		stopAll()
	}()
	return nil
}

func replyError(err error) *schemas.ReplyError {
	return &schemas.ReplyError{Code: schemas.ReplyInternal, Message: err.Error()}
}

// answerBlock reads a block and its neighbours (shortened) from the index.
func (s *System) answerBlock(ctx context.Context, ev schemas.Event) schemas.Event {
	req, rep := ev.(*schemas.BlockGet), &schemas.BlockReply{}
	if req.BlockID == "" {
		return rep // a check that the index answers
	}
	b, err := s.Store.Block(ctx, req.BlockID)
	if errors.Is(err, store.ErrNotFound) {
		return rep
	}
	if err != nil {
		rep.Error = replyError(err)
		return rep
	}
	out := &schemas.StoredBlock{BlockID: b.BlockID, DocID: b.DocID, Title: b.Title, SectionPath: b.SectionPath, Type: b.Type,
		Text: b.Text, Path: b.Path}
	edges, err := s.Store.Neighbors(ctx, req.BlockID)
	if err != nil {
		rep.Error = replyError(err)
		return rep
	}
	for _, e := range edges {
		if len(out.Neighbors) == maxNeighbors {
			break
		}
		n := schemas.StoredNeighbor{BlockID: e.Dst, Kind: e.Kind}
		if nb, err := s.Store.Block(ctx, e.Dst); err == nil {
			n.Text = shorten(nb.Text, neighborText)
		}
		out.Neighbors = append(out.Neighbors, n)
	}
	rep.Block = out
	return rep
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// answerDocument reads a whole document, its blocks in order.
func (s *System) answerDocument(ctx context.Context, ev schemas.Event) schemas.Event {
	req, rep := ev.(*schemas.DocumentGet), &schemas.DocumentReply{}
	d, err := s.Store.Document(ctx, req.DocID)
	if errors.Is(err, store.ErrNotFound) {
		return rep
	}
	if err != nil {
		rep.Error = replyError(err)
		return rep
	}
	out := &schemas.StoredDocument{DocID: d.DocID, Title: d.Title, Source: d.Source, Path: d.Path, Notebook: d.Notebook,
		TitlePath: d.TitlePath, UpdatedAt: d.UpdatedAt, Blocks: make([]schemas.StoredDocBlock, 0, len(d.Blocks))}
	for _, b := range d.Blocks {
		out.Blocks = append(out.Blocks, schemas.StoredDocBlock{BlockID: b.BlockID, Type: b.Type, ParentID: b.ParentID, Text: b.Text,
			Lang: b.Lang, SectionPath: b.SectionPath})
	}
	rep.Document = out
	return rep
}
