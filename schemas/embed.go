package schemas

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// TypeEmbedDoneV1 carries chunk vectors on SubjectEmbedDone.
const TypeEmbedDoneV1 = "kb.embed.done.v1"

// EmbedDone carries the vectors of one or more chunks, from the embed stage to
// the index stage, which writes them into the vector store.
type EmbedDone struct {
	Envelope
	// Model names the embedding model and its fingerprint ("multilingual-e5-small@1a2b3c4d5e6f").
	Model string          `json:"model"`
	Dim   int             `json:"dim"`
	Items []EmbeddedChunk `json:"items"`
}

// EmbeddedChunk is one chunk's vector, tied to the content hash it was
// computed from: the index drops it when the chunk has changed since.
type EmbeddedChunk struct {
	ChunkID string `json:"chunk_id"`
	DocID   string `json:"doc_id"`
	Hash    string `json:"hash"`
	Lang    string `json:"lang,omitempty"`
	// DocVersion is the document version of the chunk event the vector was
	// computed for: a chunk resent at a newer version (ingest --force,
	// check --repair) gets a new message id, not one the stream drops as a
	// duplicate of the first embedding.
	DocVersion int64 `json:"doc_version,omitempty"`
	// Cached is set when the vector came from the embed cache (same model and
	// content hash seen before) instead of a model run.
	Cached bool   `json:"cached,omitempty"`
	Vector Vector `json:"vector"`
}

// MsgID is "embed:<model>:<chunk>@<hash>" of the first item, ":<doc
// version>" when it has one, plus the item count.
func (e *EmbedDone) MsgID() string {
	if len(e.Items) == 0 {
		return "embed:" + e.Model + ":empty"
	}
	it := e.Items[0]
	if it.DocVersion != 0 {
		return fmt.Sprintf("embed:%s:%s@%s:%d+%d", e.Model, it.ChunkID, it.Hash, it.DocVersion, len(e.Items))
	}
	return fmt.Sprintf("embed:%s:%s@%s+%d", e.Model, it.ChunkID, it.Hash, len(e.Items))
}

// Validate checks the fields the index relies on.
func (e *EmbedDone) Validate() error {
	if e.Model == "" || e.Dim <= 0 {
		return fmt.Errorf("model and a positive dim are required")
	}
	if len(e.Items) == 0 {
		return fmt.Errorf("no items")
	}
	for i, it := range e.Items {
		if it.ChunkID == "" || it.DocID == "" || it.Hash == "" {
			return fmt.Errorf("item %d: chunk_id, doc_id and hash are required", i)
		}
		if len(it.Vector) != e.Dim {
			return fmt.Errorf("item %d (%s): vector has %d dimensions, want %d", i, it.ChunkID, len(it.Vector), e.Dim)
		}
		for _, x := range it.Vector {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("item %d (%s): vector holds NaN or Inf", i, it.ChunkID)
			}
		}
	}
	return nil
}

// Vector is a float32 vector that travels as base64 of its little-endian
// bytes: a quarter of the size of a JSON number list, and exact.
type Vector []float32

// MarshalJSON encodes v as a base64 string.
func (v Vector) MarshalJSON() ([]byte, error) {
	return json.Marshal(base64.StdEncoding.EncodeToString(v.Bytes()))
}

// UnmarshalJSON decodes a base64 string of little-endian float32s.
func (v *Vector) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("vector: want a base64 string: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("vector: %w", err)
	}
	out, err := VectorFromBytes(raw)
	if err != nil {
		return err
	}
	*v = out
	return nil
}

// Bytes returns the little-endian float32 bytes of v.
func (v Vector) Bytes() []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// VectorFromBytes decodes little-endian float32 bytes.
func VectorFromBytes(b []byte) (Vector, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector: %d bytes is not a whole number of float32s", len(b))
	}
	v := make(Vector, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// TypeEmbedRequestV1 asks the embed stage to embed a chunk again (a backfill
// after a model was installed or changed), on SubjectEmbedRequest.
const TypeEmbedRequestV1 = "kb.embed.request.v1"

// EmbedRequest carries a chunk the index holds without a vector.
type EmbedRequest struct {
	Envelope
	Chunk ChunkCreated `json:"chunk"`
	// Model is the model the vector is wanted from; Pass tells backfill
	// passes apart, so a later pass is not dropped as a duplicate.
	Model string `json:"model"`
	Pass  string `json:"pass"`
}

// MsgID is "embedreq:<model>:<chunk>@<hash>:<pass>".
func (e *EmbedRequest) MsgID() string {
	return fmt.Sprintf("embedreq:%s:%s@%s:%s", e.Model, e.Chunk.ChunkID, e.Chunk.Hash, e.Pass)
}

// Validate checks the chunk.
func (e *EmbedRequest) Validate() error {
	if e.Chunk.Tombstone {
		return fmt.Errorf("chunk %s: a tombstone has nothing to embed", e.Chunk.ChunkID)
	}
	return e.Chunk.Validate()
}
