package researching_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// BenchmarkResearchInvestigate times the investigate phase of a research of
// 6 sub-questions x 8 documents against a fake provider with a fixed 200 ms
// latency per call, with 1 and with 3 investigate workers (the consumer's
// concurrency), from the tasks' publication to the sixth finding. It reports
// the wall time, the provider calls and the pipeline's own overhead per
// call: the wall time each worker spent per call beyond the provider's
// 200 ms (retrieval, prompt, parsing, verification, checkpoint, progress).
//
//	go test -run '^$' -bench Research -benchtime 1x ./workers/researching/
func BenchmarkResearchInvestigate(b *testing.B) {
	const latency = 200 * time.Millisecond
	topics := invTopics[:6]
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{Delay: latency})
			e := newInvEnv(b, topicNotes(topics, 8), pf, time.Minute)
			e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), workers)
			subs := subQuestions(topics)
			b.ResetTimer()
			var wall time.Duration
			calls := 0
			for i := 0; i < b.N; i++ {
				rid := fmt.Sprintf("bench-%d-%d", workers, i)
				start := time.Now()
				for k, q := range subs {
					task := &schemas.ResearchTask{ResearchID: rid, TaskID: fmt.Sprintf("t%d", k+1), Index: k, Of: len(subs), Question: q,
						Lang: "en", Mode: schemas.ResearchSynthesis, Budget: schemas.ResearchBudget{DocsPerTask: 8},
						Deadline: time.Now().Add(10 * time.Minute), Original: "What do my notes say?"}
					if _, err := e.b.Publish(context.Background(), task, "trace-bench"); err != nil {
						b.Fatal(err)
					}
				}
				for _, f := range e.await(len(subs), 5*time.Minute) {
					if f.Status != schemas.TaskDone || len(f.DocsRead) != 8 {
						b.Fatalf("%s: %s with %d documents", f.TaskID, f.Status, len(f.DocsRead))
					}
					calls += f.LLMCalls
				}
				wall += time.Since(start)
			}
			b.StopTimer()
			perRun := wall / time.Duration(b.N)
			b.ReportMetric(perRun.Seconds(), "wall-s/research")
			b.ReportMetric(float64(calls)/float64(b.N), "calls/research")
			overhead := float64(wall)*float64(workers)/float64(calls) - float64(latency)
			b.ReportMetric(overhead/float64(time.Millisecond), "overhead-ms/call")
		})
	}
}
