package system

import (
	"fmt"
	"os"
	"strconv"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/workers/stage"
)

// EnvReplicas sets Config.Replicas when it is 0.
const EnvReplicas = "EXOCORTEX_REPLICAS"

// replicasFromEnv sets c.Replicas from $EXOCORTEX_REPLICAS when it is 0.
func (c *Config) replicasFromEnv() error {
	if c.Replicas != 0 {
		return nil
	}
	v := os.Getenv(EnvReplicas)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%s=%q: want a number of replicas, 1 or more", EnvReplicas, v)
	}
	c.Replicas = n
	return nil
}

// topology is what the bus creates for cat, with c's replica count.
func (c Config) topology(cat stage.Catalog) bus.Topology {
	t := cat.Topology()
	t.Replicas = c.Replicas
	return t
}
