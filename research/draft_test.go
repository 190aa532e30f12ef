package research_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

func finding(rid, tid string, index, of int) *schemas.ResearchFinding {
	return &schemas.ResearchFinding{ResearchID: rid, TaskID: tid, Index: index, Of: of, Question: "sub " + tid,
		Original: "What do my notes say?", Lang: "en", Mode: schemas.ResearchSynthesis, Status: schemas.TaskDone,
		Facts: []schemas.Fact{{ID: "f1", Text: "fact of " + tid, BlockIDs: []string{"b-" + tid}}}, LLMCalls: 2}
}

func newDrafter(t *testing.T, kv bus.KV) *research.Drafter {
	t.Helper()
	d, err := research.NewDrafter(research.DraftDeps{State: kv})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTheDraftComesWithTheLastFindingAndOnlyWithIt(t *testing.T) {
	ctx := context.Background()
	d := newDrafter(t, bus.NewMemKV())
	steps := []struct {
		task      string
		index     int
		wantDraft bool
	}{
		{"t2", 1, false},
		{"t2", 1, false}, // redelivered: still one of three
		{"t1", 0, false},
		{"t3", 2, true},
		{"t1", 0, false}, // redelivered after the draft: nothing more
		{"t3", 2, true},  // the closer redelivered (its draft may not have gone out): the same draft again
	}
	for i, st := range steps {
		got, err := d.Record(ctx, finding("r", st.task, st.index, 3), false)
		if err != nil {
			t.Fatal(err)
		}
		if (got != nil) != st.wantDraft {
			t.Fatalf("step %d (%s): draft %v, want %v", i, st.task, got != nil, st.wantDraft)
		}
		if got == nil {
			continue
		}
		if len(got.Findings) != 3 || got.Findings[0].TaskID != "t1" || got.Findings[2].TaskID != "t3" {
			t.Fatalf("draft findings %+v: want t1, t2, t3 in order", got.Findings)
		}
		if got.Question != "What do my notes say?" || got.Mode != schemas.ResearchSynthesis || got.LLMCalls != 6 || got.MsgID() != "research-draft:r" {
			t.Fatalf("draft %+v", got)
		}
		if len(got.Reasons) != 1 || !strings.HasPrefix(got.Reasons[0], "no_llm_provider: ") || got.Draft != "" {
			t.Fatalf("a draft without a provider: reasons %q, outline %q", got.Reasons, got.Draft)
		}
	}
}

func TestConcurrentSupervisorsAgreeOnOneDraft(t *testing.T) {
	b := stagetest.New(t)
	ctx := context.Background()
	kv, err := b.KV(ctx, stage.BucketResearch)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kv.(bus.RevKV); !ok {
		t.Fatal("a JetStream bucket should offer compare-and-set")
	}
	for round := range 5 {
		rid := fmt.Sprintf("r%d", round)
		const of = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		drafts := 0
		for i := range of {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each finding handled by its own supervisor, at once.
				got, err := newDrafter(t, kv).Record(ctx, finding(rid, fmt.Sprintf("t%d", i), i, of), false)
				if err != nil {
					t.Error(err)
					return
				}
				if got != nil {
					mu.Lock()
					drafts++
					mu.Unlock()
					if len(got.Findings) != of {
						t.Errorf("draft of %d findings, want %d", len(got.Findings), of)
					}
				}
			}()
		}
		wg.Wait()
		if drafts != 1 {
			t.Fatalf("round %d: %d drafts, want 1", round, drafts)
		}
	}
}
