package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// streamReplicas lists every stream of the account (the application's, the
// dead letters, the KV buckets' KV_* and the object stores' OBJ_*) with its
// replica count.
func streamReplicas(t *testing.T, b *bus.Bus) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]int{}
	l := b.JS.ListStreams(ctx)
	for info := range l.Info() {
		out[info.Config.Name] = info.Config.Replicas
	}
	if err := l.Err(); err != nil {
		t.Fatalf("list streams: %v", err)
	}
	return out
}

// wantReplicas waits up to 10 s for every stream to be listed with want
// replicas: a cluster lists a stream whose replicas are being moved late
// (its leader is elected again), so one listing may lack it.
func wantReplicas(t *testing.T, b *bus.Bus, want int, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		problems := replicaProblems(streamReplicas(t, b), want)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range problems {
				t.Errorf("%s: %s", when, p)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func replicaProblems(got map[string]int, want int) []string {
	var names, problems []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, must := range []string{stage.StreamIngest, stage.StreamQuery, bus.StreamDLQ, "KV_" + stage.BucketChunks,
		"KV_" + bus.BucketStats, "OBJ_" + bus.BucketPayloads, "OBJ_" + bus.BucketValues, "OBJ_" + bus.BucketDLQBodies} {
		if _, ok := got[must]; !ok {
			problems = append(problems, fmt.Sprintf("no stream %s (have %v)", must, names))
		}
	}
	for _, n := range names {
		if got[n] != want {
			problems = append(problems, fmt.Sprintf("stream %s has %d replicas, want %d", n, got[n], want))
		}
	}
	return problems
}

func TestEnsureTopologyReplicatesEveryStreamBucketAndObjectStoreOnACluster(t *testing.T) {
	c := bustest.NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, bus.Options{URL: c.URLs(), Creds: c.Creds, TLS: c.TLS(), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	specs := []bus.StageSpec{{Name: "chunk", Stream: stage.StreamIngest, Filters: []string{"kb.doc.>"}}}
	topo := bus.Topology{Streams: stage.Streams(), Stages: specs, Buckets: stage.Buckets()}
	for i := range topo.Buckets {
		topo.Buckets[i].MaxBytes = min(topo.Buckets[i].MaxBytes, 64<<20)
	}

	topo.Replicas = 3
	if err := bus.EnsureTopology(ctx, b.JS, topo); err != nil {
		t.Fatalf("topology with 3 replicas: %v", err)
	}
	wantReplicas(t, b, 3, "created with 3 replicas")
	ci, err := b.JS.Consumer(ctx, stage.StreamIngest, "chunk")
	if err != nil {
		t.Fatal(err)
	}
	if cl := ci.CachedInfo().Cluster; cl == nil || len(cl.Replicas) != 2 {
		t.Errorf("the chunk consumer is not replicated with its stream: cluster %+v", cl)
	}

	// A command that does not set a count (ingest, status) keeps it.
	topo.Replicas = 0
	if err := bus.EnsureTopology(ctx, b.JS, topo); err != nil {
		t.Fatalf("topology without a replica count: %v", err)
	}
	wantReplicas(t, b, 3, "ensured again without a count")

	// An explicit count changes the existing streams.
	topo.Replicas = 1
	if err := bus.EnsureTopology(ctx, b.JS, topo); err != nil {
		t.Fatalf("topology scaled to 1 replica: %v", err)
	}
	wantReplicas(t, b, 1, "scaled down to 1")
	topo.Replicas = 3
	if err := bus.EnsureTopology(ctx, b.JS, topo); err != nil {
		t.Fatalf("topology scaled back to 3 replicas: %v", err)
	}
	wantReplicas(t, b, 3, "scaled back up to 3")
}

func TestEnsureTopologySaysThatReplicasNeedACluster(t *testing.T) {
	b := stagetest.New(t)
	err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Streams: stage.Streams(), Replicas: 3})
	if !errors.Is(err, bus.ErrReplicasNeedCluster) {
		t.Fatalf("3 replicas on a single server: %v, want ErrReplicasNeedCluster", err)
	}
	// Without a count, what exists (1 replica) stays.
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Streams: stage.Streams()}); err != nil {
		t.Fatalf("topology without a count on a single server: %v", err)
	}
	wantReplicas(t, b, 1, "single server")
}
