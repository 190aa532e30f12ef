package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/schemas"
)

func cmdAsk(ctx context.Context, args []string) error {
	fs := newFlags("ask")
	var c common
	c.register(fs, "warn")
	var n neural
	n.register(fs)
	asJSON := fs.Bool("json", false, "print the kb.answer.done object instead of streaming")
	history := fs.String("history", "", "chat history: a JSON file of [{\"role\":\"user\"|\"assistant\",\"text\":...}]")
	lang := fs.String("lang", "", "the question's language (ru, en); default: detected")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the answer")
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := checkLang(*lang); err != nil {
		return err
	}
	question := strings.TrimSpace(strings.Join(words, " "))
	if question == "" {
		return errors.New(`give a question: exocortex ask "what did I write about ravens?"`)
	}
	q := &schemas.QuerySubmitted{QueryID: newTraceID("ask"), Question: question, Lang: *lang}
	if *history != "" {
		raw, err := os.ReadFile(*history)
		if err != nil {
			return fmt.Errorf("--history: %w", err)
		}
		if err := json.Unmarshal(raw, &q.History); err != nil {
			return fmt.Errorf("--history %s: want [{\"role\":...,\"text\":...}]: %w", *history, err)
		}
	}
	if err := c.requireData(); err != nil {
		return err
	}
	cfg := pipeline.Config{DataDir: c.data, NATSURL: c.nats, Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	if n.noModels {
		q.Options.Mode = schemas.ModeLexical // applies to this query also when a running system answers it
	}
	b, local, closeFn, err := pipeline.Attach(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeFn()
	var notes []string
	if !local {
		notes = runningSettingsNotes(ctx, b, c, n, true)
		for _, note := range notes {
			fmt.Fprintf(os.Stderr, "note: %s\n", note)
		}
	}
	var mu sync.Mutex
	onToken := func(t *schemas.AnswerToken) {
		if *asJSON {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if t.Restart {
			fmt.Print("\n[restarting: the provider failed midway]\n")
		}
		fmt.Print(t.Text)
	}
	done, err := pipeline.AskAnswer(ctx, b, q, *timeout, onToken)
	if err != nil {
		return err
	}
	if *asJSON {
		done.Reasons = append(done.Reasons, notes...)
		return printJSON(done)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("\n\nmode: %s, confidence %.2f\n", done.Mode, done.Confidence)
	for i, c := range done.Citations {
		fmt.Printf("[%d] %s  block %s %s\n    «%s»\n", i+1, strings.Join(c.SectionPath, " > "), c.BlockID, c.Link, oneLine(c.Quote))
	}
	for _, r := range done.Reasons {
		fmt.Printf("note: %s\n", r)
	}
	return nil
}
