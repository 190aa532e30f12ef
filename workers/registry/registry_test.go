package registry_test

import (
	"slices"
	"testing"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/doors"
	"github.com/exocortex/exocortex/workers/registry"
	"github.com/exocortex/exocortex/workers/stage"
)

func TestTheRegistryIsAValidCatalogInPipelineOrder(t *testing.T) {
	c := registry.Catalog()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Names(), []string{"chunk", "index", "embed", "retrieve", "rerank", "answer", "plan", "investigate", "draft", "report"}; !slices.Equal(got, want) {
		t.Errorf("stages = %v, want %v", got, want)
	}
}

func TestEveryInputSubjectIsProducedOrPublishedFromOutside(t *testing.T) {
	// Sources and clients publish these; every other input is some stage's output.
	outside := map[string]bool{schemas.SubjectDocChanged: true, schemas.SubjectQuery: true, schemas.SubjectEmbedRequest: true,
		schemas.SubjectResearchRequested: true}
	produced := map[string]bool{}
	for _, d := range registry.Stages() {
		for _, o := range d.Outputs {
			produced[o] = true
		}
	}
	for _, d := range registry.Stages() {
		for _, in := range d.Inputs {
			if !outside[in] && !produced[in] {
				t.Errorf("stage %s reads %s, which no stage declares as an output", d.Name, in)
			}
		}
	}
}

// A question's stages run several workers that each take one question at
// a time, so questions asked together are worked on together (a single
// worker fetching 32 at once answered them one after another).
func TestTheQueryStagesWorkOnSeveralQuestionsAtOnce(t *testing.T) {
	for _, d := range registry.Stages() {
		if d.Stream != stage.StreamQuery {
			continue
		}
		if w := d.Workers(1); w < 2 {
			t.Errorf("stage %s: %d worker with the default settings, want several", d.Name, w)
		}
		if d.Batch != 1 {
			t.Errorf("stage %s: fetches %d questions at once (0: the bus's 32), want 1", d.Name, d.Batch)
		}
	}
}

func TestTheGatewayIsADoorRoleRunWhenConfigured(t *testing.T) {
	d, ok := registry.Catalog().Lookup(doors.GatewayName)
	if !ok || d.KindOf() != stage.KindDoor || !d.IsService() {
		t.Fatalf("gateway role %+v (found %v): want a door service", d.Name, ok)
	}
	if d.Configured(&stage.Deps{}) {
		t.Error("the gateway runs without its configuration (--http off)")
	}
	if !d.Configured(&stage.Deps{Config: []any{&doors.Gateway{HTTP: gateway.Config{Addr: "127.0.0.1:0"}}}}) {
		t.Error("the gateway does not run with its configuration")
	}
}
