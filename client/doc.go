// Package client is how a program asks an exocortex something: one
// Client (client.New over a bus; system.OpenClient for a data directory,
// through NewAttached) that searches, asks and researches, and decides who
// answers a question (see Client). The CLI, the gateway (and through it
// MCP and the OpenAI door) and the tests use it.
//
// client.go holds the Client and who answers; scope.go the scope a
// question carries (ParseQuestion, Intersect); ask.go search and ask
// (streamed tokens, follow-up questions, cancel); research.go research and
// its stored reports.
//
// It may import the bus, schemas, scope (ParseQuestion), the answer and research code, the
// language-model providers (models/llm), workers/stage (stream and bucket
// names) and workers/researching (stage names); not internal/ (the wiring
// imports it: system.OpenClient), store, vectors or models, so that a door
// that uses it (the gateway) links no data directory's code of its own
// (bus/layers_test.go). Nothing under bus/, internal/ or workers/ imports
// it directly (tests and internal/system aside; workers/doors runs the
// gateway, which does).
package client
