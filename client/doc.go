// Package client is how a program asks an exocortex something: one
// Client (client.New over a bus, client.Open for a data directory) that
// searches, asks and researches, and decides who answers a question (see
// Client). The CLI, the gateway (and through it MCP and the OpenAI door)
// and the tests use it.
//
// client.go holds the Client and who answers; ask.go search and ask
// (streamed tokens, follow-up questions, cancel); research.go research and
// its stored reports.
//
// It may import the bus, schemas, the answer, retrieval and research code
// and internal/system (the local reader, Attach, the stage specs a timeout
// names); nothing under bus/, internal/ or workers/ imports it (tests
// aside).
package client
