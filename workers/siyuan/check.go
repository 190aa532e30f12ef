package siyuan

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// This file serves exocortex check: it compares the kernel with what the
// source remembers sending (as Reconcile does, without sending), and makes
// the resends and deletions of a repair through the source's normal path.

// Remembered is a SiYuan document the source sent and has not deleted.
type Remembered struct {
	DocID    string `json:"doc_id"`
	Box      string `json:"box"`
	HPath    string `json:"hpath,omitempty"`
	Notebook string `json:"notebook,omitempty"`
	Hash     string `json:"hash"`
	Version  int64  `json:"version"`
	Updated  string `json:"updated"`
	// Closed: its notebook is closed in SiYuan (kept in the index).
	Closed bool `json:"closed,omitempty"`
}

// RememberedDocs lists the SiYuan documents in the source state
// (KB_SOURCES), by id.
func RememberedDocs(ctx context.Context, state bus.KV) (map[string]Remembered, error) {
	keys, err := state.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list source state: %w", err)
	}
	out := map[string]Remembered{}
	s := &Source{state: state}
	for _, k := range keys {
		id, ok := strings.CutPrefix(k, statePrefix)
		if !ok {
			continue
		}
		st, err := s.load(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read source state %s: %w", k, err)
		}
		if st == nil {
			continue
		}
		out[id] = Remembered{DocID: id, Box: st.Box, HPath: st.HPath, Notebook: st.Notebook, Hash: st.Hash, Version: st.Version, Updated: st.Updated, Closed: st.Closed}
	}
	return out, nil
}

// KernelDoc is a document the kernel holds (in a synced notebook), with how
// it differs from what the source sent: Drift is "" when it does not.
type KernelDoc struct {
	DocID    string
	Box      string
	Notebook string // the notebook's name
	HPath    string
	Updated  string
	Drift    string
	// Closed is a document of a closed notebook: the kernel's SQL does not
	// hold it, the index keeps it as it was sent (never "gone").
	Closed bool
}

// Compare lists the kernel's documents in the synced notebooks as the
// bridge reads them (the notebooks, then every document's updated stamp,
// block count, title path and labels) and says of each how it differs from
// what was sent. It sends nothing. The kernel is first asked to write its
// pending changes to SQL, as Reconcile does.
func (s *Source) Compare(ctx context.Context) ([]KernelDoc, error) {
	if err := s.loadNotebooks(ctx); err != nil {
		return nil, err
	}
	if err := s.client.Flush(ctx); err != nil && (errors.Is(err, ErrAuth) || ctx.Err() != nil) {
		return nil, err
	}
	s.mu.Lock()
	names := s.names
	s.mu.Unlock()
	docs, counts, err := s.listDocs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]KernelDoc, 0, len(docs))
	listed := make(map[string]bool, len(docs))
	for _, d := range docs {
		listed[d.ID] = true
	}
	// The documents of closed notebooks, as they were sent.
	err = s.eachDoc(ctx, func(id string, st *docState) error {
		s.mu.Lock()
		closed := s.closed[st.Box]
		s.mu.Unlock()
		if !listed[id] && closed && s.keep(st.Box) {
			out = append(out, KernelDoc{DocID: id, Box: st.Box, Notebook: names[st.Box], HPath: st.HPath, Updated: st.Updated, Closed: true})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		prev, err := s.load(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		kd := KernelDoc{DocID: d.ID, Box: d.Box, Notebook: names[d.Box], HPath: d.HPath, Updated: d.Updated}
		switch {
		case prev == nil:
			kd.Drift = "in SiYuan, not indexed"
		case prev.Updated != d.Updated:
			kd.Drift = fmt.Sprintf("changed in SiYuan (updated %s, indexed %s)", d.Updated, prev.Updated)
		case prev.Blocks != counts[d.ID]:
			kd.Drift = fmt.Sprintf("changed in SiYuan (%d blocks, indexed %d)", counts[d.ID], prev.Blocks)
		case prev.HPath != d.HPath || prev.Notebook != names[d.Box]:
			kd.Drift = fmt.Sprintf("renamed or moved in SiYuan (now %s/%s, indexed %s/%s)", names[d.Box], d.HPath, prev.Notebook, prev.HPath)
		case prev.Labels != d.Labels:
			kd.Drift = "tags or alias changed in SiYuan"
		case prev.Format < sendFormat:
			kd.Drift = "indexed in an older format"
		}
		out = append(out, kd)
	}
	return out, nil
}

// Resync reads document id from the kernel and sends it through the
// normal path (only when its content changed); with force it is sent in any
// case, marked Force, at a version above the one remembered and above floor
// (the newest the stages hold), so that the stages redo it in full.
func (s *Source) Resync(ctx context.Context, id string, force bool, floor int64) error {
	s.mu.Lock()
	loaded := s.names != nil
	s.mu.Unlock()
	if !loaded {
		if err := s.loadNotebooks(ctx); err != nil {
			return err
		}
	}
	prev, err := s.load(ctx, id)
	if err != nil {
		return err
	}
	if !force || prev == nil {
		_, err := s.sync(ctx, id, prev)
		return err
	}
	s.mu.Lock()
	names := s.names
	s.mu.Unlock()
	doc, err := s.client.FetchDoc(ctx, id, names)
	if errors.Is(err, ErrGone) || errors.Is(err, ErrHidden) {
		return s.remove(ctx, id)
	}
	if err != nil {
		return err
	}
	next := docState{Box: doc.Notebook, Updated: updatedOf(doc), Blocks: len(doc.Blocks), Hash: doc.Hash,
		HPath: doc.Meta["hpath"], Notebook: names[doc.Notebook], Labels: labelsOf(doc.Meta["tags"], doc.Meta["alias"], doc.Meta[schemas.ReportAttr]),
		Format: sendFormat}
	doc.Version = max(doc.Version, prev.Version+1, floor+1)
	doc.Force = true
	next.Version = doc.Version
	if err := s.publish(ctx, doc); err != nil {
		return fmt.Errorf("publish document %s: %w", id, err)
	}
	return s.save(ctx, id, next)
}

// Remove sends the deletion of a document the source sent before (the
// kernel no longer has it) and forgets it.
func (s *Source) Remove(ctx context.Context, id string) error { return s.remove(ctx, id) }
