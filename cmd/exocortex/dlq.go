package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
)

// deadLetterView is a dead letter as dlq list --json prints it (and GET
// /v1/dlq lists it).
type deadLetterView = gateway.DeadLetterView

func viewDeadLetter(dl bus.DeadLetter) deadLetterView { return gateway.ViewDeadLetter(dl) }

func cmdDLQ(ctx context.Context, args []string) error {
	fs := newFlags("dlq")
	var c common
	c.register(fs, "warn")
	stage := fs.String("stage", "", "only this stage's dead letters (stages: "+strings.Join(system.StageNames(), ", ")+")")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] != "list" && pos[0] != "replay" && pos[0] != "purge") {
		return &usageError{cmd: "dlq", msg: "want list, replay or purge: exocortex dlq list|replay|purge [SEQ...] [--stage NAME] [--json]"}
	}
	if err := c.requireData(); err != nil {
		return err
	}
	b, _, closeFn, err := system.Attach(ctx, system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}, false)
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
	// replay or purge: the given sequence numbers, or all (of --stage).
	if len(pos) > 1 {
		if letters, err = selectLetters(letters, pos[1:], *stage); err != nil {
			return err
		}
	}
	var n int
	if pos[0] == "purge" {
		n, err = b.PurgeDeadLetters(ctx, letters)
		fmt.Printf("purged %s\n", plural(n, "dead letter", "dead letters"))
		return err
	}
	n, err = b.Replay(ctx, letters)
	fmt.Printf("replayed %s\n", plural(n, "dead letter", "dead letters"))
	return err
}

// selectLetters picks the dead letters with the given sequence numbers; one
// not there (of --stage, when given) is an error that names it.
func selectLetters(letters []bus.DeadLetter, seqs []string, stage string) ([]bus.DeadLetter, error) {
	by := map[uint64]bus.DeadLetter{}
	for _, dl := range letters {
		by[dl.Seq] = dl
	}
	var sel []bus.DeadLetter
	var missing []string
	for _, s := range seqs {
		n, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dead letter %q: not a sequence number (see 'exocortex dlq list')", s)
		}
		dl, ok := by[n]
		if !ok {
			missing = append(missing, "#"+strconv.FormatUint(n, 10))
			continue
		}
		sel = append(sel, dl)
	}
	if len(missing) > 0 {
		where := "in the dead-letter queue"
		if stage != "" {
			where = "among stage " + stage + "'s dead letters"
		}
		return nil, fmt.Errorf("no dead letter %s %s (see 'exocortex dlq list')", strings.Join(missing, ", "), where)
	}
	return sel, nil
}
