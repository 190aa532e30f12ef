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
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway/mcpserver"
)

type command struct {
	args    string // the positional arguments, as the usage line shows them
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands map[string]command

// init fills commands (a variable initialiser would make a cycle: the
// commands print their help from this table).
func init() {
	commands = map[string]command{
		"up":     {"", "run every stage in-process with an embedded NATS server", cmdUp},
		"worker": {"--stage NAME", "run one stage against a NATS server", cmdWorker},
		"ingest": {"PATH...", "index Markdown folders and SiYuan notebooks, wait until indexed", cmdIngest},
		"search": {"QUERY", "search the notes (--mode lexical|vector|hybrid|rerank) with snippets and block ids", cmdSearch},
		"status": {"", "per-stage pending, acked and dead-lettered counts; documents and chunks", cmdStatus},
		"dlq":    {"list|replay|purge [SEQ...]", "list, replay or purge dead-lettered messages (all, or those numbered SEQ)", cmdDLQ},
		"eval": {"[--answers [--calibrate]] [--set] FILE...", "run a golden set (SQuAD json or JSONL) and report recall, MRR, latency per retrieval mode; " +
			"with --answers, citation precision and recall, abstention and EM/F1 of the answers", cmdEval},
		"ask":    {"QUESTION", "ask a question: the answer streams, with citations checked against your notes", cmdAsk},
		"models": {"fetch|verify|list", "fetch, verify or list the neural models", cmdModels},
		"research": {"QUESTION | status ID | list", "research a broad question over the notes: live progress, then a cited report " +
			"(--save siyuan|DIR writes it back); status and list read past ones", cmdResearch},
		"backup":  {"DIR", "back up the index, vectors, answer cache, KV state and settings into DIR (also while up runs)", cmdBackup},
		"restore": {"DIR", "restore a backup into a new or empty data directory (--data), after checking every file", cmdRestore},
		"check": {"[DIR...]", "compare the index with its sources (the folders ingested, SiYuan) and report every difference; " +
			"--repair resends what is missing and removes what should be gone (exit 4: differences)", cmdCheck},
		"mcp": {"", "serve the knowledge base to an AI assistant over MCP on stdin/stdout (tools search, ask, get_block, research)", cmdMCP},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: exocortex COMMAND [ARGUMENTS] [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'exocortex COMMAND --help' (or 'exocortex help COMMAND') for a command's arguments and flags;")
	fmt.Fprintln(w, "'exocortex --version' prints the version")
}

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build information, or is "dev".
var version = ""

func versionString() string {
	v, rev, dirty := version, "", false
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	out := "exocortex " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		out += " (commit " + rev + ")"
	}
	if ok {
		out += " " + bi.GoVersion
	}
	return out
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "-help" || (os.Args[1] == "help" && len(os.Args) == 2) {
		usage(os.Stderr)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	switch os.Args[1] {
	case "--version", "-version", "version":
		fmt.Println(versionString())
		return
	}
	// Every door reports the build's version (MCP over stdio and over the
	// gateway's /mcp alike).
	mcpserver.Version = versionString()
	name, args := os.Args[1], os.Args[2:]
	if name == "help" {
		name, args = os.Args[2], []string{"--help"}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "exocortex: unknown command %q\n\n", name)
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "exocortex %s: %v\n", name, err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errUsage marks a command line that could not be parsed (exit status 2).
var errUsage = errors.New("usage")

// usageError is a bad command line: its message, then where help is.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string {
	return e.msg + "\nrun 'exocortex " + e.cmd + " --help' for its arguments and flags"
}
func (e *usageError) Is(target error) bool { return target == errUsage }

// newFlags is a command's flag set: parse prints its help (with --flag
// spelling) on --help, and returns bad flags as errors.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// placeholders name flags' values in help as the README does (--data DIR).
var placeholders = map[string]string{
	"data": "DIR", "models": "DIR", "ingest": "DIR", "nats": "URL", "siyuan": "URL",
	"llm-config": "FILE", "siyuan-config": "FILE", "set": "FILE", "history": "FILE",
	"listen": "HOST:PORT", "nats-creds": "FILE", "tls-ca": "FILE", "tls-cert": "FILE", "tls-key": "FILE", "http": "HOST:PORT|off", "siyuan-plugin-listen": "HOST:PORT", "watch": "DIR", "qdrant": "HOST:PORT",
	"log-level": "LEVEL", "stage": "NAME", "k": "N", "fetch": "N", "workers": "N",
	"lang": "LANG", "mode": "MODE", "analyzer": "NAMES", "vectors": "KIND", "role": "ROLES",
	"split": "PART", "timeout": "DURATION", "calibration": "FILE", "calibration-method": "METHOD",
	"out": "FILE", "wait": "DURATION", "forget": "DIR", "save": "siyuan|DIR", "notebook": "ID", "sub-questions": "N", "docs": "N", "max-calls": "N", "max-time": "DURATION",
}

// printHelp writes a command's usage line, summary and flags, spelled
// --flag as the README does.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	name, _, _ := strings.Cut(fs.Name(), " ")
	cmd := commands[name]
	line := "usage: exocortex " + name
	if cmd.args != "" {
		line += " " + cmd.args
	}
	fmt.Fprintf(w, "%s [flags]\n\n%s\n\nflags:\n", line, cmd.summary)
	fs.VisitAll(func(f *flag.Flag) {
		typ, text := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if p, ok := placeholders[f.Name]; ok {
			typ = p
		} else if typ != "" {
			typ = strings.ToUpper(typ)
		}
		if typ != "" {
			head += " " + typ
		}
		switch f.DefValue {
		case "", "false", "0", "0s":
		default:
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", head, text)
	})
}

// common holds the flags every command shares.
type common struct {
	data      string
	nats      string
	credsFile string
	tlsCA     string
	logLevel  string
}

func (c *common) register(fs *flag.FlagSet, defaultLevel string) {
	def := os.Getenv("EXOCORTEX_DATA")
	if def == "" {
		def = "data"
	}
	fs.StringVar(&c.data, "data", def, "data directory (env EXOCORTEX_DATA)")
	fs.StringVar(&c.nats, "nats", os.Getenv("EXOCORTEX_NATS"), "external NATS URL (env EXOCORTEX_NATS); default: the system running on --data, else an embedded server")
	fs.StringVar(&c.credsFile, "nats-creds", "", "NATS credentials file: an nkey user seed (SU...) or a NATS .creds file (env "+bus.EnvNATSCreds+"); default: "+
		bus.EnvNATSUser+" and "+bus.EnvNATSPassword+" or "+bus.EnvNATSNKey+" when set, else the data directory's nats.nk, which up writes")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "CA certificate (PEM) that signed the NATS server's certificate (env "+bus.EnvNATSTLSCA+
		"); default: the certificate of the up running on --data, else the system's roots")
	fs.StringVar(&c.logLevel, "log-level", defaultLevel, "log level: debug, info, warn, error")
}

// natsCreds are the NATS credentials given with --nats-creds (zero: see
// bus.ClientCredentials).
func (c *common) natsCreds() bus.Credentials {
	if c.credsFile == "" {
		return bus.Credentials{}
	}
	// An unreadable file is named when the credentials are checked.
	creds, _ := bus.CredentialsFromFile(c.credsFile)
	return creds
}

// natsTLS is the CA given with --tls-ca.
func (c *common) natsTLS() bus.TLSFiles { return bus.TLSFiles{CA: c.tlsCA} }

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

// checkLang accepts the languages the analysers know, and "" (any).
func checkLang(lang string) error {
	switch lang {
	case "", "ru", "en":
		return nil
	}
	return fmt.Errorf("--lang %q: want ru or en (or leave it out)", lang)
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

// flagError rewrites the flag package's errors with the --flag spelling.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	for _, p := range []string{": -", "flag -", "for -"} {
		msg = strings.Replace(msg, p, strings.TrimSuffix(p, "-")+"--", 1)
	}
	name, _, _ := strings.Cut(fs.Name(), " ")
	return &usageError{cmd: name, msg: msg}
}

// parse parses args, allowing flags after positional arguments
// ("exocortex search 'q' --k 5").
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(os.Stdout, fs)
				return nil, err
			}
			return nil, flagError(fs, err)
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
