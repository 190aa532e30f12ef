package gateway

import (
	"context"
	"net/http"
	"reflect"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/schemas"
)

// ScopeLister is a Backend that can list the index's notebooks, tags and
// months with their document counts; GET /v1/scopes needs it (a Backend
// without it answers 503 there).
type ScopeLister interface {
	Scopes(ctx context.Context) (*schemas.ScopeListing, error)
}

// Scopes asks the processes with the index open (kb.store.scopes.get) for
// every notebook, tag and month with its document counts.
func (bb *BusBackend) Scopes(ctx context.Context) (*schemas.ScopeListing, error) {
	l, err := client.RequestScopes(ctx, bb.Bus, NewID("scopes"))
	if err != nil {
		return nil, bb.indexError(err)
	}
	return l, nil
}

func (s *Server) scopesRoutes() {
	s.handle("GET /v1/scopes", s.scopes, true)
}

func (s *Server) scopes(w http.ResponseWriter, r *http.Request) {
	if !s.needBackend(w) {
		return
	}
	sl, ok := s.backend.(ScopeLister)
	if !ok {
		writeError(w, apiErr(CodeUnavailable, "this gateway's backend cannot list the notebooks and tags"))
		return
	}
	l, err := sl.Scopes(r.Context())
	if err != nil {
		s.fail(w, r, "scopes", err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func init() {
	apiOps["GET /v1/scopes"] = op{summary: "Every notebook (id, name), tag and month of the index with its document counts, the largest first " +
		"(months newest first): suggestions for a scope without a query. A query's own counts are POST /v1/search's facets.",
		resp: "ScopeListing"}
	bodyTypes["ScopeListing"] = reflect.TypeFor[schemas.ScopeListing]()
}
