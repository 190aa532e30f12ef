package main

import (
	"flag"

	"github.com/exocortex/exocortex/internal/system"
)

// registerReplicas adds --replicas: how many servers of a NATS cluster
// hold each stream, KV bucket and object store.
func registerReplicas(fs *flag.FlagSet) *int {
	return fs.Int("replicas", 0, "keep `N` copies of every stream, KV bucket and object store on a NATS cluster (3 for a three-node cluster; "+
		"more than 1 needs --nats with a cluster's URLs); an existing topology is changed to N (env "+system.EnvReplicas+
		"; default: the existing count, 1 for a new topology)")
}
