package models_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models"
)

// listing is a recorded listing of one repository at one revision
// (testdata/hub/<owner>/<name>@<revision>.txt).
type listing struct {
	repo, revision string
	file           string
	paths          map[string]bool
}

// loadListings reads every recorded listing under testdata/hub.
func loadListings(t *testing.T) []listing {
	t.Helper()
	var out []listing
	err := filepath.WalkDir(filepath.Join("testdata", "hub"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txt") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("testdata", "hub"), p)
		name, rev, ok := strings.Cut(strings.TrimSuffix(filepath.ToSlash(rel), ".txt"), "@")
		if !ok {
			return fmt.Errorf("%s: want <owner>/<name>@<revision>.txt", p)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		l := listing{repo: name, revision: rev, file: p, paths: map[string]bool{}}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if i := strings.Index(line, "  #"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			l.paths[line] = true
		}
		out = append(out, l)
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var commit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkAgainstListings reports every file of m that the recorded listing of
// the repository and revision it is fetched from does not hold.
func checkAgainstListings(m models.Manifest, ls []listing) []string {
	var problems []string
	for _, s := range m.Models {
		for _, f := range s.Files {
			repo, rev := s.Source(f)
			where := fmt.Sprintf("%s/%s (%s@%s)", s.Name, f.Path, repo, rev)
			if !commit.MatchString(rev) {
				problems = append(problems, fmt.Sprintf("%s: revision %q is not a commit: a branch moves, pin a 40-hex commit", where, rev))
			}
			var found, listed []string
			for _, l := range ls {
				if l.repo != repo {
					continue
				}
				if l.revision == rev || !commit.MatchString(rev) {
					listed = append(listed, l.file)
					if l.paths[f.Path] {
						found = append(found, l.file)
					}
				}
			}
			switch {
			case len(listed) == 0:
				problems = append(problems, fmt.Sprintf("%s: no recorded listing of %s at %s under testdata/hub", where, repo, rev))
			case len(found) == 0:
				problems = append(problems, fmt.Sprintf("%s: %s is not in the recorded listing %s", where, f.Path, strings.Join(listed, ", ")))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func TestEveryDefaultModelFileIsInTheHubListingOfItsRepository(t *testing.T) {
	m := models.DefaultManifest()
	if problems := checkAgainstListings(m, loadListings(t)); len(problems) > 0 {
		t.Errorf("the default manifest does not fit the hub's listings:\n%s", strings.Join(problems, "\n"))
	}
	for _, s := range m.Models {
		for _, f := range s.Files {
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(f.SHA256) {
				t.Errorf("%s/%s: no sha256 pinned (%q): a default is never trusted on first download", s.Name, f.Path, f.SHA256)
			}
		}
		if _, ok := m.Spec(s.Role); !ok {
			t.Errorf("%s: role %s has no model", s.Name, s.Role)
		}
	}
	qa, _ := m.Spec(models.RoleQA)
	if qa.ONNX == "" || qa.Tokenizer == "" || qa.MaxLength <= 0 {
		t.Errorf("the QA model %+v has no graph, tokenizer or length", qa)
	}
}

func TestTheHubListingsRejectTheModelsManifestAsItWas(t *testing.T) {
	// The QA entry before issue 24.
	before := models.Manifest{BaseURL: models.DefaultBaseURL, Models: []models.Spec{{
		Name: "xlm-roberta-base-squad2", Role: models.RoleQA, License: "CC-BY-4.0",
		Repo: "deepset/xlm-roberta-base-squad2", Revision: "main",
		ONNX: "onnx/model.onnx", Tokenizer: "tokenizer.json",
		Files:     []models.File{{Path: "onnx/model.onnx"}, {Path: "tokenizer.json"}},
		MaxLength: 384,
	}}}
	problems := strings.Join(checkAgainstListings(before, loadListings(t)), "\n")
	for _, want := range []string{
		`xlm-roberta-base-squad2/onnx/model.onnx (deepset/xlm-roberta-base-squad2@main): revision "main" is not a commit`,
		"xlm-roberta-base-squad2/onnx/model.onnx (deepset/xlm-roberta-base-squad2@main): onnx/model.onnx is not in the recorded listing",
		"xlm-roberta-base-squad2/tokenizer.json (deepset/xlm-roberta-base-squad2@main): tokenizer.json is not in the recorded listing",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("the old manifest's problems do not say %q:\n%s", want, problems)
		}
	}
	// A file fetched from another repository is checked against that one's
	// listing, and a repository nobody recorded is named.
	m := models.DefaultManifest()
	qa, _ := m.Spec(models.RoleQA)
	for i := range qa.Files {
		if qa.Files[i].Repo != "" {
			qa.Files[i].Path = "onnx/tokenizer.json"
		}
	}
	qa.Repo = "someone/unrecorded"
	problems = strings.Join(checkAgainstListings(models.Manifest{BaseURL: m.BaseURL, Models: []models.Spec{qa}}, loadListings(t)), "\n")
	for _, want := range []string{"no recorded listing of someone/unrecorded at d1e22df603ee04f4e0ff540d0d3bce147586df78",
		"onnx/tokenizer.json is not in the recorded listing testdata/hub/cross-encoder/mmarco-mMiniLMv2-L12-H384-v1@"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems do not say %q:\n%s", want, problems)
		}
	}
}
