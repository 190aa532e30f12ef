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
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/vectors"
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
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: newTraceID("ask"), Question: question, Lang: *lang,
		Options: schemas.QueryOptions{IncludeReports: *includeReports}}}
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
	var mu sync.Mutex
	onToken := func(t *schemas.AnswerToken) {
		if *asJSON {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// Printed text is verified and stays; a restart comes only when
		// the provider broke off after it and the answer starts again.
		if t.Restart {
			fmt.Print("\n[restarting: the provider broke off and was asked again; the text above is withdrawn]\n")
		}
		fmt.Print(t.Text)
	}
	var notes []string
	var done *schemas.AnswerDone
	var fu *client.FollowUps
	var l *system.Local
	if standalone(c) {
		// Nothing runs on the data directory: answer here with what the
		// answer's rungs need, without NATS or stages.
		if _, err := os.Stat(system.DBPath(c.data)); err != nil {
			if n.store != vectors.KindQdrant {
				return fmt.Errorf("no index at %s: run 'exocortex ingest PATH --data %s' first", system.DBPath(c.data), c.data)
			}
			// The notes are on Qdrant alone: their lexical vectors serve
			// the lexical search, as for exocortex search.
			cfg.NoIndexFile = true
		}
		if l, err = openLocal(ctx, cfg, system.LocalOptions{Mode: q.Options.Mode, Answer: true}); err != nil {
			return err
		}
	}
	if l != nil {
		defer l.Close()
		if done, fu, err = client.AskLocal(ctx, l, q, *timeout, onToken); err != nil {
			return err
		}
	} else {
		b, local, closeFn, err := system.Attach(ctx, cfg, true)
		if err != nil {
			return err
		}
		defer closeFn()
		if local {
			done, fu, err = client.AskAnswerFollowUps(ctx, b, q, *timeout, onToken)
		} else {
			// A running system answers: its settings, not this client's,
			// unless the client brought its own language-model providers,
			// which answer here over the contexts the running system finds.
			st, _ := system.RunningSettings(ctx, b)
			who := runningWho(c, b, st)
			mine, src := clientProviders(n)
			here := providersDiffer(mine, st)
			if here {
				notes = append(notes, fmt.Sprintf("%s: answered in this process with your language-model providers (%s, from %s) over the notes %s retrieved",
					reasonClientProviders, strings.Join(system.ProviderSummary(mine), ", "), src, who))
			}
			notes = append(notes, runningSettingsNotes(c, n, who, st, !here)...)
			if src, ok := af.given(); ok && !here && (st == nil || st.AnswerDeadline != af.deadline.value.String()) {
				running := "its own"
				if st != nil && st.AnswerDeadline != "" {
					running = st.AnswerDeadline
				}
				notes = append(notes, fmt.Sprintf("%s: %s answers within its deadline (%s), not your %s; restart it with the deadline to use it",
					reasonRunningSettings, who, running, src))
			}
			if src, ok := af.givenLocal(); ok && !here && (st == nil || st.AnswerDeadlineLocal != af.local.value.String()) {
				running := "its own"
				if st != nil && st.AnswerDeadlineLocal != "" {
					running = st.AnswerDeadlineLocal
				}
				notes = append(notes, fmt.Sprintf("%s: %s answers without a language model within its deadline (%s), not your %s; restart it with the deadline to use it",
					reasonRunningSettings, who, running, src))
			}
			for _, note := range notes {
				fmt.Fprintf(os.Stderr, "note: %s\n", note)
			}
			if here {
				log := c.logger()
				done, fu, err = client.AnswerHere(ctx, b, q, *mine, llm.RouterOptions{Logger: &log}, cfg.Answer, *timeout, onToken)
			} else {
				done, fu, err = client.AskAnswerFollowUps(ctx, b, q, *timeout, onToken)
			}
		}
		if err != nil {
			return err
		}
	}
	defer fu.Close()
	// Follow-up questions come after the answer, so they never delay it;
	// wait a little for them.
	followUps := func() []string {
		if len(done.FollowUps) > 0 || *followWait <= 0 {
			return done.FollowUps
		}
		qs, _ := fu.Wait(ctx, *followWait)
		return qs
	}
	if *asJSON {
		done.Reasons = append(done.Reasons, notes...)
		done.FollowUps = followUps()
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
	if done.StandaloneQuestion != "" && done.StandaloneQuestion != done.Question {
		fmt.Printf("answered as: %s\n", done.StandaloneQuestion)
	}
	mu.Unlock()
	qs := followUps()
	mu.Lock()
	if len(qs) > 0 {
		fmt.Printf("\nfollow-up questions:\n")
		for _, q := range qs {
			fmt.Printf("  - %s\n", q)
		}
	}
	return nil
}
