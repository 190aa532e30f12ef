package main_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// upEmbedsMaxBytes is the KB_EMBEDS bucket's limit of the system 'up' runs on data.
func upEmbedsMaxBytes(t *testing.T, data string) int64 {
	t.Helper()
	nc := connectUp(t, data)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), "KV_KB_EMBEDS")
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config.MaxBytes
}

func TestUpOnASmallStoreSizesTheEmbeddingCacheFromItOrTheSetting(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want int64
	}{
		{"--max-store 64M makes the cache an eighth of it", nil, []string{"--max-store", "64M"}, 8 * mib},
		{"EXOCORTEX_MAX_STORE does the same", []string{"EXOCORTEX_MAX_STORE=32MiB"}, nil, 4 * mib},
		{"--embeds-cache-mb sets the cache", nil, []string{"--max-store", "64M", "--embeds-cache-mb", "5"}, 5 * mib},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			startUp(t, data, c.env, append([]string{"--no-models", "--http", "off"}, c.args...)...)
			if got := upEmbedsMaxBytes(t, data); got != c.want {
				t.Fatalf("KB_EMBEDS max bytes %d, want %d", got, c.want)
			}
		})
	}
	t.Run("a cache larger than the store is refused, naming the flags", func(t *testing.T) {
		_, errOut, err := exo(t, "up", "--data", t.TempDir(), "--listen", "127.0.0.1:-1", "--no-models", "--http", "off",
			"--max-store", "16M", "--embeds-cache-mb", "32", "--log-level", "error")
		if err == nil || !strings.Contains(errOut, "--embeds-cache-mb") || !strings.Contains(errOut, "--max-store") {
			t.Fatalf("up: %v\n%s", err, errOut)
		}
	})
	t.Run("a malformed size names the flag", func(t *testing.T) {
		_, errOut, err := exo(t, "up", "--data", t.TempDir(), "--no-models", "--max-store", "lots")
		if err == nil || !strings.Contains(errOut, "--max-store") {
			t.Fatalf("up: %v\n%s", err, errOut)
		}
	})
}
