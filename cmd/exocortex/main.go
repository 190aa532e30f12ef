// Command exocortex is the one binary of the system: every stage in-process
// (up), one stage alone (worker), and the commands a person uses to feed the
// knowledge base and search it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
)

type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{
	"up":     {"run every stage in-process with an embedded NATS server", cmdUp},
	"worker": {"run one stage against a NATS server (--stage NAME)", cmdWorker},
	"ingest": {"index Markdown folders and SiYuan notebooks, wait until indexed", cmdIngest},
	"search": {"search the notes (--mode lexical|vector|hybrid|rerank) with snippets and block ids", cmdSearch},
	"status": {"per-stage pending, acked and dead-lettered counts; documents and chunks", cmdStatus},
	"dlq":    {"list or replay dead-lettered messages (dlq list | dlq replay)", cmdDLQ},
	"eval":   {"run a golden set (SQuAD json or JSONL) and report recall, MRR, latency per retrieval mode", cmdEval},
	"ask":    {"ask a question: the answer streams, with citations checked against your notes", cmdAsk},
	"models": {"fetch, verify or list the neural models (models fetch|verify|list)", cmdModels},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: exocortex COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'exocortex COMMAND -h' for a command's flags")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(os.Stderr)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "exocortex: unknown command %q\n\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "exocortex %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// common holds the flags every command shares.
type common struct {
	data     string
	nats     string
	logLevel string
}

func (c *common) register(fs *flag.FlagSet, defaultLevel string) {
	def := os.Getenv("EXOCORTEX_DATA")
	if def == "" {
		def = "data"
	}
	fs.StringVar(&c.data, "data", def, "data directory (env EXOCORTEX_DATA)")
	fs.StringVar(&c.nats, "nats", os.Getenv("EXOCORTEX_NATS"), "external NATS URL (env EXOCORTEX_NATS); default: the system running on --data, else an embedded server")
	fs.StringVar(&c.logLevel, "log-level", defaultLevel, "log level: debug, info, warn, error")
}

// requireData fails, naming it, when the data directory does not exist and
// no external NATS server is given: commands that read a knowledge base must
// not create one where a path was mistyped.
func (c *common) requireData() error {
	if c.nats != "" {
		return nil
	}
	if _, err := os.Stat(c.data); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data directory %s does not exist (check --data or EXOCORTEX_DATA; 'exocortex ingest PATH --data %s' creates it)", c.data, c.data)
	}
	return nil
}

// plural writes n with the singular or plural noun: "1 document", "2 documents".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// logger returns a zerolog JSON logger on stderr.
func (c *common) logger() zerolog.Logger {
	lvl, err := zerolog.ParseLevel(strings.ToLower(c.logLevel))
	if err != nil || c.logLevel == "" {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(os.Stderr).Level(lvl).With().Timestamp().Logger()
}

// parse parses args, allowing flags after positional arguments
// ("exocortex search 'q' --k 5").
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
