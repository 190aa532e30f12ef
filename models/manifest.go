// Package models holds the local neural models: the manifest of defaults
// (pinned revisions and sha256 digests), their download and verification
// (exocortex models fetch), and the embedding, reranking, extractive-QA and
// entailment (NLI) models on ONNX Runtime.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Roles a model can fill.
const (
	RoleEmbed  = "embed"
	RoleRerank = "rerank"
	RoleQA     = "qa"
	// RoleNLI is the optional entailment model (see NLI): fetched only when
	// asked (models fetch --with nli), and nothing fails without it.
	RoleNLI = "nli"
)

// File is one file of a model, pinned by digest.
type File struct {
	// Path is where the file lives inside the model's directory, and its
	// path in the repository at Revision.
	Path string `json:"path"`
	// SHA256 is the hex digest the download must have. Empty means no digest
	// is pinned: fetch refuses the file unless told to trust its first
	// download, and then records the digest it got in the lock file.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Repo and Revision, when set, fetch the file from that repository at
	// that revision instead of the model's (Spec.Source): for a file that
	// the model's repository lacks or whose digest could not be checked
	// there, such as the default QA model's tokenizer.json.
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// Spec describes one model: where it comes from and how it is used.
type Spec struct {
	// Name is the model's directory under the models directory.
	Name string `json:"name"`
	Role string `json:"role"`
	// Repo and Revision locate it on the hub (a commit, so the files never move).
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	License  string `json:"license,omitempty"`
	// ONNX and Tokenizer are the Paths of the model graph and tokenizer.json.
	ONNX      string `json:"onnx"`
	Tokenizer string `json:"tokenizer"`
	// Config is the Path of the model's config.json, whose id2label gives
	// the order of a classifier's outputs (required for the nli role).
	Config string `json:"config,omitempty"`
	Files  []File `json:"files"`
	// Optional models are fetched only when asked for by role (models fetch
	// --with nli, or --role nli), and verify passes while none of their
	// files is present: without them a feature is off, nothing fails.
	Optional bool `json:"optional,omitempty"`
	// Dim is the embedding size (embed role).
	Dim int `json:"dim,omitempty"`
	// QueryPrefix and PassagePrefix are prepended before embedding (e5: "query: ", "passage: ").
	QueryPrefix   string `json:"query_prefix,omitempty"`
	PassagePrefix string `json:"passage_prefix,omitempty"`
	// MaxLength is the longest input in tokens, specials included.
	MaxLength int `json:"max_length,omitempty"`
}

// Source is the repository and revision file f is fetched from: its own
// when it names one, else the model's.
func (s Spec) Source(f File) (repo, revision string) {
	if f.Repo != "" {
		return f.Repo, f.Revision
	}
	return s.Repo, s.Revision
}

// Manifest lists the models the system uses, one per role.
type Manifest struct {
	// BaseURL is the hub's address; a file's URL is
	// BaseURL/<repo>/resolve/<revision>/<path>.
	BaseURL string `json:"base_url"`
	Models  []Spec `json:"models"`
}

// DefaultBaseURL is the Hugging Face hub.
const DefaultBaseURL = "https://huggingface.co"

// EnvHubURL overrides the manifest's base_url (a mirror of the hub, or a
// test's fake one); models fetch --hub-url overrides both.
const EnvHubURL = "EXOCORTEX_HUB_URL"

// HubURL is the hub models fetch downloads from: explicit (the --hub-url
// flag), else $EXOCORTEX_HUB_URL, else the manifest's base_url.
func HubURL(explicit string, m Manifest) string {
	if explicit != "" {
		return explicit
	}
	if u := os.Getenv(EnvHubURL); u != "" {
		return u
	}
	return m.BaseURL
}

// DefaultManifest returns the built-in defaults: every file pinned by
// repository, commit and sha256, each digest the one the hub's file page
// shows (the LFS "SHA256" of the file at that commit) unless its comment
// says otherwise. The NLI model is optional. Each default path is checked
// against a recorded listing of its repository at its revision
// (models/testdata/hub, TestEveryDefaultModelFileIsInTheHubListingOfItsRepository).
// Its length is a table's (one literal per model and file), not logic's.
func DefaultManifest() Manifest {
	return Manifest{BaseURL: DefaultBaseURL, Models: []Spec{
		{
			Name: "multilingual-e5-small", Role: RoleEmbed, License: "MIT",
			Repo: "intfloat/multilingual-e5-small", Revision: "614241f622f53c4eeff9890bdc4f31cfecc418b3",
			ONNX: "onnx/model_qint8_avx512_vnni.onnx", Tokenizer: "tokenizer.json",
			Files: []File{
				{Path: "onnx/model_qint8_avx512_vnni.onnx", Size: 118346824, SHA256: "dd476dd0c2514e9b9be83aeb3853fac0763e0bdf4a71645407587d77c48a2d88"},
				{Path: "tokenizer.json", Size: 17082730, SHA256: "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"},
			},
			Dim: 384, QueryPrefix: "query: ", PassagePrefix: "passage: ", MaxLength: 512,
		},
		{
			Name: "mmarco-mMiniLMv2-L12-H384-v1", Role: RoleRerank, License: "Apache-2.0",
			Repo: "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1", Revision: "1427fd652930e4ba29e8149678df786c240d8825",
			ONNX: "onnx/model_quint8_avx2.onnx", Tokenizer: "tokenizer.json",
			Files: []File{
				{Path: "onnx/model_quint8_avx2.onnx", Size: 118620016, SHA256: "6c2513767fb63d008a4377bef7a7a3555433d9436342bb53e35a3a72ffc52d4b"},
				{Path: "tokenizer.json", Size: 17082660, SHA256: "62c24cdc13d4c9952d63718d6c9fa4c287974249e16b7ade6d5a85e7bbb75626"},
			},
			MaxLength: 512,
		},
		{
			// deepset/xlm-roberta-base-squad2 (XLM-R base fine-tuned on SQuAD
			// 2.0, CC-BY-4.0; English and, cross-lingually, Russian) has no
			// ONNX file and no tokenizer.json at any revision the hub lists, so
			// an ONNX export of it is pinned instead: Holisticon AG's
			// holisticon/xlm-roberta-base-squad2-onnx at d1e22df, the head of
			// its main on the hub's commits page ("Upload ort_config.json").
			// The file is model_optimized.onnx; its digest is the one the
			// hub's file page shows,
			// https://huggingface.co/holisticon/xlm-roberta-base-squad2-onnx/blob/d1e22df603ee04f4e0ff540d0d3bce147586df78/model_optimized.onnx
			// ("SHA256: d28c99e5...", "Size of remote file: 1.11 GB"; the exact
			// size is not shown, so none is pinned and the digest decides).
			// Not checked here (no network): that its signature is the one an
			// optimum export of XLMRobertaForQuestionAnswering has, inputs
			// input_ids and attention_mask and outputs start_logits and
			// end_logits (onnxgen.XLMRBaseQA; 1.11 GB is XLM-R base in fp32).
			// OpenQA checks the outputs and names what it found otherwise.
			// The export's own tokenizer.json (and model.onnx) have file pages
			// whose digests could not be read here, so the tokenizer is the
			// file the default reranker pins (same sha256): the XLM-R
			// sentencepiece vocabulary of 250,002 pieces that deepset's model
			// was trained with (its sentencepiece.bpe.model is
			// xlm-roberta-base's), with XLM-R's specials and pair template,
			// from cross-encoder/mmarco-mMiniLMv2-L12-H384-v1 at 1427fd65.
			Name: "xlm-roberta-base-squad2", Role: RoleQA, License: "CC-BY-4.0",
			Repo: "holisticon/xlm-roberta-base-squad2-onnx", Revision: "d1e22df603ee04f4e0ff540d0d3bce147586df78",
			ONNX: "model_optimized.onnx", Tokenizer: "tokenizer.json",
			Files: []File{
				{Path: "model_optimized.onnx", SHA256: "d28c99e5cd606ff24ab37947068f9f319d38bac5e4ba633464aefe61d7da2d72"},
				{Path: "tokenizer.json", Size: 17082660, SHA256: "62c24cdc13d4c9952d63718d6c9fa4c287974249e16b7ade6d5a85e7bbb75626",
					Repo: "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1", Revision: "1427fd652930e4ba29e8149678df786c240d8825"},
			},
			MaxLength: 384,
		},
		{
			// MoritzLaurer/multilingual-MiniLMv2-L6-mnli-xnli: mMiniLMv2-L6-H384
			// (distilled from XLM-R large) fine-tuned on XNLI (15 languages,
			// Russian among them) and English MNLI; its card recommends it for
			// speed, mDeBERTa-v3-base-mnli-xnli for accuracy (a DeBERTa-v2
			// graph, 339 MB quantized). Its author's fp32 ONNX export, added by
			// commit 0a71e92 (hub PR #2), with its own tokenizer.json and
			// config.json (id2label 0 entailment, 1 neutral, 2 contradiction).
			// Where the pins come from: the hub's tree page
			// (https://huggingface.co/MoritzLaurer/multilingual-MiniLMv2-L6-mnli-xnli/tree/main/onnx,
			// at 0a71e92: model.onnx 428 MB, tokenizer.json 17.1 MB, config.json
			// 921 bytes, the two large ones in LFS); config.json's digest is the
			// sha256 of its text as the hub's blame page shows it
			// (.../blame/acf08db83390e23428c560cb578a865b39196993/onnx/config.json),
			// 921 bytes with the final newline. No hub file page showing the LFS
			// sha256 of model.onnx and tokenizer.json was reachable offline: their
			// digests and exact sizes are those public projects pin for this
			// revision; model.onnx's digest is the same in at least three
			// independent ones, and the one that also pins tokenizer.json pins
			// config.json with the digest computed above. Checked again for
			// issue 24: the hub's tree page of onnx/ at 0a71e92
			// (.../tree/main/onnx, head 0a71e92) lists exactly these paths; the
			// file pages of onnx/model.onnx and onnx/tokenizer.json were still
			// not to be found. tokenizer.json's digest is, though, one the hub
			// shows for an XLM-R tokenizer.json of 17.1 MB on another file page
			// (https://huggingface.co/tmnam20/xlm-roberta-base-sst2-100/blob/009fa1a936f36762f9a61511cc2a4483f4008fed/tokenizer.json,
			// "SHA256: b2116c05..."), which fits: this model uses XLM-R's
			// tokenizer. model.onnx's digest stays the other projects' pin.
			// fetch checks size and digest, so a wrong pin fails and installs
			// nothing.
			Name: "multilingual-MiniLMv2-L6-mnli-xnli", Role: RoleNLI, License: "MIT", Optional: true,
			Repo: "MoritzLaurer/multilingual-MiniLMv2-L6-mnli-xnli", Revision: "0a71e92a985b6e1ad1828cf67ce9c459639c1dca",
			ONNX: "onnx/model.onnx", Tokenizer: "onnx/tokenizer.json", Config: "onnx/config.json",
			Files: []File{
				{Path: "onnx/model.onnx", Size: 428127016, SHA256: "79f8cda2b1230585a95ea0514a6f1bd21c5c986ba0529bb3261213a3e195fa6e"},
				{Path: "onnx/tokenizer.json", Size: 17082854, SHA256: "b2116c05e7305eea30394284760789681c5b3440dd4cd9a8c77539da68f9e8a6"},
				{Path: "onnx/config.json", Size: 921, SHA256: "e08b628c4d46c8601dda34ddb40a7857e5961870b80482382d420db6dfb6e00e"},
			},
			MaxLength: 512,
		},
	}}
}

var (
	hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)
	safeName  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Validate reports every problem with m at once.
func (m Manifest) Validate() error {
	var errs []error
	if m.BaseURL == "" {
		errs = append(errs, errors.New("manifest: base_url is empty"))
	}
	roles := map[string]string{}
	for i, s := range m.Models {
		where := fmt.Sprintf("manifest: models[%d] (%s)", i, s.Name)
		if !safeName.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("%s: name must be letters, digits, '.', '_' or '-'", where))
		}
		switch s.Role {
		case RoleEmbed, RoleRerank, RoleQA, RoleNLI:
		default:
			errs = append(errs, fmt.Errorf("%s: role %q: want embed, rerank, qa or nli", where, s.Role))
		}
		if prev, dup := roles[s.Role]; dup && s.Role != "" {
			errs = append(errs, fmt.Errorf("%s: role %s is already filled by %s", where, s.Role, prev))
		}
		roles[s.Role] = s.Name
		if s.Repo == "" || s.Revision == "" {
			errs = append(errs, fmt.Errorf("%s: repo and revision are required", where))
		}
		if s.Role == RoleEmbed && s.Dim <= 0 {
			errs = append(errs, fmt.Errorf("%s: an embedding model needs dim", where))
		}
		paths := map[string]bool{}
		for _, f := range s.Files {
			if f.Path == "" || filepath.IsAbs(f.Path) || strings.Contains(f.Path, "..") || strings.Contains(f.Path, "\\") {
				errs = append(errs, fmt.Errorf("%s: file path %q must be relative, without '..'", where, f.Path))
			}
			if (f.Repo == "") != (f.Revision == "") {
				errs = append(errs, fmt.Errorf("%s: %s: a file fetched from another repository needs both repo and revision (got %q at %q)", where, f.Path, f.Repo, f.Revision))
			}
			if f.SHA256 != "" && !hexDigest.MatchString(f.SHA256) {
				errs = append(errs, fmt.Errorf("%s: %s: sha256 %q is not 64 lower-case hex digits", where, f.Path, f.SHA256))
			}
			paths[f.Path] = true
		}
		if s.Role == RoleNLI && s.Config == "" {
			errs = append(errs, fmt.Errorf("%s: an nli model needs config (its config.json, for the label order)", where))
		}
		for _, p := range []string{s.ONNX, s.Tokenizer} {
			if !paths[p] {
				errs = append(errs, fmt.Errorf("%s: %q is not among its files", where, p))
			}
		}
		if s.Config != "" && !paths[s.Config] {
			errs = append(errs, fmt.Errorf("%s: config %q is not among its files", where, s.Config))
		}
	}
	return errors.Join(errs...)
}

// Spec returns the model of a role.
func (m Manifest) Spec(role string) (Spec, bool) {
	for _, s := range m.Models {
		if s.Role == role {
			return s, true
		}
	}
	return Spec{}, false
}

// ManifestFile is the name of a user's manifest inside the models directory;
// when present it replaces the defaults.
const ManifestFile = "manifest.json"

// LoadManifest reads path, or returns the defaults when path is "".
func LoadManifest(path string) (Manifest, error) {
	if path == "" {
		return DefaultManifest(), nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, fmt.Errorf("models manifest: %w", err)
	}
	m := Manifest{BaseURL: DefaultBaseURL}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("models manifest %s: %w", path, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, fmt.Errorf("models manifest %s: %w", path, err)
	}
	return m, nil
}

// ManifestFor returns the manifest a models directory uses: its own
// manifest.json when present, else the defaults.
func ManifestFor(dir string) (Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	if _, err := os.Stat(p); err == nil {
		return LoadManifest(p)
	}
	return DefaultManifest(), nil
}

// DirFromEnv is the models directory: explicit (the --models flag), else
// $EXOCORTEX_MODELS, else models/ under the data directory.
func DirFromEnv(explicit, dataDir string) string {
	if explicit != "" {
		return explicit
	}
	if d := os.Getenv("EXOCORTEX_MODELS"); d != "" {
		return d
	}
	return filepath.Join(dataDir, "models")
}
