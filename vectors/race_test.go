//go:build race

package vectors

// raceEnabled shrinks the heavier tests: the race detector slows the graph
// code some fifty times.
const raceEnabled = true
