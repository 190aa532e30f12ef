package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/schemas"
)

func TestARequestNobodyAnswersSaysSoAndAnAnsweredOneGetsItsReply(t *testing.T) {
	b := bustest.New(t, bus.Topology{})
	ctx := context.Background()
	_, err := bus.Request[*schemas.BlockReply](ctx, b, &schemas.BlockGet{BlockID: "b1"}, "t1")
	if !errors.Is(err, bus.ErrNoResponders) || !strings.Contains(err.Error(), schemas.SubjectBlockGet) {
		t.Fatalf("no answerer: %v, want ErrNoResponders naming %s", err, schemas.SubjectBlockGet)
	}
	stop, err := b.Answer(schemas.SubjectBlockGet, func(ctx context.Context, ev schemas.Event) schemas.Event {
		return &schemas.BlockReply{Block: &schemas.StoredBlock{BlockID: ev.(*schemas.BlockGet).BlockID, Text: "crows"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rep, err := bus.Request[*schemas.BlockReply](ctx, b, &schemas.BlockGet{BlockID: "b1"}, "t1")
	if err != nil || rep.Block == nil || rep.Block.BlockID != "b1" || rep.TraceID != "t1" {
		t.Fatalf("reply %+v, %v", rep, err)
	}
}
