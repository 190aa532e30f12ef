package models_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

// graph stands for a model file big enough to be cut in the middle.
var graph = bytes.Repeat([]byte("an onnx graph of weights. "), 4096) // 106,496 bytes

func hubManifest(hub *modeltest.Hub, data map[string][]byte) models.Manifest {
	spec := models.Spec{Name: "tiny-qa", Role: models.RoleQA, Repo: "org/tiny-qa-onnx", Revision: "0123456789abcdef0123456789abcdef01234567",
		ONNX: "model_optimized.onnx", Tokenizer: "tokenizer.json", MaxLength: 384}
	for _, p := range []string{"model_optimized.onnx", "tokenizer.json", "config.json"} {
		if b, ok := data[p]; ok {
			spec.Files = append(spec.Files, models.File{Path: p, SHA256: digest(b), Size: int64(len(b))})
		}
	}
	return models.Manifest{BaseURL: hub.URL, Models: []models.Spec{spec}}
}

func TestFetchFollowsTheHubsRedirectAndResumesABrokenDownload(t *testing.T) {
	hub := modeltest.NewHub(t, "")
	const repo, rev = "org/tiny-qa-onnx", "0123456789abcdef0123456789abcdef01234567"
	files := map[string][]byte{"model_optimized.onnx": graph, "tokenizer.json": tokBytes, "config.json": []byte(`{"model_type":"xlm-roberta"}`)}
	for p, b := range files {
		hub.Put(t, repo, rev, p, b)
	}
	hub.CutOnce(graph, int64(len(graph)/3))
	dir := t.TempDir()
	res, err := models.Fetch(context.Background(), dir, hubManifest(hub, files), models.FetchOptions{Backoff: time.Millisecond})
	if err != nil {
		t.Fatalf("fetch through a redirect and a dropped connection: %v", err)
	}
	for _, r := range res {
		if r.Action != "downloaded" || r.SHA256 != digest(files[r.Path]) {
			t.Errorf("%s: %+v", r.Path, r)
		}
		got, err := os.ReadFile(filepath.Join(dir, "tiny-qa", r.Path))
		if err != nil || !bytes.Equal(got, files[r.Path]) {
			t.Errorf("%s installed with %d bytes (%v), want %d", r.Path, len(got), err, len(files[r.Path]))
		}
	}
	var redirects, resumed, direct int
	for _, q := range hub.Requests() {
		switch {
		case strings.HasSuffix(q.Path, "/resolve/"+rev+"/model_optimized.onnx") || strings.HasSuffix(q.Path, "/resolve/"+rev+"/tokenizer.json"):
			if q.Status != http.StatusFound {
				t.Errorf("%s: status %d, want the hub's 302 to its storage", q.Path, q.Status)
			}
			redirects++
		case strings.HasSuffix(q.Path, "/config.json"):
			direct++
		case q.Range != "":
			if want := fmt.Sprintf("bytes=%d-", len(graph)/3); q.Range != want || q.Status != http.StatusPartialContent ||
				q.Bytes != int64(len(graph)-len(graph)/3) {
				t.Errorf("the resumed request %+v: want Range %s answered 206 with the rest", q, want)
			}
			resumed++
		}
	}
	if redirects != 3 || resumed != 1 || direct != 1 { // the graph is asked for twice at /resolve/
		t.Errorf("requests: %d redirected, %d resumed, %d served directly: %+v", redirects, resumed, direct, hub.Requests())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "tiny-qa", ".*.part")); len(left) != 0 {
		t.Errorf("part files left behind: %v", left)
	}
}

func TestAPartFileLeftByAnEarlierFetchIsResumedOrStartedOver(t *testing.T) {
	half := int64(len(graph) / 2)
	tests := []struct {
		name      string
		part      []byte
		noRange   bool // the server answers 200 to a Range request
		wantRange bool
		wantBytes int64 // body bytes the server sent in all
	}{
		{"the rest of a good part is asked for with Range", graph[:half], false, true, int64(len(graph)) - half},
		{"a part of another file's bytes fails the digest and is downloaded again whole", bytes.Repeat([]byte{'x'}, int(half)), false, true, int64(len(graph)) - half + int64(len(graph))},
		{"a server that ignores Range sends the whole file, which replaces the part", graph[:half], true, true, int64(len(graph))},
		{"a part longer than the pinned size is not resumed but started over", append(append([]byte{}, graph...), 'x'), false, false, int64(len(graph))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var ranges []string
			var sent int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				ranges = append(ranges, r.Header.Get("Range"))
				mu.Unlock()
				if tt.noRange {
					r.Header.Del("Range")
				}
				cw := &countingWriter{ResponseWriter: w}
				http.ServeContent(cw, r, "model.onnx", time.Time{}, bytes.NewReader(graph))
				mu.Lock()
				sent += cw.n
				mu.Unlock()
			}))
			defer srv.Close()
			m := models.Manifest{BaseURL: srv.URL, Models: []models.Spec{{Name: "m", Role: models.RoleQA, Repo: "o/m", Revision: "r",
				ONNX: "model.onnx", Tokenizer: "model.onnx", Files: []models.File{{Path: "model.onnx", SHA256: digest(graph), Size: int64(len(graph))}}}}}
			dir := t.TempDir()
			dst := filepath.Join(dir, "m", "model.onnx")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(models.PartFile(dst), tt.part, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{Backoff: time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(dst); !bytes.Equal(got, graph) {
				t.Fatalf("installed %d bytes, want the %d of the file", len(got), len(graph))
			}
			if _, err := os.Stat(models.PartFile(dst)); !os.IsNotExist(err) {
				t.Errorf("the part file is still there (%v)", err)
			}
			if (ranges[0] != "") != tt.wantRange || sent != tt.wantBytes {
				t.Errorf("requests with Range %q; the server sent %d bytes, want %d", ranges, sent, tt.wantBytes)
			}
		})
	}
	// A file whose size is not pinned: a part of unknown length is resumed,
	// and only the digest decides.
	t.Run("without a pinned size the part is resumed and the digest decides", func(t *testing.T) {
		hub := modeltest.NewHub(t, "")
		hub.Put(t, "o/m", "r", "model.onnx", graph)
		m := models.Manifest{BaseURL: hub.URL, Models: []models.Spec{{Name: "m", Role: models.RoleQA, Repo: "o/m", Revision: "r",
			ONNX: "model.onnx", Tokenizer: "model.onnx", Files: []models.File{{Path: "model.onnx", SHA256: digest(graph)}}}}}
		dir := t.TempDir()
		dst := filepath.Join(dir, "m", "model.onnx")
		_ = os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(models.PartFile(dst), graph[:1000], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{}); err != nil {
			t.Fatal(err)
		}
		reqs := hub.Requests()
		if last := reqs[len(reqs)-1]; last.Range != "bytes=1000-" || last.Bytes != int64(len(graph)-1000) {
			t.Errorf("the storage request %+v: want the bytes after 1000", last)
		}
	})
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func TestTheHubsAnswersAreReportedPerFile(t *testing.T) {
	hub := modeltest.NewHub(t, "")
	const repo, rev = "org/tiny-qa-onnx", "0123456789abcdef0123456789abcdef01234567"
	files := map[string][]byte{"model_optimized.onnx": graph, "tokenizer.json": tokBytes}
	hub.Put(t, repo, rev, "model_optimized.onnx", []byte("a graph someone swapped in"))
	m := hubManifest(hub, files) // tokenizer.json is not on the hub: 404
	dir := t.TempDir()
	res, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{Backoff: time.Millisecond})
	if !errors.Is(err, models.ErrDigest) {
		t.Errorf("a swapped file: %v, want ErrDigest", err)
	}
	msgs := map[string]string{}
	for _, r := range res {
		if r.Action != "failed" {
			t.Errorf("%s: %s, want failed", r.Path, r.Action)
		}
		msgs[r.Path] = r.Err.Error()
	}
	if !strings.Contains(msgs["tokenizer.json"], "HTTP 404") || !strings.Contains(msgs["tokenizer.json"], "/"+repo+"/resolve/"+rev+"/tokenizer.json") {
		t.Errorf("a missing file: %q, want the 404 and its URL", msgs["tokenizer.json"])
	}
	if !strings.Contains(msgs["model_optimized.onnx"], "tiny-qa/model_optimized.onnx") {
		t.Errorf("a swapped file: %q, want the file named", msgs["model_optimized.onnx"])
	}
	for _, q := range hub.Requests() {
		if strings.HasSuffix(q.Path, "tokenizer.json") && q.Status != http.StatusNotFound {
			t.Errorf("the hub answered %+v for a file it lacks", q)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "tiny-qa"))
	if len(entries) != 0 {
		t.Errorf("something was installed or left: %v", entries)
	}
}

func TestFetchReportsProgressThrottledWithRateAndTimeLeft(t *testing.T) {
	const chunks, every = 12, 100 * time.Millisecond
	body := bytes.Repeat([]byte("w"), 12*10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		for i := 0; i < chunks; i++ {
			_, _ = w.Write(body[i*10000 : (i+1)*10000])
			w.(http.Flusher).Flush()
			time.Sleep(25 * time.Millisecond)
		}
	}))
	defer srv.Close()
	m := models.Manifest{BaseURL: srv.URL, Models: []models.Spec{{Name: "m", Role: models.RoleQA, Repo: "o/m", Revision: "r",
		ONNX: "model.onnx", Tokenizer: "model.onnx", Files: []models.File{{Path: "model.onnx", SHA256: digest(body)}}}}}
	var reports []models.Progress
	_, err := models.Fetch(context.Background(), t.TempDir(), m, models.FetchOptions{ProgressEvery: every,
		Progress: func(p models.Progress) { reports = append(reports, p) }})
	if err != nil {
		t.Fatal(err)
	}
	// 12 chunks over about 300 ms: two or three reports on the way, one at the end.
	if len(reports) < 2 || len(reports) > 5 {
		t.Fatalf("%d reports for %d reads over %d ms, want one per %s and a final one: %+v", len(reports), chunks, 25*chunks, every, reports)
	}
	mid, last := reports[0], reports[len(reports)-1]
	if mid.Final || mid.Total != int64(len(body)) || mid.Done <= 0 || mid.Done >= mid.Total || mid.Rate <= 0 || mid.Left <= 0 {
		t.Errorf("a report on the way: %+v, want bytes, the total from Content-Length, a rate and a time left", mid)
	}
	if !last.Final || last.Done != int64(len(body)) || last.Rate <= 0 {
		t.Errorf("the final report: %+v", last)
	}
	for i := 1; i < len(reports)-1; i++ {
		if reports[i].Elapsed-reports[i-1].Elapsed < every {
			t.Errorf("reports %d and %d are %s apart, under %s", i-1, i, reports[i].Elapsed-reports[i-1].Elapsed, every)
		}
	}
}

func TestFetchProgressReadsAsBytesRateAndTimeLeft(t *testing.T) {
	tests := []struct {
		name string
		p    models.Progress
		want string
	}{
		{"on the way, with a known size",
			models.Progress{Model: "xlm-roberta-base-squad2", File: "model_optimized.onnx", Done: 412_300_000, Total: 1_110_000_000, Rate: 11_200_000, Left: 62 * time.Second},
			"xlm-roberta-base-squad2/model_optimized.onnx  412.3 MB of 1.11 GB (37%)  11.2 MB/s  1m2s left"},
		{"resumed: the rate counts what arrived since",
			models.Progress{Model: "m", File: "tokenizer.json", Done: 9_000_000, Total: 17_082_660, Resumed: 8_000_000, Rate: 2_000_000, Left: 4 * time.Second},
			"m/tokenizer.json  9.0 MB of 17.1 MB (52%), resumed at 8.0 MB  2.0 MB/s  4s left"},
		{"no size known: no share, no time left",
			models.Progress{Model: "m", File: "x.onnx", Done: 2048, Total: -1, Rate: 1024, Left: -1},
			"m/x.onnx  2.0 kB  1.0 kB/s  time left unknown"},
		{"the final report gives the time taken",
			models.Progress{Model: "m", File: "config.json", Done: 921, Total: 921, Rate: 9210, Elapsed: 100 * time.Millisecond, Final: true},
			"m/config.json  921 B of 921 B (100%) in 100ms  9.2 kB/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
