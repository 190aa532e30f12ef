package models_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

func specOf(t *testing.T, dir, role string) models.Spec {
	t.Helper()
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := m.Spec(role)
	if !ok {
		t.Fatalf("no %s model in %s", role, dir)
	}
	return s
}

var texts = []string{
	"Ravens and crows solve puzzles.",
	"Москва стоит на Москве-реке, а Санкт-Петербург — на Неве; ёлки зелёные.",
	"A much longer passage about tomatoes, which need sun, water and stakes, and about aphids that hide under the leaves of the plants in a small garden.",
	"",
}

func TestEmbedderPoolsAndNormalisesTheSameAloneAndInABatch(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true})
	e, err := models.OpenEmbedder(dir, specOf(t, dir, models.RoleEmbed), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Dim() != modeltest.Dim || !strings.HasPrefix(e.Name(), "tiny-e5@") {
		t.Fatalf("dim %d, name %q", e.Dim(), e.Name())
	}
	ctx := context.Background()
	batch, err := e.EmbedPassages(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		alone, err := e.EmbedPassages(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		var norm float64
		for j, x := range batch[i] {
			norm += float64(x) * float64(x)
			if d := math.Abs(float64(x - alone[0][j])); d > 1e-4 {
				t.Fatalf("text %d component %d: %v in a batch, %v alone", i, j, x, alone[0][j])
			}
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("text %d: norm² %v, want 1", i, norm)
		}
	}
	q, err := e.EmbedQuery(ctx, texts[0])
	if err != nil {
		t.Fatal(err)
	}
	if cos(q, batch[0]) > 0.99999 {
		t.Error("the query and passage prefixes made no difference")
	}
	// A budget of a few tokens per run still embeds everything, one by one.
	small, err := models.OpenEmbedder(dir, specOf(t, dir, models.RoleEmbed), models.Options{MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	again, err := small.EmbedPassages(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if cos(again[i], batch[i]) < 0.9999 {
			t.Errorf("text %d differs under a small token budget", i)
		}
	}
}

func cos(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

func TestCrossEncoderScoresEachPairAsIfAlone(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	spec := specOf(t, dir, models.RoleRerank)
	ce, err := models.OpenCrossEncoder(dir, spec, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	ctx := context.Background()
	scores, err := ce.Score(ctx, "who uses tools?", texts)
	if err != nil || len(scores) != len(texts) {
		t.Fatalf("scores %v, %v", scores, err)
	}
	distinct := map[float32]bool{}
	for i, text := range texts {
		one, err := ce.Score(ctx, "who uses tools?", []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(float64(one[0] - scores[i])); d > 1e-4 {
			t.Errorf("pair %d: %v in a batch, %v alone", i, scores[i], one[0])
		}
		distinct[scores[i]] = true
	}
	if len(distinct) < 3 {
		t.Errorf("scores barely differ: %v", scores)
	}
	// A passage far over the model's length is truncated, not refused.
	long := strings.Repeat("crows and ravens ", 2000)
	if s, err := ce.Score(ctx, "crows", []string{long}); err != nil || len(s) != 1 {
		t.Errorf("a long passage: %v, %v", s, err)
	}
}

func TestTheLazyRerankerLoadsOnFirstUseAndUnloadsWhenIdle(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	l := models.NewLazyCrossEncoder(dir, specOf(t, dir, models.RoleRerank), models.Options{}, 100*time.Millisecond)
	defer l.Close()
	if loaded, n := l.Loaded(); loaded || n != 0 {
		t.Fatal("loaded before use")
	}
	if _, err := l.Score(context.Background(), "q", []string{"a", "b"}); err != nil {
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
	if _, err := l.Score(context.Background(), "q", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if _, n := l.Loaded(); n != 2 {
		t.Errorf("%d loads, want a reload after unloading", n)
	}
}

func TestAMissingModelSaysWhatIsMissingAndHowToGetIt(t *testing.T) {
	dir := t.TempDir()
	spec, _ := models.DefaultManifest().Spec(models.RoleEmbed)
	_, err := models.OpenEmbedder(dir, spec, models.Options{})
	if !errors.Is(err, models.ErrNotInstalled) || !strings.Contains(err.Error(), "models fetch") ||
		!strings.Contains(err.Error(), "model_qint8_avx512_vnni.onnx") {
		t.Fatalf("err = %v", err)
	}
}

func TestExtractiveQAReturnsASpanOfEachContext(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true})
	qa, err := models.OpenQA(dir, specOf(t, dir, models.RoleQA), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	ctx := context.Background()
	contexts := append([]string{strings.Repeat("Вороны используют инструменты. ", 300)}, texts...)
	spans, err := qa.Answer(ctx, "Who uses tools?", contexts, 10)
	if err != nil || len(spans) != len(contexts) {
		t.Fatalf("spans %v, %v", spans, err)
	}
	for i, s := range spans {
		if s.Context != i || s.NoAnswer <= 0 || s.NoAnswer > 1 {
			t.Errorf("context %d: %+v", i, s)
		}
		if contexts[i] == "" {
			if s.Text != "" {
				t.Errorf("an empty context gave %q", s.Text)
			}
			continue
		}
		if s.Text == "" || contexts[i][s.Start:s.End] != s.Text || s.Score <= 0 || s.Score > 1 {
			t.Errorf("context %d: span %+v is not a piece of its context", i, s)
		}
		one, err := qa.Answer(ctx, "Who uses tools?", contexts[i:i+1], 10)
		if err != nil || one[0].Start != s.Start || one[0].End != s.End || math.Abs(one[0].Score-s.Score) > 1e-4 {
			t.Errorf("context %d alone: %+v, in a batch %+v (%v)", i, one, s, err)
		}
	}
}
