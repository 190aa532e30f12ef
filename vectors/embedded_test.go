package vectors_test

import (
	"context"
	"testing"

	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/storetest"
)

func TestEmbeddedContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) vectors.Store {
		s, err := vectors.Open(context.Background(), vectors.Config{Dir: t.TempDir(), Dim: 64})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
