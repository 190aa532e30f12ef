package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModelsFetchInstallsVerifiedFilesAndRefusesACorruptedOne(t *testing.T) {
	good := []byte("onnx bytes")
	sum := sha256.Sum256(good)
	served := map[string][]byte{
		"/org/m/resolve/rev1/model.onnx":     good,
		"/org/m/resolve/rev1/tokenizer.json": []byte(`{"tampered":true}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := served[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	manifest := `{"base_url":"` + srv.URL + `","models":[{"name":"m","role":"embed","repo":"org/m","revision":"rev1","dim":4,
	  "onnx":"model.onnx","tokenizer":"tokenizer.json","files":[
	    {"path":"model.onnx","sha256":"` + hex.EncodeToString(sum[:]) + `"},
	    {"path":"tokenizer.json","sha256":"` + strings.Repeat("ab", 32) + `"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := exo(t, "models", "fetch", "--models", dir)
	if err == nil {
		t.Fatalf("a corrupted file was accepted:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "sha256 mismatch") || !strings.Contains(errOut, "1 of 2 files failed") {
		t.Errorf("fetch output does not say what failed:\n%s\n%s", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "m", "tokenizer.json")); !os.IsNotExist(err) {
		t.Errorf("the corrupted tokenizer was installed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m", "model.onnx")); err != nil {
		t.Errorf("the good file was not installed: %v", err)
	}
	if out, _, err := exo(t, "models", "verify", "--models", dir); err == nil || !strings.Contains(out, "tokenizer.json") {
		t.Errorf("verify of an incomplete directory passed: %s", out)
	}
	if out := mustExo(t, "models", "list", "--models", dir); !strings.Contains(out, "installed") || !strings.Contains(out, "onnx runtime:") {
		t.Errorf("models list = %s", out)
	}
}
