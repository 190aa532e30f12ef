package siyuan

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"time"
)

// Event is one /ws message of the kernel (or one a plugin forwarded).
type Event struct {
	Cmd  string          `json:"cmd"`
	Data json.RawMessage `json:"data"`
}

// Handle applies one event: documents it changed are read again after the
// coalescing window; removed documents and notebooks are deleted now.
// Noise (statusbar, backgroundtask...) is ignored.
func (s *Source) Handle(ctx context.Context, ev Event) error {
	s.setStatus(func(x *Status) { x.LastEvent = time.Now() })
	switch ev.Cmd {
	case "savedoc":
		s.onSaveDoc(ev.Data)
	case "transactions":
		s.onTransactions(ev.Data)
	case "create":
		s.onCreate(ev.Data)
	case "rename", "moveDoc":
		return s.onMoved(ctx, ev.Data)
	case "removeDoc":
		return s.onRemoveDoc(ctx, ev.Data)
	case "removeBox":
		if box := eventBox(ev.Data); box != "" {
			return s.removeBox(ctx, box)
		}
	case "createnotebook":
		return s.loadNotebooks(ctx)
	case "unmount":
		return s.onUnmount(ctx, ev.Data)
	case "mount":
		return s.onMount(ctx)
	case "renamenotebook":
		return s.onRenameNotebook(ctx, ev.Data)
	case "syncMergeResult":
		return s.onSyncMerge(ctx, ev.Data)
	case "databaseIndexCommit":
		s.onIndexCommit()
	}
	return nil
}

// eventBox is the notebook id of a notebook event ({"box": ...}), "" when
// the data is not one.
func eventBox(data json.RawMessage) string {
	var d struct {
		Box string `json:"box"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ""
	}
	return d.Box
}

// onSaveDoc marks the saved document changed.
func (s *Source) onSaveDoc(data json.RawMessage) {
	var d struct {
		RootID string `json:"rootID"`
	}
	if json.Unmarshal(data, &d) == nil && d.RootID != "" {
		s.markDirty(d.RootID)
	}
}

// onTransactions marks the documents of every operation changed.
func (s *Source) onTransactions(data json.RawMessage) {
	var txs []struct {
		DoOperations []struct {
			RootID string `json:"rootID"`
		} `json:"doOperations"`
	}
	if json.Unmarshal(data, &txs) != nil {
		return
	}
	for _, tx := range txs {
		for _, op := range tx.DoOperations {
			if op.RootID != "" {
				s.markDirty(op.RootID)
			}
		}
	}
}

// onCreate marks a created document changed.
func (s *Source) onCreate(data json.RawMessage) {
	var d struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(data, &d) == nil {
		if id := docIDOfPath(d.Path); id != "" {
			s.markDirty(id)
		}
	}
}

// onMoved handles a rename or move: the document's title path changed,
// and so did its descendants'.
func (s *Source) onMoved(ctx context.Context, data json.RawMessage) error {
	var d struct {
		ID      string `json:"id"`
		NewPath string `json:"newPath"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	id := d.ID
	if id == "" {
		id = docIDOfPath(d.NewPath)
	}
	if id == "" {
		return nil
	}
	s.markDirty(id)
	// A move's new paths reach SQL only at the kernel's next flush.
	if err := s.client.Flush(ctx); err != nil {
		return err
	}
	kids, err := s.client.DescendantDocs(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range kids {
		s.markDirty(k)
	}
	return nil
}

// onRemoveDoc deletes the removed documents now.
func (s *Source) onRemoveDoc(ctx context.Context, data json.RawMessage) error {
	var d struct {
		IDs []string `json:"ids"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	return s.removeDocs(ctx, d.IDs)
}

// removeDocs deletes documents ids, and forgets that they changed.
func (s *Source) removeDocs(ctx context.Context, ids []string) error {
	for _, id := range ids {
		s.undirty(id)
		if err := s.remove(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// onUnmount handles a notebook closed (/api/notebook/closeNotebook): its
// documents leave the kernel's SQL but not the disk; the index keeps
// them, marked closed. (Kernels before 3.x said "unmount" for a removed
// notebook too: one no longer listed is removed.)
func (s *Source) onUnmount(ctx context.Context, data json.RawMessage) error {
	box := eventBox(data)
	if box == "" {
		return nil
	}
	if err := s.loadNotebooks(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	_, listed := s.names[box]
	s.mu.Unlock()
	if !listed {
		return s.removeBox(ctx, box)
	}
	n := 0
	err := s.eachDoc(ctx, func(id string, st *docState) error {
		if st.Box != box {
			return nil
		}
		s.undirty(id)
		kept, err := s.keepClosed(ctx, id)
		if kept {
			n++
		}
		return err
	})
	s.log.Info().Str("box", box).Int("docs", n).Msg("siyuan: notebook closed; its documents stay indexed, marked closed")
	return err
}

// onMount handles a notebook opened: its documents are back in SQL
// (unchanged ones are not sent again; the reconciliation clears their
// closed mark).
func (s *Source) onMount(ctx context.Context) error {
	if err := s.loadNotebooks(ctx); err != nil {
		return err
	}
	_, err := s.Reconcile(ctx, nil)
	return err
}

// onRenameNotebook marks every document of the renamed notebook changed
// (the notebook's name is in their paths).
func (s *Source) onRenameNotebook(ctx context.Context, data json.RawMessage) error {
	box := eventBox(data)
	if box == "" {
		return nil
	}
	if err := s.loadNotebooks(ctx); err != nil {
		return err
	}
	return s.eachDoc(ctx, func(id string, st *docState) error {
		if st.Box == box {
			s.markDirty(id)
		}
		return nil
	})
}

// onSyncMerge applies a cloud sync's merge: upserted documents are read
// again, removed ones deleted.
func (s *Source) onSyncMerge(ctx context.Context, data json.RawMessage) error {
	var d struct {
		Upsert []string `json:"upsertRootIDs"`
		Remove []string `json:"removeRootIDs"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	for _, id := range d.Upsert {
		s.markDirty(id)
	}
	return s.removeDocs(ctx, d.Remove)
}

// onIndexCommit reads the changed documents now that the kernel has
// committed its index, instead of waiting out the coalescing window.
func (s *Source) onIndexCommit() {
	s.mu.Lock()
	n := len(s.dirty)
	s.mu.Unlock()
	if n > 0 {
		s.poke()
	}
}

// docIDOfPath is the document id of a .sy path such as /a/b/<id>.sy.
func docIDOfPath(p string) string {
	base := strings.TrimSuffix(path.Base(p), ".sy")
	if base == "." || base == "/" || base == "" {
		return ""
	}
	return base
}

func (s *Source) markDirty(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty[id] = true
	if s.timer == nil {
		s.timer = time.AfterFunc(s.cfg.Coalesce, s.poke)
	}
}

func (s *Source) undirty(id string) {
	s.mu.Lock()
	delete(s.dirty, id)
	s.mu.Unlock()
}

func (s *Source) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Flush reads and sends the documents marked changed (after asking the
// kernel to write its pending transactions to SQL). It returns how many it
// sent.
func (s *Source) Flush(ctx context.Context) (int, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.dirty))
	for id := range s.dirty {
		ids = append(ids, id)
	}
	s.dirty = map[string]bool{}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return 0, nil
	}
	if err := s.client.Flush(ctx); err != nil {
		s.requeue(ids)
		return 0, err
	}
	s.mu.Lock()
	known := s.names != nil
	s.mu.Unlock()
	if !known {
		if err := s.loadNotebooks(ctx); err != nil {
			s.requeue(ids)
			return 0, err
		}
	}
	sent := 0
	for i, id := range ids {
		prev, err := s.load(ctx, id)
		if err != nil {
			s.requeue(ids[i:])
			return sent, err
		}
		ok, err := s.sync(ctx, id, prev)
		if err != nil {
			if ctx.Err() != nil {
				s.requeue(ids[i:])
				return sent, err
			}
			s.log.Warn().Err(err).Str("doc_id", id).Msg("siyuan: document not read; the next reconciliation tries again")
			continue
		}
		if ok {
			sent++
		}
	}
	return sent, nil
}

func (s *Source) requeue(ids []string) {
	for _, id := range ids {
		s.markDirty(id)
	}
}

// removeBox deletes every document sent from notebook box.
func (s *Source) removeBox(ctx context.Context, box string) error {
	return s.eachDoc(ctx, func(id string, st *docState) error {
		if st.Box != box {
			return nil
		}
		s.undirty(id)
		return s.remove(ctx, id)
	})
}

// eachDoc calls f for every document the source remembers.
func (s *Source) eachDoc(ctx context.Context, f func(id string, st *docState) error) error {
	keys, err := s.state.Keys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		id, ok := strings.CutPrefix(k, statePrefix)
		if !ok {
			continue
		}
		st, err := s.load(ctx, id)
		if err != nil {
			return err
		}
		if st != nil {
			if err := f(id, st); err != nil {
				return err
			}
		}
	}
	return nil
}
