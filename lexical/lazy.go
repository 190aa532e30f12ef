package lexical

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// lazyLists are the lists of a snapshot read (format 03) that no search or
// write has asked for yet: they stay in the snapshot's bytes, found through
// each column group's term table, and are checked and decoded on first
// use. A term's list in the index's maps (words, lemmas) takes precedence
// over its list here: a write moves a list there before changing it.
type lazyLists struct {
	groups [2]lazyGroup // words, lemmas
	// rows is the number of rows the snapshot held: its lists' row numbers
	// are under it.
	rows uint32

	mu  sync.Mutex
	got [2]map[string]plist // lists decoded for searches (under the index's read lock)
	err error               // the first list found damaged
}

// lazyGroup is one column group's lists and term table (see WriteSnapshot).
type lazyGroup struct {
	lists, table []byte
	terms        int
}

// find returns term t's list in group g as stored, unchecked; ok false
// when the group has no such term. A damaged table or entry is err.
func (l *lazyLists) find(g int, t string) (p plist, ok bool, err error) {
	lg := &l.groups[g]
	slots := uint64(len(lg.table) / 4)
	if slots == 0 {
		return plist{}, false, nil
	}
	for i, probes := termHash(t)&(slots-1), uint64(0); probes < slots; i, probes = (i+1)&(slots-1), probes+1 {
		e := binary.LittleEndian.Uint32(lg.table[4*i:])
		if e == 0 {
			return plist{}, false, nil
		}
		d := decoder{b: lg.lists}
		if uint64(e-1) >= uint64(len(d.b)) {
			return plist{}, false, fmt.Errorf("%w: term table entry %d points past the lists", ErrCorrupt, i)
		}
		d.b = d.b[e-1:]
		n := d.uv()
		if d.err != nil || n > uint64(len(d.b)) {
			return plist{}, false, fmt.Errorf("%w: bad term at %d", ErrCorrupt, e-1)
		}
		if string(d.b[:n]) != t {
			continue
		}
		d.b = d.b[n:]
		np, size := d.uv(), d.uv()
		if d.err != nil || np == 0 || np > uint64(l.rows) || size > uint64(len(d.b)) {
			return plist{}, false, fmt.Errorf("%w: bad list of term %q", ErrCorrupt, t)
		}
		// Capacity cut to the list: an append copies it out.
		return plist{buf: d.b[:size:size], n: uint32(np)}, true, nil
	}
	return plist{}, false, nil
}

// get returns term t's list in group g, checked, decoding it on first use;
// a damaged one is recorded (Index.Err) and read as empty.
func (l *lazyLists) get(g int, t string) plist {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.got[g][t]; ok {
		return p
	}
	p, ok, err := l.find(g, t)
	if ok {
		d := decoder{}
		if p = d.check(p, l.rows); d.err != nil {
			err = fmt.Errorf("list of term %q: %w", t, d.err)
		}
	}
	if err != nil {
		if l.err == nil {
			l.err = err
		}
		p = plist{}
	}
	if l.got[g] == nil {
		l.got[g] = map[string]plist{}
	}
	l.got[g][t] = p
	return p
}

// list returns term t's postings in group g (0 words, 1 lemmas), from the
// maps or, read from a snapshot and not yet asked for, from x.lazy. Safe
// under the read lock.
func (x *Index) list(g int, t string) plist {
	if p, ok := x.groupLists(g)[t]; ok || x.lazy == nil {
		return p
	}
	return x.lazy.get(g, t)
}

func (x *Index) groupLists(g int) map[string]plist {
	if g == 0 {
		return x.words
	}
	return x.lemmas
}

// materialize moves every list still in x.lazy into the maps, checked, so
// that the maps hold the whole index (for a compaction, a snapshot, the
// statistics). Called with the write lock held.
func (x *Index) materialize() {
	l := x.lazy
	if l == nil {
		return
	}
	x.lazy = nil
	for g := range l.groups {
		lists := x.groupLists(g)
		d := decoder{b: l.groups[g].lists}
		for range l.groups[g].terms {
			t := d.str()
			np, size := d.uv(), d.uv()
			if d.err != nil || np == 0 || np > uint64(l.rows) || size > uint64(len(d.b)) {
				l.fail(fmt.Errorf("%w: the term lists end early", ErrCorrupt))
				break
			}
			buf := d.b[:size:size]
			d.b = d.b[size:]
			if _, ok := lists[t]; ok {
				continue // changed since the read: the map's is current
			}
			c := decoder{}
			p := c.check(plist{buf: buf, n: uint32(np)}, l.rows)
			if c.err != nil {
				l.fail(fmt.Errorf("list of term %q: %w", t, c.err))
				continue
			}
			lists[t] = p
		}
	}
	if l.err != nil && x.lazyErr == nil {
		x.lazyErr = l.err
	}
}

func (l *lazyLists) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// Err is the first damage found in a list of the snapshot the index was
// read from, when lists are checked as they are first used (format 03): its
// term was read as absent, so the index is not the snapshot's. The store
// then builds the index anew.
func (x *Index) Err() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.lazy != nil {
		x.lazy.mu.Lock()
		defer x.lazy.mu.Unlock()
		if x.lazy.err != nil {
			return x.lazy.err
		}
	}
	return x.lazyErr
}
