package system

import (
	"context"
	"errors"

	"github.com/exocortex/exocortex/schemas"
)

// answerScopes lists the index's notebooks, tags and months with their
// document counts (kb.store.scopes.get): a door's scope suggestions.
func (s *System) answerScopes(ctx context.Context, _ schemas.Event) schemas.Event {
	rep := &schemas.ScopesReply{}
	l, err := s.Store.Scopes(ctx)
	if err != nil {
		rep.Error = replyError(err)
		return rep
	}
	rep.Scopes = l
	return rep
}

// Scopes lists the index's notebooks, tags and months with their document
// counts, read here from the data directory (client.Client.Scopes).
func (l *Local) Scopes(ctx context.Context) (*schemas.ScopeListing, error) {
	if l.sys.Store == nil {
		return nil, errors.New("scopes: no index file is open here (the notes are searched on Qdrant alone); run exocortex up on the machine with the data directory")
	}
	return l.sys.Store.Scopes(ctx)
}
