package client_test

import (
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/workers/registry"
)

// TestThePathsATimeoutNamesAreTheRegistrysStages: the client names the
// stages a query and a research pass through without the registry (it may
// not import it); each must be a stage of this build on the stream it
// consumes, or a timeout would look at a consumer that does not exist.
func TestThePathsATimeoutNamesAreTheRegistrysStages(t *testing.T) {
	stream := map[string]string{}
	for _, s := range registry.Catalog().Specs() {
		stream[s.Name] = s.Stream
	}
	for name, path := range map[string][]bus.StageSpec{"search": client.SearchPath, "ask": client.AnswerPath, "research": client.ResearchPath} {
		if len(path) == 0 {
			t.Errorf("%s: no stages on its path", name)
		}
		for _, s := range path {
			if got, ok := stream[s.Name]; !ok || got != s.Stream {
				t.Errorf("%s: stage %s on %s; the registry has it on %q (found %v)", name, s.Name, s.Stream, got, ok)
			}
		}
	}
}
