package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// Scopes lists every notebook (id and name), tag and month of the index
// with its document counts, for scope suggestions without a query: asked
// of a process with the index open (kb.store.scopes.get), or read here
// from the data directory. A query's own counts are its facets
// (QueryOptions.Facets, QueryReranked.Facets).
func (c *Client) Scopes(ctx context.Context) (*schemas.ScopeListing, error) {
	if c.local != nil {
		sl, ok := c.local.(interface {
			Scopes(ctx context.Context) (*schemas.ScopeListing, error)
		})
		if !ok {
			return nil, errors.New("scopes: this reader of the data directory cannot list them")
		}
		return sl.Scopes(ctx)
	}
	return RequestScopes(ctx, c.bus, "")
}

// RequestScopes asks the processes with the index open, over b, for the
// listing (kb.store.scopes.get); nobody answering wraps
// bus.ErrNoResponders.
func RequestScopes(ctx context.Context, b *bus.Bus, traceID string) (*schemas.ScopeListing, error) {
	rep, err := bus.Request[*schemas.ScopesReply](ctx, b, &schemas.ScopesGet{}, traceID)
	if err != nil {
		return nil, fmt.Errorf("scopes: %w", err)
	}
	if rep.Error != nil {
		return nil, fmt.Errorf("scopes: %w", rep.Error)
	}
	if rep.Scopes == nil {
		return nil, errors.New("scopes: the index answered with no listing")
	}
	return rep.Scopes, nil
}
