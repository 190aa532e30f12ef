package system_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// TestTheAnswerStageUsesTheDataDirectorysCalibration: a calibration that
// trusts no llm answer below a calibrated 0.9 turns a verified answer
// (coverage 1, calibrated 0.5) into the search-only fallback, which the
// same answer passes without the file; a broken file stops the start,
// naming it.
func TestTheAnswerStageUsesTheDataDirectorysCalibration(t *testing.T) {
	ctx := context.Background()
	strict := &answer.Calibrations{Set: "t", LLM: &answer.Calibration{Method: "isotonic", X: []float64{0, 1}, Y: []float64{0, 0.5}, Threshold: 0.9}}
	for _, tc := range []struct {
		name string
		cal  *answer.Calibrations
		mode string
	}{
		{"without a calibration file the verified answer is given", nil, schemas.AnswerLLM},
		{"with a strict calibration it falls back", strict, schemas.AnswerSearchOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			if tc.cal != nil {
				if err := tc.cal.Save(filepath.Join(data, answer.CalibrationFile)); err != nil {
					t.Fatal(err)
				}
			}
			up := llmtest.New(t)
			up.SetAnswer("Crows «use tools to get food» [1].")
			cfg := &llm.Config{Providers: []llm.Provider{{Name: "up", BaseURL: up.URL(), Models: map[string]string{llm.RoleFast: "m"}}}}
			sys, err := system.Start(ctx, system.Config{DataDir: data, Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg, Log: testLog(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer sys.Stop()
			vault := t.TempDir()
			writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n")
			syncPaths(t, sys.Bus, vault)
			waitIdle(t, sys.Bus)
			done, _, err := client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "c1", Question: "What do crows use?"}}, client.AskOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if done.Mode != tc.mode {
				t.Errorf("mode %s, want %s: %+v", done.Mode, tc.mode, done)
			}
		})
	}
	t.Run("a broken calibration file stops the start and is named", func(t *testing.T) {
		data := t.TempDir()
		path := filepath.Join(data, answer.CalibrationFile)
		if err := os.WriteFile(path, []byte(`{"llm":{"method":"magic"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		sys, err := system.Start(ctx, system.Config{DataDir: data, Listen: "127.0.0.1:-1", NoModels: true, Log: testLog(t)})
		if err == nil {
			sys.Stop()
			t.Fatal("started with a broken calibration file")
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "magic") {
			t.Errorf("error %q does not name the file and the problem", err)
		}
	})
}
