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

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
)

func cmdAsk(ctx context.Context, args []string) error {
	fs := newFlags("ask")
	var c common
	c.register(fs, "warn")
	var n neural
	n.register(fs)
	var af answerFlags
	af.register(fs)
	followWait := fs.Duration("follow-ups-wait", 10*time.Second, "how long to wait, after the answer, for its follow-up questions (0: do not wait)")
	asJSON := fs.Bool("json", false, "print the kb.answer.done object instead of streaming")
	history := fs.String("history", "", "chat history: a JSON file of [{\"role\":\"user\"|\"assistant\",\"text\":...}]")
	lang := fs.String("lang", "", "the question's language (ru, en); default: detected")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the answer")
	includeReports := fs.Bool("include-reports", false, includeReportsUsage)
	var sf scopeFlags
	sf.register(fs)
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	q, err := askQuery(words, *lang, *history, *includeReports)
	if err != nil {
		return err
	}
	scopeNotes, err := sf.scopeQuery("ask", q, true)
	if err != nil {
		return err
	}
	if err := c.requireData(); err != nil {
		return err
	}
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	if err := af.apply(&cfg); err != nil {
		return err
	}
	if n.noModels {
		q.Options.Mode = schemas.ModeLexical // applies to this query also when a running system answers it
	}
	// The data directory's calibrated answer thresholds, for an answer
	// given in this process (a running system's answer stage has its own).
	if err := system.LoadCalibration(cfg.Calibration, c.data, &cfg.Answer, c.logger()); err != nil {
		return err
	}
	mine, src := clientProviders(n)
	cl, err := system.OpenClient(ctx, cfg, system.LocalOptions{Mode: q.Options.Mode, Answer: true}, client.Options{AskTimeout: *timeout,
		Providers: mine, ProvidersFrom: src, Answer: cfg.Answer, Log: c.logger(), Notice: printNote})
	if err != nil {
		return err
	}
	defer cl.Close()
	notes := askNotes(cl, c, n, af)
	for _, note := range notes {
		printNote(note)
	}
	notes = append(scopeNotes, notes...)
	p := &answerPrinter{json: *asJSON}
	done, fu, err := cl.Ask(ctx, q, client.AskOptions{OnToken: p.token, FollowUps: true})
	if err != nil {
		return err
	}
	defer fu.Close()
	return p.finish(ctx, done, notes, fu, *followWait)
}

// printNote tells the user, on stderr, what changed of their command.
func printNote(note string) { fmt.Fprintf(os.Stderr, "note: %s\n", note) }

// askQuery is the question ask's arguments and flags make.
func askQuery(words []string, lang, history string, includeReports bool) (*schemas.QuerySubmitted, error) {
	if err := checkLang(lang); err != nil {
		return nil, err
	}
	question := strings.TrimSpace(strings.Join(words, " "))
	if question == "" {
		return nil, errors.New(`give a question: exocortex ask "what did I write about ravens?"`)
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: newTraceID("ask"), Question: question, Lang: lang,
		Options: schemas.QueryOptions{IncludeReports: includeReports}}}
	if history != "" {
		raw, err := os.ReadFile(history)
		if err != nil {
			return nil, fmt.Errorf("--history: %w", err)
		}
		if err := json.Unmarshal(raw, &q.History); err != nil {
			return nil, fmt.Errorf("--history %s: want [{\"role\":...,\"text\":...}]: %w", history, err)
		}
	}
	return q, nil
}

// answerPrinter prints an answer: its tokens as they come, then its
// citations, notes and follow-up questions (or, with json, the whole
// kb.answer.done at the end).
type answerPrinter struct {
	json bool
	mu   sync.Mutex
}

func (p *answerPrinter) token(t *schemas.AnswerToken) {
	if p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Printed text is verified and stays; a restart comes only when
	// the provider broke off after it and the answer starts again.
	if t.Restart {
		fmt.Print("\n[restarting: the provider broke off and was asked again; the text above is withdrawn]\n")
	}
	fmt.Print(t.Text)
}

// finish prints the rest of the answer. Follow-up questions come after the
// answer, so they never delay it; it waits up to followWait for them.
func (p *answerPrinter) finish(ctx context.Context, done *schemas.AnswerDone, notes []string, fu *client.FollowUps, followWait time.Duration) error {
	followUps := func() []string {
		if len(done.FollowUps) > 0 || followWait <= 0 {
			return done.FollowUps
		}
		qs, _ := fu.Wait(ctx, followWait)
		return qs
	}
	if p.json {
		done.Reasons = append(done.Reasons, notes...)
		done.FollowUps = followUps()
		return printJSON(done)
	}
	p.mu.Lock()
	fmt.Printf("\n\nmode: %s, confidence %.2f\n", done.Mode, done.Confidence)
	for i, c := range done.Citations {
		fmt.Printf("[%d] %s%s  block %s %s\n    «%s»\n", i+1, strings.Join(c.SectionPath, " > "), sourceLabel(c, done.Lang), c.BlockID, c.Link, oneLine(c.Quote))
	}
	for _, r := range done.Reasons {
		fmt.Printf("note: %s\n", r)
	}
	if done.StandaloneQuestion != "" && done.StandaloneQuestion != done.Question {
		fmt.Printf("answered as: %s\n", done.StandaloneQuestion)
	}
	p.mu.Unlock()
	qs := followUps()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(qs) > 0 {
		fmt.Printf("\nfollow-up questions:\n")
		for _, q := range qs {
			fmt.Printf("  - %s\n", q)
		}
	}
	return nil
}
