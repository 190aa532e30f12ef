// Package client is how a program asks a running exocortex something: it
// searches, asks and researches over the bus (ask.go, research.go), and is
// what the CLI, the gateway, the MCP server and the OpenAI door use.
//
// It may import the bus, schemas, the answer and research code and
// internal/system (the stage specs a timeout names); nothing under
// internal/ or workers/ imports it.
package client
