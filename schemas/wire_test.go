package schemas_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

// TestQueryEventsRecordedBeforeTheSharedQueryStructStillDecodeAndEncode
// reads query events recorded (testdata/recorded) when the three query
// events still spelled out their query fields, before they embedded
// schemas.Query: each decodes strictly (no unknown field), and encodes back
// to the same JSON. kb.query.submitted comes back byte for byte; in
// kb.query.retrieved and kb.query.reranked the key "query" now follows the
// embedded query's fields instead of sitting after "question", so for those
// the test compares keys and values, not key order.
func TestQueryEventsRecordedBeforeTheSharedQueryStructStillDecodeAndEncode(t *testing.T) {
	paths, err := filepath.Glob("testdata/recorded/kb.query.*.json")
	if err != nil || len(paths) != 6 {
		t.Fatalf("want 6 recorded query events, found %d (%v)", len(paths), err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			recorded, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			recorded = bytes.TrimSuffix(recorded, []byte("\n"))
			ev, err := schemas.Decode(recorded)
			if err != nil {
				t.Fatalf("a recorded event no longer decodes: %v", err)
			}
			encoded, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(path, "submitted") && !bytes.Equal(encoded, recorded) {
				t.Fatalf("encoded differs byte for byte:\n got %s\nwant %s", encoded, recorded)
			}
			var got, want any
			if err := json.Unmarshal(encoded, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(recorded, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("encoded differs in keys or values:\n got %s\nwant %s", encoded, recorded)
			}
		})
	}
}
