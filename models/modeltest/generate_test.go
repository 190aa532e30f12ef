package modeltest_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

// TestDirIsAVerifiedModelsDirectory checks that a generated directory is
// what models fetch leaves behind. With EXOCORTEX_GEN_MODELS=DIR it also
// copies the directory there (EXOCORTEX_GEN_REAL=1 for the real shapes), to
// try the neural path by hand without downloading anything.
func TestDirIsAVerifiedModelsDirectory(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NLI: true, RealShapes: os.Getenv("EXOCORTEX_GEN_REAL") == "1"})
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := models.Verify(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 9 { // two files of each of the four models, and the nli one's config.json
		t.Errorf("verify checked %d files, want 9: %+v", len(res), res)
	}
	if out := os.Getenv("EXOCORTEX_GEN_MODELS"); out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("cp", "-r", dir+"/.", out).CombinedOutput(); err != nil {
			t.Fatalf("copy to %s: %v %s", out, err, b)
		}
	}
}
