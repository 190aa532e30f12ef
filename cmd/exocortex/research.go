package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/research/export"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
)

// EnvReportNotebook is the SiYuan notebook --save siyuan writes into.
const EnvReportNotebook = "EXOCORTEX_SIYUAN_REPORT_NOTEBOOK"

// researchFolder is the title path under which --save siyuan creates reports.
const researchFolder = "/Research/"

// exitFallback is research's exit status when the report is printed but is
// not the synthesis the research was to write: the model's replies could
// not be used, and the report is the evidence-only one (mode
// evidence_only, reason synthesis_failed) or lists the verified facts
// (reason report_fallback). 0 is a report that is what was asked (a
// synthesis; evidence_only without a provider or with --no-llm).
const exitFallback = 3

// fallbackError is a research whose report fell back (printed already).
type fallbackError struct{ reason string }

func (e *fallbackError) Error() string { return "the report is a fallback: " + e.reason }

func cmdResearch(ctx context.Context, args []string) error {
	err := runResearch(ctx, args)
	var fb *fallbackError
	if errors.As(err, &fb) {
		// Everything is closed by now; only the exit status differs from 0.
		fmt.Fprintf(os.Stderr, "exocortex research: %v\n", err)
		os.Exit(exitFallback)
	}
	return err
}

// researchFlags are research's command-line flags.
type researchFlags struct {
	c                   common
	n                   neural
	br                  bridge // the kernel as the SiYuan bridge is configured, for --save siyuan
	asJSON, noLLM       *bool
	includeReports      *bool
	out, save, notebook *string
	lang                *string
	subQ, docs, calls   *int
	maxTime, timeout    *time.Duration
	scope               scopeFlags
	notes               []string // the scope's, for the report's reasons
}

func newResearchFlags() (*flag.FlagSet, *researchFlags) {
	fs := newFlags("research")
	f := &researchFlags{}
	f.c.register(fs, "warn")
	f.n.register(fs)
	fs.StringVar(&f.br.url, "siyuan", os.Getenv("EXOCORTEX_SIYUAN_URL"),
		"SiYuan kernel for --save siyuan, such as http://127.0.0.1:6806 (env EXOCORTEX_SIYUAN_URL; the API token from EXOCORTEX_SIYUAN_TOKEN)")
	fs.StringVar(&f.br.config, "siyuan-config", os.Getenv("EXOCORTEX_SIYUAN_CONFIG"),
		"SiYuan bridge settings, a JSON file (env EXOCORTEX_SIYUAN_CONFIG): its url and token_env are used for --save siyuan")
	f.asJSON = fs.Bool("json", false, "print the report as JSON (the kb.research.report object: structured sections, sources, facts, Markdown)")
	f.out = fs.String("out", "", "also write the report's Markdown to this file")
	f.subQ = fs.Int("sub-questions", 0, "budget: sub-questions to plan (0: the plan stage's default, 5)")
	f.docs = fs.Int("docs", 0, "budget: documents read per sub-question (0: the investigate stage's default, 8)")
	f.calls = fs.Int("max-calls", 0, "budget: language-model calls for the whole research (0: no limit)")
	f.maxTime = fs.Duration("max-time", 0, "budget: wall time of the whole research, such as 10m (0: the stages' default)")
	f.noLLM = fs.Bool("no-llm", false, "write an evidence_only report (the best passages per theme, with citations) without a language model")
	f.save = fs.String("save", "", "also save the report: 'siyuan' (a new document in a SiYuan notebook, citations as block references) or a folder (Markdown with links)")
	f.notebook = fs.String("notebook", os.Getenv(EnvReportNotebook), "the SiYuan notebook id for --save siyuan (env "+EnvReportNotebook+")")
	f.lang = fs.String("lang", "", "the question's language (ru, en); default: detected")
	f.includeReports = fs.Bool("include-reports", false, includeReportsUsage)
	f.timeout = fs.Duration("timeout", 0, "how long to wait for the report (0: --max-time plus a minute, else 20m)")
	f.scope.register(fs)
	return fs, f
}

func runResearch(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "status":
			return cmdResearchStatus(ctx, args[1:])
		case "list":
			return cmdResearchList(ctx, args[1:])
		}
	}
	fs, f := newResearchFlags()
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	question, err := f.check(words)
	if err != nil {
		return err
	}
	req, err := f.request(question)
	if err != nil {
		return err
	}
	// Check where the report goes before the research runs: a bad setting
	// must not cost a whole research.
	saver, err := f.saver(ctx)
	if err != nil {
		return err
	}
	cl, closeFn, err := f.connect(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	r, err := f.research(ctx, cl, req)
	if err != nil {
		return err
	}
	return f.output(r, saver)
}

// check refuses bad flags and returns the question; it sets the default
// --timeout.
func (f *researchFlags) check(words []string) (string, error) {
	bad := func(format string, a ...any) error {
		return &usageError{cmd: "research", msg: fmt.Sprintf(format, a...)}
	}
	question := strings.TrimSpace(strings.Join(words, " "))
	if question == "" {
		return "", bad(`give a question: exocortex research "what have I learned about ravens, and where do my notes disagree?"`)
	}
	if err := checkLang(*f.lang); err != nil {
		return "", bad("%v", err)
	}
	for name, v := range map[string]int{"sub-questions": *f.subQ, "docs": *f.docs, "max-calls": *f.calls} {
		if v < 0 {
			return "", bad("--%s %d: want a positive number (or 0 for the default)", name, v)
		}
	}
	if *f.maxTime < 0 || *f.timeout < 0 {
		return "", bad("--max-time and --timeout want a positive duration such as 10m")
	}
	if *f.timeout == 0 {
		*f.timeout = 20 * time.Minute
		if *f.maxTime > 0 {
			*f.timeout = *f.maxTime + time.Minute
		}
	}
	return question, nil
}

// saver is where --save puts the report: a SiYuan notebook, a folder, or
// nowhere (nil).
func (f *researchFlags) saver(ctx context.Context) (func(*schemas.ResearchReport) error, error) {
	switch {
	case *f.save == "siyuan":
		return siyuanSaver(ctx, f.br, *f.notebook)
	case *f.save != "":
		dir := *f.save
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("--save %s: %w", dir, err)
		}
		return func(r *schemas.ResearchReport) error {
			path, err := saveToDir(dir, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "saved: %s\n", path)
			return nil
		}, nil
	}
	return nil, nil
}

// connect is a client of the system: the running one, or one started
// here with the research stages. Close it when the report is out.
func (f *researchFlags) connect(ctx context.Context) (*client.Client, func() error, error) {
	if err := f.c.requireData(); err != nil {
		return nil, nil, err
	}
	cfg := system.Config{DataDir: f.c.data, NATSURL: f.c.nats, Creds: f.c.natsCreds(), TLS: f.c.natsTLS(), Log: f.c.logger()}
	if err := f.n.apply(&cfg); err != nil {
		return nil, nil, err
	}
	b, local, closeFn, err := system.Attach(ctx, cfg, true)
	if err != nil {
		return nil, nil, err
	}
	cl := client.New(b, client.Options{})
	if local && !cl.HasResearchStages(ctx) {
		closeFn()
		return nil, nil, errors.New("this build runs no research stages in-process (no plan consumer on KB_RESEARCH); start 'exocortex up' with them, or give --nats")
	}
	return cl, closeFn, nil
}

// request is the research request the question and flags make: the scope
// flags and the question's operators in its scope (notes printed).
func (f *researchFlags) request(question string) (*schemas.ResearchRequested, error) {
	req := &schemas.ResearchRequested{ResearchID: newTraceID("research"), Question: question, Lang: *f.lang, NoLLM: *f.noLLM,
		IncludeReports: *f.includeReports,
		Budget: schemas.ResearchBudget{SubQuestions: *f.subQ, DocsPerTask: *f.docs, LLMCalls: *f.calls,
			WallSeconds: int(math.Ceil(f.maxTime.Seconds()))}}
	now := time.Now()
	given, err := f.scope.scope(now)
	if err != nil {
		return nil, &usageError{cmd: "research", msg: err.Error()}
	}
	req.Scope = given
	notes, err := client.ScopeResearch(req, now)
	if err != nil {
		return nil, &usageError{cmd: "research", msg: err.Error()}
	}
	for _, n := range notes {
		printNote(n)
	}
	f.notes = notes
	return req, nil
}

// research runs the research and waits for its report, printing its
// progress on stderr.
func (f *researchFlags) research(ctx context.Context, cl *client.Client, req *schemas.ResearchRequested) (*schemas.ResearchReport, error) {
	fmt.Fprintf(os.Stderr, "research %s: %s\n", req.ResearchID, req.Question)
	pp := &progressPrinter{w: os.Stderr, seen: map[string]int{}}
	r, err := cl.Research(ctx, req, client.ResearchOptions{OnProgress: pp.print, Timeout: *f.timeout})
	if r != nil {
		r.Reasons = append(r.Reasons, f.notes...)
	}
	return r, err
}

// output prints the report, writes it to --out and saves it; a report
// that fell back is a fallbackError.
func (f *researchFlags) output(r *schemas.ResearchReport, saver func(*schemas.ResearchReport) error) error {
	md := reportMarkdown(r)
	if *f.asJSON {
		if err := printJSON(r); err != nil {
			return err
		}
	} else {
		fmt.Print(md)
	}
	var errs []error
	if *f.out != "" {
		// Marked as a report (front matter), as --save DIR marks it: a
		// file written into an ingested folder is not taken for a note.
		if err := os.WriteFile(*f.out, []byte(reportFrontMatter(r)+md), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("--out: %w", err))
		} else {
			fmt.Fprintf(os.Stderr, "wrote %s\n", *f.out)
		}
	}
	if saver != nil {
		if err := saver(r); err != nil {
			errs = append(errs, fmt.Errorf("--save %s: %w (the report is stored: 'exocortex research status %s')", *f.save, err, r.ResearchID))
		}
	}
	if len(errs) == 0 {
		if why := research.Fallback(r); why != "" {
			return &fallbackError{reason: why}
		}
	}
	return errors.Join(errs...)
}

// reportMarkdown is the report's own Markdown (the report stage's), or,
// from a report without one, the Markdown rendered from its structure.
func reportMarkdown(r *schemas.ResearchReport) string {
	md := r.Markdown
	if strings.TrimSpace(md) == "" {
		md = export.Markdown(r, export.Links)
	}
	if !strings.HasSuffix(md, "\n") {
		md += "\n"
	}
	return md
}

// progressPrinter writes a research's progress steps as lines:
// "plan ready: 5 sub-questions", "task 2/5: 3/8 documents read, 4 facts
// kept", "draft: ...", "report: ...".
type progressPrinter struct {
	mu    sync.Mutex
	w     io.Writer
	tasks int
	seen  map[string]int // task id -> its number, for steps without one
}

func (pp *progressPrinter) print(p *schemas.ResearchProgress) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	msg := strings.TrimSpace(p.Message)
	switch p.Step {
	case "plan":
		if p.Tasks > 0 {
			pp.tasks = p.Tasks
		}
		fmt.Fprintf(pp.w, "plan ready: %s\n", plural(p.Tasks, "sub-question", "sub-questions"))
		for _, l := range strings.Split(msg, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				fmt.Fprintf(pp.w, "  %s\n", l)
			}
		}
	case "task":
		num := p.Task
		if num == 0 {
			if num = pp.seen[p.TaskID]; num == 0 {
				num = len(pp.seen) + 1
			}
		}
		pp.seen[p.TaskID] = num
		of := p.Tasks
		if of == 0 {
			of = pp.tasks
		}
		head := fmt.Sprintf("task %d", num)
		if of > 0 {
			head += fmt.Sprintf("/%d", of)
		}
		if p.Done {
			head += " done"
		}
		read := fmt.Sprintf("%d documents read", p.DocsRead)
		if p.DocsTotal > 0 {
			read = fmt.Sprintf("%d/%d documents read", p.DocsRead, p.DocsTotal)
		}
		line := fmt.Sprintf("%s: %s, %s kept", head, read, plural(p.FactsKept, "fact", "facts"))
		if p.Done && msg != "" {
			line += " (" + oneLine(msg) + ")"
		}
		fmt.Fprintln(pp.w, line)
	case "failed":
		if p.TaskID != "" {
			name := p.TaskID
			if num := max(p.Task, pp.seen[p.TaskID]); num > 0 {
				name = fmt.Sprint(num)
			}
			fmt.Fprintf(pp.w, "task %s failed: %s\n", name, oneLine(msg))
		} else {
			fmt.Fprintf(pp.w, "failed: %s\n", oneLine(msg))
		}
	default: // draft, report
		if msg == "" {
			msg = map[string]string{"draft": "writing the draft", "report": "report ready"}[p.Step]
		}
		fmt.Fprintf(pp.w, "%s: %s\n", p.Step, oneLine(msg))
	}
}

// reportFrontMatter marks a report written as Markdown (schemas.IsReportMeta):
// "exocortex: report", its research id and when it was generated, so that
// ingesting the folder it lands in indexes it as a report, which retrieval
// leaves out unless asked (--include-reports).
func reportFrontMatter(r *schemas.ResearchReport) string {
	t := client.ReportTime(r)
	if t.IsZero() {
		t = time.Now()
	}
	return schemas.ReportFrontMatter(r.ResearchID, t.UTC().Format(time.RFC3339))
}

// saveToDir writes the report as Markdown with links into dir, named from
// its title; an existing file is never overwritten ("Title (2).md").
func saveToDir(dir string, r *schemas.ResearchReport) (string, error) {
	name := export.FileName(r)
	base := strings.TrimSuffix(name, ".md")
	md := []byte(reportFrontMatter(r) + export.Markdown(r, export.Links))
	for i := 1; ; i++ {
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) && i < 1000 {
			name = fmt.Sprintf("%s (%d).md", base, i+1)
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(md); err != nil {
			f.Close()
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		return path, f.Close()
	}
}

// siyuanSaver checks the SiYuan settings for --save siyuan (the kernel as
// the bridge is configured: --siyuan, --siyuan-config, the environment; the
// notebook) and returns what saves a report there.
func siyuanSaver(ctx context.Context, br bridge, notebook string) (func(*schemas.ResearchReport) error, error) {
	sc, err := br.roleConfig()
	if err != nil {
		return nil, err
	}
	if sc == nil || sc.URL == "" {
		return nil, &usageError{cmd: "research", msg: "--save siyuan needs the kernel: --siyuan URL or EXOCORTEX_SIYUAN_URL (the token in EXOCORTEX_SIYUAN_TOKEN), or --siyuan-config FILE"}
	}
	client := siyuan.NewClient(sc.URL, sc.Token)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nbs, err := client.Notebooks(cctx)
	if err != nil {
		return nil, fmt.Errorf("--save siyuan: %w", err)
	}
	var names []string
	found := false
	for _, nb := range nbs {
		names = append(names, fmt.Sprintf("%s (%s)", nb.ID, nb.Name))
		found = found || (nb.ID == notebook && !nb.Closed)
	}
	slices.Sort(names)
	if notebook == "" {
		return nil, &usageError{cmd: "research", msg: fmt.Sprintf("--save siyuan needs a notebook: --notebook ID or %s; the kernel's notebooks: %s",
			EnvReportNotebook, strings.Join(names, ", "))}
	}
	if !found {
		return nil, fmt.Errorf("--save siyuan: the kernel at %s has no open notebook %s; its notebooks: %s", sc.URL, notebook, strings.Join(names, ", "))
	}
	return func(r *schemas.ResearchReport) error {
		title := export.SafeTitle(r.Title)
		if title == "" {
			title = export.SafeTitle(r.Question)
		}
		if title == "" {
			title = r.ResearchID
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		id, err := client.CreateDocWithMd(sctx, notebook, researchFolder+title, export.Markdown(r, export.SiYuanRefs))
		if err != nil {
			return err
		}
		// Marked as a report, so that the bridge indexes it as one and
		// retrieval leaves it out unless asked (--include-reports).
		if err := client.SetBlockAttrs(sctx, id, map[string]string{schemas.ReportAttr: r.ResearchID}); err != nil {
			return fmt.Errorf("the report was saved as document %s (siyuan://blocks/%s) but not marked as a report, so searches may cite it: "+
				"set its attribute %s=%q in SiYuan (or delete it and save again): %w", id, id, schemas.ReportAttr, r.ResearchID, err)
		}
		fmt.Fprintf(os.Stderr, "saved to SiYuan: document %s siyuan://blocks/%s (%s%s in notebook %s)\n", id, id, researchFolder, title, notebook)
		return nil
	}, nil
}

// cmdResearchStatus prints a research's stored report: its title, mode,
// counts and reasons; or that it is in progress.
func cmdResearchStatus(ctx context.Context, args []string) error {
	fs := newFlags("research")
	var c common
	c.register(fs, "warn")
	asJSON := fs.Bool("json", false, "print the stored report (the kb.research.report object)")
	markdown := fs.Bool("markdown", false, "print the stored report's Markdown")
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(words) != 1 {
		return &usageError{cmd: "research", msg: "give one research id: exocortex research status ID ('exocortex research list' lists them)"}
	}
	id := words[0]
	b, closeFn, err := attachRead(ctx, c)
	if err != nil {
		return err
	}
	defer closeFn()
	cl := client.New(b, client.Options{})
	r, err := cl.Report(ctx, id)
	if err != nil {
		return err
	}
	if r == nil {
		keys, err := cl.ResearchStateKeys(ctx, id)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return fmt.Errorf("no research %s: no stored report and no state ('exocortex research list' lists the reports)", id)
		}
		if *asJSON {
			return printJSON(map[string]any{"research_id": id, "state": "in_progress", "state_keys": keys})
		}
		fmt.Printf("research %s: in progress (%s in KB_RESEARCH_STATE, no report yet)\n", id, plural(len(keys), "record", "records"))
		return nil
	}
	switch {
	case *asJSON:
		return printJSON(r)
	case *markdown:
		fmt.Print(reportMarkdown(r))
		return nil
	}
	fmt.Printf("research %s: %s\n", r.ResearchID, r.Title)
	fmt.Printf("question: %s\n", oneLine(r.Question))
	fmt.Printf("mode: %s\n", r.Mode)
	if t := client.ReportTime(r); !t.IsZero() {
		line := "finished: " + t.Local().Format("2006-01-02 15:04:05")
		if !r.Started.IsZero() && !r.Finished.IsZero() {
			line += fmt.Sprintf(" (took %s)", r.Finished.Sub(r.Started).Round(time.Second))
		}
		fmt.Println(line)
	}
	fmt.Printf("%s, %s read, %s, %s, %s\n", plural(r.Tasks, "sub-question", "sub-questions"), plural(r.DocsRead, "document", "documents"),
		plural(r.LLMCalls, "language-model call", "language-model calls"), plural(len(r.Facts), "fact", "facts"), plural(len(r.Sources), "source", "sources"))
	for _, reason := range r.Reasons {
		fmt.Printf("note: %s\n", oneLine(reason))
	}
	return nil
}

// reportEntry is one line of research list --json.
type reportEntry struct {
	ResearchID string    `json:"research_id"`
	Time       time.Time `json:"time"`
	Mode       string    `json:"mode"`
	Title      string    `json:"title"`
	Question   string    `json:"question"`
}

// cmdResearchList prints every stored report: id, time, mode, title.
func cmdResearchList(ctx context.Context, args []string) error {
	fs := newFlags("research")
	var c common
	c.register(fs, "warn")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(words) > 0 {
		return &usageError{cmd: "research", msg: "research list takes no arguments"}
	}
	b, closeFn, err := attachRead(ctx, c)
	if err != nil {
		return err
	}
	defer closeFn()
	reports, lerr := client.New(b, client.Options{}).Reports(ctx)
	if lerr != nil {
		fmt.Fprintf(os.Stderr, "warning: %v\n", lerr)
	}
	entries := make([]reportEntry, 0, len(reports))
	for _, r := range reports {
		entries = append(entries, reportEntry{ResearchID: r.ResearchID, Time: client.ReportTime(r), Mode: r.Mode, Title: r.Title, Question: r.Question})
	}
	if *asJSON {
		return printJSON(entries)
	}
	if len(entries) == 0 {
		fmt.Println("no research reports yet")
		return nil
	}
	for _, e := range entries {
		fmt.Printf("%s  %s  %-13s  %s\n", e.ResearchID, e.Time.Local().Format("2006-01-02 15:04"), e.Mode, oneLine(e.Title))
	}
	return nil
}

// attachRead connects to the running system (or the external NATS server),
// else opens the data directory's JetStream store without running stages.
func attachRead(ctx context.Context, c common) (*bus.Bus, func() error, error) {
	if err := c.requireData(); err != nil {
		return nil, nil, err
	}
	b, _, closeFn, err := system.Attach(ctx, system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}, false)
	return b, closeFn, err
}
