// Package maintenance keeps a data directory sound: check compares what
// the sources hold with what the index holds and repair resends what is
// missing or stale (check.go, check_repair.go); backup copies a data
// directory's state out, and restore puts it into an empty one (backup.go).
//
// It works on a system through internal/system (Attach, Start, a System in
// hand) and the bus; nothing imports it but the commands and tests.
package maintenance
