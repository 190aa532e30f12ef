package models_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

// nliPairs are (premise, hypothesis) pairs in Russian and English, short
// and long, with an empty premise among them.
var nliPairs = [][2]string{
	{"Вороны используют палки как инструменты, чтобы доставать еду.", "Вороны используют инструменты."},
	{"Crows use sticks as tools to get food out of holes.", "Crows never use tools."},
	{"Резервная копия хранится 30 дней, а затем удаляется.", "Копия хранится 97 дней."},
	{"The export is free in every edition. " + filler(8), "The export is only available in the paid edition."},
	{"", "Something is said."},
}

func openNLI(t *testing.T, dir string, opts models.Options) *models.NLI {
	t.Helper()
	n, err := models.OpenNLI(dir, specOf(t, dir, models.RoleNLI), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func split(pairs [][2]string) (premises, hypotheses []string) {
	for _, p := range pairs {
		premises, hypotheses = append(premises, p[0]), append(hypotheses, p[1])
	}
	return premises, hypotheses
}

func TestNLIProbabilitiesSumToOneAndABatchScoresEachPairAsIfAlone(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true, NLI: true})
	n := openNLI(t, dir, models.Options{})
	if !strings.HasPrefix(n.Name(), "tiny-nli@") {
		t.Errorf("name %q", n.Name())
	}
	ctx := context.Background()
	premises, hypotheses := split(nliPairs)
	batch, err := n.Score(ctx, premises, hypotheses)
	if err != nil || len(batch) != len(nliPairs) {
		t.Fatalf("Score = %v, %v", batch, err)
	}
	distinct := map[float32]bool{}
	for i, e := range batch {
		for _, p := range []float32{e.Entail, e.Neutral, e.Contradict} {
			if p < 0 || p > 1 || math.IsNaN(float64(p)) {
				t.Errorf("pair %d: %+v is not a probability distribution", i, e)
			}
		}
		if s := e.Entail + e.Neutral + e.Contradict; math.Abs(float64(s)-1) > 1e-5 {
			t.Errorf("pair %d: %+v sums to %v", i, e, s)
		}
		one, err := n.Score(ctx, premises[i:i+1], hypotheses[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiffEntailment(one[0], e); d > 1e-4 {
			t.Errorf("pair %d: %+v in a batch, %+v alone", i, e, one[0])
		}
		distinct[e.Entail] = true
	}
	if len(distinct) < 3 {
		t.Errorf("the pairs barely differ: %+v", batch)
	}
	// A budget of a few tokens per run still scores every pair, one by one.
	small := openNLI(t, dir, models.Options{MaxTokens: 8})
	again, err := small.Score(ctx, premises, hypotheses)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if d := maxDiffEntailment(again[i], batch[i]); d > 1e-4 {
			t.Errorf("pair %d differs under a small token budget: %+v, %+v", i, again[i], batch[i])
		}
	}
	if out, err := n.Score(ctx, nil, nil); err != nil || out != nil {
		t.Errorf("no pairs: %v, %v", out, err)
	}
	if _, err := n.Score(ctx, premises, hypotheses[:1]); err == nil || !strings.Contains(err.Error(), "5 premises for 1 hypotheses") {
		t.Errorf("mismatched lists: %v", err)
	}
}

func maxDiffEntailment(a, b models.Entailment) float64 {
	return max(math.Abs(float64(a.Entail-b.Entail)), math.Abs(float64(a.Neutral-b.Neutral)), math.Abs(float64(a.Contradict-b.Contradict)))
}

// TestNLIReadsWhichOutputIsWhichFromConfig runs one model (same weights)
// under config.json files that name its outputs in different orders: what
// the model calls entailment must follow id2label, not the position.
func TestNLIReadsWhichOutputIsWhichFromConfig(t *testing.T) {
	ctx := context.Background()
	premises, hypotheses := split(nliPairs)
	score := func(labels []string) []models.Entailment {
		dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true, NLI: true, NLILabels: labels})
		out, err := openNLI(t, dir, models.Options{}).Score(ctx, premises, hypotheses)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	base := score(nil) // entailment, neutral, contradiction
	tests := []struct {
		name   string
		labels []string
		// want maps base's probabilities (of outputs 0, 1, 2) to the fields.
		want func(b models.Entailment) models.Entailment
	}{
		{"the roberta-large-mnli order, upper case", []string{"CONTRADICTION", "NEUTRAL", "ENTAILMENT"},
			func(b models.Entailment) models.Entailment {
				return models.Entailment{Contradict: b.Entail, Neutral: b.Neutral, Entail: b.Contradict}
			}},
		{"neutral first", []string{"neutral", "contradiction", "entailment"},
			func(b models.Entailment) models.Entailment {
				return models.Entailment{Neutral: b.Entail, Contradict: b.Neutral, Entail: b.Contradict}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := score(tt.labels)
			for i := range got {
				if d := maxDiffEntailment(got[i], tt.want(base[i])); d > 1e-5 {
					t.Errorf("pair %d: %+v, want %+v", i, got[i], tt.want(base[i]))
				}
			}
		})
	}
}

func TestNLIKeepsTheHypothesisAndThePartOfALongPremiseAboutIt(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true, NLI: true})
	n := openNLI(t, dir, models.Options{MaxLength: 64})
	ctx := context.Background()
	tests := []struct {
		name            string
		premiseA        string
		premiseB        string
		hypothesisA     string
		hypothesisB     string
		whyTheyMustDiff string
	}{
		{"an English claim about the end of a long block",
			filler(60) + "Ravens use sticks as tools.", filler(60) + "Ravens never use sticks as tools.",
			"Ravens use tools.", "Ravens use tools.",
			"the end of the premise, where the claim's words are, must be read"},
		{"a Russian claim about the end of a long block",
			filler(60) + "Резервная копия хранится 30 дней.", filler(60) + "Резервная копия хранится 97 дней.",
			"Копия хранится 30 дней.", "Копия хранится 30 дней.",
			"the end of the premise, where the claim's words are, must be read"},
		{"a claim of half the input is not cut, the block is",
			filler(60), filler(60),
			"Crows use tools " + strings.Repeat("and sticks ", 8) + "in winter.", "Crows use tools " + strings.Repeat("and sticks ", 8) + "in summer.",
			"the hypothesis's last word must be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := n.Score(ctx, []string{tt.premiseA, tt.premiseB}, []string{tt.hypothesisA, tt.hypothesisB})
			if err != nil {
				t.Fatal(err)
			}
			if maxDiffEntailment(got[0], got[1]) < 1e-6 {
				t.Errorf("%+v and %+v are the same: %s", got[0], got[1], tt.whyTheyMustDiff)
			}
		})
	}
}

func TestTheLazyNLILoadsOnFirstUseAndUnloadsWhenIdle(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true, NLI: true})
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := models.InstalledNLI(dir, m, models.Options{}, 100*time.Millisecond)
	if !ok {
		t.Fatal("the generated NLI model is not seen as installed")
	}
	defer l.Close()
	if loaded, n := l.Loaded(); loaded || n != 0 {
		t.Fatal("loaded before use")
	}
	if !strings.HasPrefix(l.Name(), "tiny-nli@") {
		t.Errorf("name %q", l.Name())
	}
	ctx := context.Background()
	if _, err := l.Score(ctx, []string{"Вороны используют инструменты."}, []string{"Вороны умные."}); err != nil {
		t.Fatal(err)
	}
	if loaded, n := l.Loaded(); !loaded || n != 1 {
		t.Fatalf("after use: loaded %v, %d loads", loaded, n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for loaded, _ := l.Loaded(); loaded; loaded, _ = l.Loaded() {
		if time.Now().After(deadline) {
			t.Fatal("still loaded long after the idle timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := l.Score(ctx, []string{"Crows use tools."}, []string{"Crows are clever."}); err != nil {
		t.Fatal(err)
	}
	if _, n := l.Loaded(); n != 2 {
		t.Errorf("%d loads, want a reload after unloading", n)
	}
}

func TestAMissingNLIModelIsOffAndSaysHowToFetchIt(t *testing.T) {
	dir := t.TempDir()
	m := models.DefaultManifest()
	if _, ok := models.InstalledNLI(dir, m, models.Options{}, 0); ok {
		t.Fatal("an empty directory has an NLI model")
	}
	noNLI := models.Manifest{BaseURL: m.BaseURL, Models: m.Models[:1]}
	if _, ok := models.InstalledNLI(dir, noNLI, models.Options{}, 0); ok {
		t.Fatal("a manifest without an nli model gave one")
	}
	spec, _ := m.Spec(models.RoleNLI)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, models.ErrNotInstalled) || !strings.Contains(err.Error(), "exocortex models fetch --with nli") ||
			!strings.Contains(err.Error(), "nli model ") {
			t.Errorf("%s: err = %v, want ErrNotInstalled naming the model and 'models fetch --with nli'", what, err)
		}
	}
	_, err := models.OpenNLI(dir, spec, models.Options{})
	check("open", err)
	if !strings.Contains(err.Error(), "config.json") {
		t.Errorf("the error does not name the missing file: %v", err)
	}
	lazy := models.NewLazyNLI(dir, spec, models.Options{}, 0)
	_, err = lazy.Score(context.Background(), []string{"a"}, []string{"b"})
	check("lazy score", err)
	// Its config present but not the graph: the graph is named.
	gen := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true, NLI: true})
	if err := os.Remove(gen + "/tiny-nli/onnx/model.onnx"); err != nil {
		t.Fatal(err)
	}
	genSpec := specOf(t, gen, models.RoleNLI)
	_, err = models.OpenNLI(gen, genSpec, models.Options{})
	check("no graph", err)
	if !strings.Contains(err.Error(), "model.onnx") {
		t.Errorf("the error does not name the missing graph: %v", err)
	}
}

func TestAnNLIModelWithABadConfigIsRefusedSayingWhy(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"two labels", `{"id2label": {"0": "entailment", "1": "not_entailment"}}`, "has 2 labels"},
		{"generic label names", `{"id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}}`, `"LABEL_0", not entailment, neutral or contradiction`},
		{"a label twice", `{"id2label": {"0": "entailment", "1": "Entailment", "2": "neutral"}}`, "twice"},
		{"ids out of range", `{"id2label": {"0": "entailment", "1": "neutral", "3": "contradiction"}}`, `id "3"`},
		{"no id2label", `{"architectures": ["XLMRobertaForSequenceClassification"]}`, "has 0 labels"},
		{"not JSON", `{"id2label":`, "unexpected end of JSON"},
	}
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true, NLI: true})
	spec := specOf(t, dir, models.RoleNLI)
	cfg := dir + "/tiny-nli/" + spec.Config
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(cfg, []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := models.OpenNLI(dir, spec, models.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "config.json") {
				t.Errorf("err = %v, want one naming config.json and %q", err, tt.want)
			}
		})
	}
}

// TestIntegrationNLI runs the real entailment model: set
// EXOCORTEX_NLI_MODELS to a models directory holding it (where
// `exocortex models fetch --with nli` put it).
func TestIntegrationNLI(t *testing.T) {
	dir := os.Getenv("EXOCORTEX_NLI_MODELS")
	if dir == "" {
		t.Skip("set EXOCORTEX_NLI_MODELS to a models directory with the nli model (exocortex models fetch --with nli) to run this test")
	}
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, ok := m.Spec(models.RoleNLI)
	if !ok {
		t.Fatalf("the manifest of %s has no nli model", dir)
	}
	if res, err := models.Verify(dir, models.Manifest{BaseURL: m.BaseURL, Models: []models.Spec{spec}}); err != nil || len(res) == 0 {
		t.Fatalf("verify %s: %v (%d files)", spec.Name, err, len(res))
	}
	n, err := models.OpenNLI(dir, spec, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	tests := []struct {
		name, premise, hypothesis string
		entailed                  bool
	}{
		{"an English claim the block states", "Crows use sticks as tools to get food out of holes in trees.", "Crows use tools.", true},
		{"an English claim the block denies", "Crows use sticks as tools to get food out of holes in trees.", "Crows never use tools.", false},
		{"a Russian claim the block states", "Вороны используют палки как инструменты, чтобы доставать еду из щелей в деревьях.", "Вороны используют инструменты.", true},
		{"a Russian claim the block denies", "Вороны используют палки как инструменты, чтобы доставать еду из щелей в деревьях.", "Вороны никогда не используют инструменты.", false},
	}
	premises, hypotheses := make([]string, len(tests)), make([]string, len(tests))
	for i, tt := range tests {
		premises[i], hypotheses[i] = tt.premise, tt.hypothesis
	}
	got, err := n.Score(context.Background(), premises, hypotheses)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := got[i]
			t.Logf("%q | %q: %+v", tt.premise, tt.hypothesis, e)
			if tt.entailed && e.Entail <= e.Contradict || !tt.entailed && e.Contradict <= e.Entail {
				t.Errorf("entailed %v, but %+v", tt.entailed, e)
			}
		})
	}
}
