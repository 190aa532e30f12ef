package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/pipeline"
)

type deadLetterView struct {
	Seq       uint64    `json:"seq"`
	Stage     string    `json:"stage"`
	Subject   string    `json:"subject"`
	Reason    string    `json:"reason"`
	Delivered uint64    `json:"delivered"`
	TraceID   string    `json:"trace_id,omitempty"`
	Time      time.Time `json:"time"`
	Data      string    `json:"data"`
}

func viewDeadLetter(dl bus.DeadLetter) deadLetterView {
	data := string(dl.Data)
	if len(data) > 500 {
		data = data[:500] + "…"
	}
	return deadLetterView{Seq: dl.Seq, Stage: dl.Stage, Subject: dl.Subject, Reason: dl.Reason,
		Delivered: dl.Delivered, TraceID: dl.TraceID, Time: dl.Time, Data: data}
}

func cmdDLQ(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dlq", flag.ContinueOnError)
	var c common
	c.register(fs, "warn")
	stage := fs.String("stage", "", "only this stage's dead letters")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] != "list" && pos[0] != "replay") {
		return errors.New("usage: exocortex dlq list|replay [SEQ...] [--stage NAME] [--json]")
	}
	b, _, closeFn, err := pipeline.Attach(ctx, pipeline.Config{DataDir: c.data, NATSURL: c.nats, Log: c.logger()}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	letters, err := b.DeadLetters(ctx, *stage)
	if err != nil {
		return err
	}
	if pos[0] == "list" {
		views := make([]deadLetterView, 0, len(letters))
		for _, dl := range letters {
			views = append(views, viewDeadLetter(dl))
		}
		if *asJSON {
			return printJSON(views)
		}
		if len(views) == 0 {
			fmt.Println("no dead letters")
		}
		for _, v := range views {
			fmt.Printf("#%d %s [%s] %s (delivered %d, trace %s)\n    %s\n", v.Seq, v.Time.Format(time.RFC3339), v.Stage, v.Subject, v.Delivered, v.TraceID, v.Reason)
		}
		return nil
	}
	// replay: the given sequence numbers, or all (of --stage).
	if len(pos) > 1 {
		want := map[uint64]bool{}
		for _, s := range pos[1:] {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("dead letter %q: not a sequence number", s)
			}
			want[n] = true
		}
		var sel []bus.DeadLetter
		for _, dl := range letters {
			if want[dl.Seq] {
				sel = append(sel, dl)
			}
		}
		if len(sel) != len(want) {
			return fmt.Errorf("found %d of the %d dead letters asked for", len(sel), len(want))
		}
		letters = sel
	}
	n, err := b.Replay(ctx, letters)
	fmt.Printf("replayed %d dead letters\n", n)
	return err
}
