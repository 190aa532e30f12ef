package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/ort"
)

func cmdModels(ctx context.Context, args []string) error {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlags("models " + sub)
	var c common
	c.register(fs, "warn")
	var n neural
	n.register(fs)
	roles := fs.String("role", "", "only these roles (comma-separated: embed, rerank, qa, nli)")
	with := fs.String("with", "", "fetch: also these optional models, by role (nli: the entailment model that checks answers' claims)")
	trust := fs.Bool("trust-new", false, "fetch: accept files without a pinned sha256 and record the digest they came with (for a manifest.json of your own: every default file is pinned)")
	hub := fs.String("hub-url", "", "fetch: the hub to download from (a mirror; default $"+models.EnvHubURL+", else the manifest's base_url, https://huggingface.co)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if sub != "fetch" && sub != "verify" && sub != "list" {
		return &usageError{cmd: "models", msg: "want a subcommand: exocortex models fetch|verify|list [--models DIR] [--role embed,rerank,qa,nli] [--with nli] [--trust-new] [--hub-url URL]"}
	}
	dir := models.DirFromEnv(n.models, c.data)
	m, err := models.ManifestFor(dir)
	if err != nil {
		return err
	}
	only, also := splitList(*roles), splitList(*with)
	if len(only) > 0 {
		m.Models = keepRoles(m.Models, only)
	}
	switch sub {
	case "fetch":
		return modelsFetch(ctx, c, dir, m, *hub, models.FetchOptions{Roles: only, With: also, TrustNew: *trust})
	case "verify":
		res, err := models.Verify(dir, m)
		printFileResults(res)
		if err != nil {
			return errors.New("some files are missing or corrupted (above): run exocortex models fetch")
		}
		return nil
	case "list":
		printModels(dir, m)
		return nil
	}
	return fmt.Errorf("unknown models command %q: want fetch, verify or list", sub)
}

// keepRoles are the specs of these roles.
func keepRoles(specs []models.Spec, roles []string) []models.Spec {
	var kept []models.Spec
	for _, s := range specs {
		for _, r := range roles {
			if s.Role == r {
				kept = append(kept, s)
			}
		}
	}
	return kept
}

// modelsFetch is models fetch: it downloads, verifies and installs the
// models opts wants into dir.
func modelsFetch(ctx context.Context, c common, dir string, m models.Manifest, hub string, opts models.FetchOptions) error {
	if dir == filepath.Join(c.data, "models") {
		// The data directory, when this makes it, is private as up makes it.
		if err := os.MkdirAll(c.data, 0o700); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	count := 0
	for _, s := range m.Models {
		if opts.Wants(s) {
			count++
		}
	}
	m.BaseURL = models.HubURL(hub, m)
	fmt.Fprintf(os.Stderr, "fetching %s into %s from %s\n", plural(count, "model", "models"), dir, m.BaseURL)
	opts.Progress, opts.ProgressEvery = downloadProgress(os.Stderr)
	res, err := models.Fetch(ctx, dir, m, opts)
	printFileResults(res)
	if err != nil {
		failed := 0
		for _, r := range res {
			if r.Err != nil {
				failed++
			}
		}
		return fmt.Errorf("%d of %s failed (above); nothing unverified was installed, and a download that broke off is kept to be "+
			"resumed: run exocortex models fetch again. Without the models Exocortex runs lexical-only: BM25 search, no reranking, "+
			"no extractive answers", failed, plural(len(res), "file", "files"))
	}
	return nil
}

// printModels is models list: each model, installed or not, and the ONNX
// Runtime library.
func printModels(dir string, m models.Manifest) {
	for _, s := range m.Models {
		state, hint := "installed", ""
		if _, err := os.Stat(filepath.Join(dir, s.Name, filepath.FromSlash(s.ONNX))); err != nil {
			state = "missing"
			if s.Optional {
				hint = "  (optional: exocortex models fetch --with " + s.Role + ")"
			}
		}
		fmt.Printf("%-7s %-34s %-9s %s@%s%s\n", s.Role, s.Name, state, s.Repo, short(s.Revision), hint)
	}
	if lib, err := ort.Find(); err != nil {
		fmt.Printf("onnx runtime: missing: %v\n", err)
	} else {
		fmt.Printf("onnx runtime: %s\n", lib)
	}
}

// downloadProgress shows downloads on w: on a terminal one line rewritten
// twice a second, elsewhere (a log) a line every 5 seconds; each file ends
// with a line of its size, time and rate.
func downloadProgress(w *os.File) (func(models.Progress), time.Duration) {
	st, err := w.Stat()
	tty := err == nil && st.Mode()&os.ModeCharDevice != 0
	every := 5 * time.Second
	if tty {
		every = 500 * time.Millisecond
	}
	width := 0
	return func(p models.Progress) {
		line := "  " + p.String()
		switch {
		case tty:
			fmt.Fprintf(w, "\r%-*s", width, line)
			width = max(width, len(line))
			if p.Final {
				fmt.Fprintln(w)
				width = 0
			}
		default:
			fmt.Fprintln(w, line)
		}
	}, every
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

func printFileResults(res []models.FileResult) {
	for _, r := range res {
		line := fmt.Sprintf("%-10s %s/%s", r.Action, r.Model, r.Path)
		if r.SHA256 != "" {
			line += "  sha256 " + r.SHA256[:16] + "…"
		}
		if r.Err != nil {
			line += "\n           " + r.Err.Error()
		}
		fmt.Println(line)
	}
}
