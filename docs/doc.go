// Package docs holds the project's documentation beside the README: one
// Markdown file per audience (using, siyuan, answers, research, http-api,
// models, operations, architecture, benchmarks, testing). It has no code;
// its test checks that every relative link and anchor in README.md, in
// docs/*.md and in every Markdown file they link resolves, so a moved
// file or a renamed heading fails `go test ./docs`. It imports nothing of
// the application.
package docs
