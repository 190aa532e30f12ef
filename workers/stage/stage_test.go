package stage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/workers/stage"
)

func noop(context.Context, *stage.Deps) (bus.Handler, error) { return nil, nil }

func TestWorkers(t *testing.T) {
	tests := []struct {
		name       string
		decl       stage.Declaration
		configured int
		want       int
	}{
		{"a stage without settings runs the system's workers", stage.Declaration{}, 3, 3},
		{"no setting at all means one worker", stage.Declaration{}, 0, 1},
		{"a stage's concurrency is a floor", stage.Declaration{Concurrency: 4}, 1, 4},
		{"more configured workers than the floor win", stage.Declaration{Concurrency: 2}, 5, 5},
		{"the single writer never gets a second worker", stage.Declaration{MaxConcurrency: 1}, 8, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.decl.Workers(tt.configured); got != tt.want {
				t.Errorf("Workers(%d) = %d, want %d", tt.configured, got, tt.want)
			}
		})
	}
}

func TestSpecCarriesTheConsumerSettings(t *testing.T) {
	d := stage.Declaration{Name: "x", Stream: "S", Inputs: []string{"a.b", "a.c"}, AckWait: time.Minute, MaxDeliver: 2, MaxAckPending: 7}
	s := d.Spec()
	if s.Name != "x" || s.Stream != "S" || len(s.Filters) != 2 || s.AckWait != time.Minute || s.MaxDeliver != 2 || s.MaxAckPending != 7 {
		t.Errorf("spec = %+v", s)
	}
	s.Filters[0] = "changed"
	if d.Inputs[0] != "a.b" {
		t.Error("the spec shares the declaration's inputs")
	}
}

func TestCatalogValidateNamesEveryProblem(t *testing.T) {
	c := stage.Catalog{Streams: stage.Streams(), Stages: []stage.Declaration{
		{Name: "ok", Stream: stage.StreamQuery, Inputs: []string{"kb.query.x"}, New: noop},
		{Name: "ok", Stream: stage.StreamQuery, Inputs: []string{"kb.query.y"}, New: noop},
		{Name: "lost", Stream: "NOWHERE", Inputs: []string{"x"}, New: noop},
		{Name: "bare", Stream: stage.StreamQuery},
	}}
	err := c.Validate()
	for _, want := range []string{`"ok" declared twice`, "stream NOWHERE is not declared", `stage "bare": no input subjects`, `stage "bare": no constructor`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}

func TestConfigOfFindsAStagesConfigByType(t *testing.T) {
	type mine struct{ N int }
	d := &stage.Deps{Config: []any{"other", mine{N: 3}}}
	if got := stage.ConfigOf(d, mine{N: 1}); got.N != 3 {
		t.Errorf("ConfigOf = %+v, want the given one", got)
	}
	if got := stage.ConfigOf(&stage.Deps{}, mine{N: 1}); got.N != 1 {
		t.Errorf("ConfigOf without one = %+v, want the default", got)
	}
}

func TestTopologyHoldsTheCatalog(t *testing.T) {
	c := stage.Catalog{Streams: stage.Streams(), Buckets: stage.Buckets(), Stages: []stage.Declaration{
		{Name: "a", Stream: stage.StreamResearch, Inputs: []string{"kb.research.requested"}, New: noop}}}
	topo := c.Topology()
	if len(topo.Streams) != 3 || len(topo.Stages) != 1 || topo.Stages[0].Name != "a" {
		t.Errorf("topology = %+v", topo)
	}
	var buckets []string
	for _, b := range topo.Buckets {
		buckets = append(buckets, b.Bucket)
	}
	for _, want := range []string{stage.BucketResearch, stage.BucketReports, stage.BucketChunks} {
		if !strings.Contains(strings.Join(buckets, " "), want) {
			t.Errorf("buckets %v lack %s", buckets, want)
		}
	}
}
