// Package siyuantest is a fake SiYuan kernel for tests, built from the
// recordings in ../shared/siyuan-api: the same HTTP API (POST, JSON
// replies {code, msg, data}, "Authorization: Token"), a real SQLite blocks
// and refs table that /api/query/sql runs statements on (with the kernel's
// silent LIMIT 64 and its duplicate rows), and kramdown with block ids.
package siyuantest

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	_ "modernc.org/sqlite" // the database/sql driver
)

var dbSeq atomic.Int64

// Block is one block of a fake document. Parent is the tree parent (""
// for a top-level block); the SQL parent_id is derived as the kernel does.
type Block struct {
	ID, Type, Subtype, Content, Markdown, Parent string
	Refs                                         []string // ids this block references
}

type doc struct {
	id, box, hpath, path, title, updated string
	edited                               string // the blocks' updated: a rename or move leaves it
	blocks                               []Block
	hidden                               bool // a notebook's hidden document
	// attrs are the document block's attributes set with SetBlockAttrs
	// (tags, alias, name, memo, custom-*): they go into its ial and into the
	// tag, alias, name and memo columns.
	attrs map[string]string
}

// DefaultSQLDelay is how long after an API call the real kernel (v3.7.3)
// writes a new document's rows to its SQL index.
const DefaultSQLDelay = 1300 * time.Millisecond

// Kernel is a running fake kernel.
type Kernel struct {
	Token string
	srv   *httptest.Server
	db    *sql.DB

	mu        sync.Mutex
	docs      map[string]*doc
	order     []string // document ids in creation order
	notebooks map[string]string
	calls     map[string]int
	clock     time.Time
	closed    map[string]bool // notebooks closed (unmounted)
	// boxDocOff is fileTree.boxDocEnabled turned off (it is on by default
	// in 3.7: lsNotebooks says "boxDocEnabled": true).
	boxDocOff bool

	// /ws: the connected clients; offline refuses them and drops events
	// (what a client misses while disconnected).
	wmu     sync.Mutex
	conns   map[*websocket.Conn]bool
	offline bool
	muted   bool
	// wsRefused answers /ws with this HTTP status instead of upgrading (a
	// reverse proxy that does not pass WebSockets on); 0: upgrade.
	wsRefused int
	// accessCode, when set, is the kernel's access authorization code:
	// /ws without the session cookie that /api/system/loginAuth sets is
	// accepted and closed at once with "  unauthenticated" (close code
	// 8224), as the real kernel's HandleConnect does; sessions are the
	// cookies handed out.
	accessCode string
	sessions   map[string]bool
	// delay holds SQL writes until /api/sqlite/flushTransaction or this
	// long after the first held one, as the real kernel does (0: at once);
	// pending are the held writes.
	delay   time.Duration
	pending []func() error
	flushAt *time.Timer
}

// New starts a fake kernel that wants token. Like the real kernel, it
// writes SQL rows DefaultSQLDelay after the call that changed them (see
// SetSQLDelay), every notebook has a hidden document, and
// /api/system/version answers without checking the token.
func New(tb testing.TB, token string) *Kernel {
	tb.Helper()
	db, err := sql.Open("sqlite", fmt.Sprintf("file:siyuantest-%d?mode=memory&cache=shared", dbSeq.Add(1)))
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`
CREATE TABLE blocks (id TEXT, parent_id TEXT, root_id TEXT, hash TEXT, box TEXT, path TEXT, hpath TEXT, name TEXT, alias TEXT,
	memo TEXT, tag TEXT, content TEXT, fcontent TEXT, markdown TEXT, length INTEGER, type TEXT, subtype TEXT, ial TEXT,
	sort INTEGER, created TEXT, updated TEXT);
CREATE TABLE refs (id TEXT, def_block_id TEXT, def_block_parent_id TEXT, def_block_root_id TEXT, def_block_path TEXT,
	block_id TEXT, root_id TEXT, box TEXT, path TEXT, content TEXT, markdown TEXT, type TEXT);`); err != nil {
		tb.Fatal(err)
	}
	k := &Kernel{Token: token, db: db, docs: map[string]*doc{}, notebooks: map[string]string{}, calls: map[string]int{},
		conns: map[*websocket.Conn]bool{}, delay: DefaultSQLDelay, closed: map[string]bool{}, sessions: map[string]bool{},
		clock: time.Date(2026, 11, 21, 10, 0, 0, 0, time.Local)}
	k.srv = httptest.NewServer(http.HandlerFunc(k.handle))
	tb.Cleanup(func() { k.Disconnect(); k.srv.Close(); db.Close() })
	return k
}

// URL is the kernel's base URL.
func (k *Kernel) URL() string { return k.srv.URL }

// Calls returns how many times path was called.
func (k *Kernel) Calls(path string) int { k.mu.Lock(); defer k.mu.Unlock(); return k.calls[path] }

// AddNotebook adds a notebook with its hidden document (the notebook's own
// id, attribute custom-hidden="true", titled with the notebook's name), and
// says "createnotebook" on /ws, as the real kernel does.
func (k *Kernel) AddNotebook(id, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.notebooks[id] = name
	if _, ok := k.docs[id]; !ok {
		d := &doc{id: id, box: id, hpath: "/" + name, path: "/" + id + ".sy", title: name, hidden: true, updated: k.tick()}
		k.docs[id] = d
		k.order = append(k.order, id)
		_ = k.write(d)
	}
	k.broadcast("createnotebook", map[string]any{"box": map[string]any{"id": id, "name": name, "closed": false}})
}

// tick advances the kernel's clock by a second: updated has one-second
// resolution, and every write moves it.
func (k *Kernel) tick() string {
	k.clock = k.clock.Add(time.Second)
	return k.clock.Format("20060102150405")
}

// PutDoc creates or replaces the document id in notebook box at hpath
// (such as /Guides/Probe Doc); parent is the enclosing document or "".
func (k *Kernel) PutDoc(box, id, parent, hpath string, blocks ...Block) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	path := "/" + id + ".sy"
	if parent != "" {
		p, ok := k.docs[parent]
		if !ok {
			return fmt.Errorf("no parent document %s", parent)
		}
		path = strings.TrimSuffix(p.path, ".sy") + path
	}
	d, ok := k.docs[id]
	if !ok {
		k.order = append(k.order, id)
		d = &doc{id: id}
		k.docs[id] = d
	}
	renamed := ok && d.hpath != hpath
	d.box, d.hpath, d.path, d.blocks = box, hpath, path, blocks
	d.title = hpath[strings.LastIndex(hpath, "/")+1:]
	d.updated = k.tick()
	d.edited = d.updated
	if err := k.write(d); err != nil {
		return err
	}
	if !ok {
		k.broadcast("create", map[string]any{"box": map[string]any{"id": box, "name": k.notebooks[box], "closed": false},
			"listDocTree": false, "path": path})
	}
	if renamed {
		k.broadcast("rename", map[string]string{"box": box, "id": id, "path": path, "title": d.title})
	}
	k.broadcast("savedoc", map[string]any{"rootID": id, "type": "tx", "sources": []any{}})
	return nil
}

// EditDoc changes a document's blocks with f (insert, update, move or
// delete blocks) and writes it.
func (k *Kernel) EditDoc(id string, f func([]Block) []Block) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, ok := k.docs[id]
	if !ok {
		return fmt.Errorf("no document %s", id)
	}
	d.blocks = f(append([]Block(nil), d.blocks...))
	d.updated = k.tick()
	d.edited = d.updated
	if err := k.write(d); err != nil {
		return err
	}
	k.broadcast("savedoc", map[string]any{"rootID": id, "type": "tx", "sources": []any{}})
	return nil
}

// MoveBlock moves block id (and its children) from one document to the end
// of another, as /api/block/moveBlock does: one savedoc for each.
func (k *Kernel) MoveBlock(id, from, to string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	src, dst := k.docs[from], k.docs[to]
	if src == nil || dst == nil {
		return fmt.Errorf("no document %s or %s", from, to)
	}
	moving := map[string]bool{id: true}
	var keep, moved []Block
	for _, b := range src.blocks {
		if moving[b.ID] || moving[b.Parent] {
			moving[b.ID] = true
			if b.ID == id {
				b.Parent = ""
			}
			moved = append(moved, b)
			continue
		}
		keep = append(keep, b)
	}
	if len(moved) == 0 {
		return fmt.Errorf("no block %s in %s", id, from)
	}
	src.blocks, dst.blocks = keep, append(dst.blocks, moved...)
	src.updated, dst.updated = k.tick(), k.tick()
	src.edited, dst.edited = src.updated, dst.updated
	for _, d := range []*doc{src, dst} {
		if err := k.write(d); err != nil {
			return err
		}
		k.broadcast("savedoc", map[string]any{"rootID": d.id, "type": "tx", "sources": []any{}})
	}
	return nil
}

// RemoveDoc removes a document and its child documents; it returns their ids.
func (k *Kernel) RemoveDoc(id string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, ok := k.docs[id]
	if !ok {
		return nil, fmt.Errorf("no document %s", id)
	}
	prefix := strings.TrimSuffix(d.path, ".sy")
	var gone []string
	for _, o := range k.order {
		if x := k.docs[o]; x != nil && x.box == d.box && (o == id || strings.HasPrefix(x.path, prefix+"/")) {
			gone = append(gone, o)
		}
	}
	for _, g := range gone {
		if err := k.dropDoc(g); err != nil {
			return nil, err
		}
	}
	k.broadcast("removeDoc", map[string]any{"ids": gone})
	return gone, nil
}

// RemoveNotebook removes a notebook and its documents.
func (k *Kernel) RemoveNotebook(box string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.notebooks, box)
	for _, o := range append([]string(nil), k.order...) {
		if d := k.docs[o]; d != nil && d.box == box {
			if err := k.dropDoc(o); err != nil {
				return err
			}
		}
	}
	k.broadcast("removeBox", map[string]string{"box": box})
	return nil
}

// SetBlockAttrs sets attributes of the document id, as
// /api/attr/setBlockAttrs does on a document block: an empty value removes
// one. Like the real kernel (v3.7.3) it keeps the document's updated, writes
// the attributes into the ial and the tag ("#a# #b#" from tags "a,b"), alias,
// name and memo columns, and says "transactions" with an updateAttrs
// operation on /ws (no savedoc).
func (k *Kernel) SetBlockAttrs(id string, attrs map[string]string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.setBlockAttrs(id, attrs)
}

func (k *Kernel) setBlockAttrs(id string, attrs map[string]string) error {
	d, ok := k.docs[id]
	if !ok {
		return fmt.Errorf("block not found [%s]", id)
	}
	old := d.ialAttrs()
	if d.attrs == nil {
		d.attrs = map[string]string{}
	}
	for name, v := range attrs {
		if v == "" {
			delete(d.attrs, name)
		} else {
			d.attrs[name] = v
		}
	}
	if err := k.write(d); err != nil {
		return err
	}
	k.broadcast("transactions", []any{map[string]any{"timestamp": 0, "undoOperations": []any{}, "doOperations": []any{
		map[string]any{"action": "updateAttrs", "id": id, "rootID": id, "parentID": "", "previousID": "", "nextID": "",
			"data": map[string]any{"new": d.ialAttrs(), "old": old}},
	}}})
	return nil
}

// ialAttrs are the document block's attributes as its ial holds them.
func (d *doc) ialAttrs() map[string]string {
	m := map[string]string{"id": d.id, "title": d.title, "type": "doc", "updated": d.updated}
	if d.hidden {
		m["custom-hidden"] = "true"
	}
	for name, v := range d.attrs {
		m[name] = v
	}
	return m
}

// ial renders attributes as kramdown's inline attribute list, sorted by
// name, values escaped as the kernel escapes them.
func ial(attrs map[string]string) string {
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	var sb strings.Builder
	sb.WriteString("{:")
	for _, name := range names {
		fmt.Fprintf(&sb, " %s=\"%s\"", name, html.EscapeString(attrs[name]))
	}
	sb.WriteString("}")
	return sb.String()
}

// tagColumn is the blocks.tag value of a document with the tags attribute
// tags ("a, b" -> "#a# #b#"), as the kernel's tagFromNode writes it.
func tagColumn(tags string) string {
	var out []string
	for _, t := range strings.Split(tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, "#"+t+"#")
		}
	}
	return strings.Join(out, " ")
}

// inlineTag is an inline tag as a block's Markdown holds it: "#tag#".
var inlineTag = regexp.MustCompile(`#([^#\s][^#\n]*?)#`)

// inlineTagColumn is the blocks.tag value of a block whose Markdown is md:
// its inline tags, "#a# #b#", as the kernel's tagFromNode writes them.
func inlineTagColumn(md string) string {
	var out []string
	for _, m := range inlineTag.FindAllStringSubmatch(md, -1) {
		out = append(out, "#"+m[1]+"#")
	}
	return strings.Join(out, " ")
}

// Duplicate inserts a second row of block id, as the real index sometimes has.
func (k *Kernel) Duplicate(id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sqlWrite(func() error {
		_, err := k.db.Exec(`INSERT INTO blocks SELECT * FROM blocks WHERE rowid = (SELECT min(rowid) FROM blocks WHERE id = ?)`, id)
		return err
	})
}

func (k *Kernel) dropDoc(id string) error {
	delete(k.docs, id)
	for i, o := range k.order {
		if o == id {
			k.order = append(k.order[:i], k.order[i+1:]...)
			break
		}
	}
	return k.dropRows(id)
}

func (k *Kernel) dropRows(root string) error {
	return k.sqlWrite(func() error { return k.dropRowsNow(root) })
}

func (k *Kernel) dropRowsNow(root string) error {
	if _, err := k.db.Exec(`DELETE FROM blocks WHERE root_id = ?`, root); err != nil {
		return err
	}
	_, err := k.db.Exec(`DELETE FROM refs WHERE root_id = ?`, root)
	return err
}

// write rewrites a document's rows now, or at the next flush when delayed.
func (k *Kernel) write(d *doc) error {
	snap := *d
	snap.blocks = append([]Block(nil), d.blocks...)
	return k.sqlWrite(func() error { return k.writeDoc(&snap) })
}

// sqlWrite runs f now, or holds it until the next flush when delayed.
func (k *Kernel) sqlWrite(f func() error) error {
	if k.delay <= 0 {
		return f()
	}
	k.pending = append(k.pending, f)
	if k.flushAt == nil {
		k.flushAt = time.AfterFunc(k.delay, func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			_ = k.flush()
		})
	}
	return nil
}

// flush applies the held SQL writes and says so on /ws.
func (k *Kernel) flush() error {
	if k.flushAt != nil {
		k.flushAt.Stop()
		k.flushAt = nil
	}
	if len(k.pending) == 0 {
		return nil
	}
	for _, f := range k.pending {
		if err := f(); err != nil {
			return err
		}
	}
	k.pending = nil
	k.broadcast("databaseIndexCommit", nil)
	return nil
}

// SetSQLDelay sets how long SQL writes wait for a flush
// (/api/sqlite/flushTransaction flushes at once); 0 writes them at once,
// which tests of other things may choose. The default is DefaultSQLDelay.
// Writes held already are applied first.
func (k *Kernel) SetSQLDelay(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = k.flush()
	k.delay = d
}

// SetAsync(true) is SetSQLDelay(DefaultSQLDelay), SetAsync(false) SetSQLDelay(0).
func (k *Kernel) SetAsync(on bool) {
	if on {
		k.SetSQLDelay(DefaultSQLDelay)
	} else {
		k.SetSQLDelay(0)
	}
}

// SetOffline refuses /ws connections and drops events while on, and
// closes the connected ones: what a client misses while disconnected.
func (k *Kernel) SetOffline(on bool) {
	k.wmu.Lock()
	k.offline = on
	k.wmu.Unlock()
	if on {
		k.Disconnect()
	}
}

// SetMuted keeps /ws connections open but sends no events (the plugin
// path is then the only one).
func (k *Kernel) SetMuted(on bool) { k.wmu.Lock(); k.muted = on; k.wmu.Unlock() }

// Disconnect closes every /ws connection.
func (k *Kernel) Disconnect() {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	for c := range k.conns {
		_ = c.CloseNow()
		delete(k.conns, c)
	}
}

// Connected is the number of /ws clients.
func (k *Kernel) Connected() int { k.wmu.Lock(); defer k.wmu.Unlock(); return len(k.conns) }

// Broadcast sends a /ws message to every client, as the kernel pushes it.
func (k *Kernel) Broadcast(cmd string, data any) { k.broadcast(cmd, data) }

func (k *Kernel) broadcast(cmd string, data any) {
	raw, _ := json.Marshal(map[string]any{"cmd": cmd, "app": "", "sid": "", "pushMode": 0, "data": data})
	k.wmu.Lock()
	defer k.wmu.Unlock()
	if k.offline || k.muted {
		return
	}
	for c := range k.conns {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := c.Write(ctx, websocket.MessageText, raw); err != nil {
			_ = c.CloseNow()
			delete(k.conns, c)
		}
		cancel()
	}
}

func (k *Kernel) serveWS(w http.ResponseWriter, r *http.Request) {
	k.wmu.Lock()
	off, refused, code := k.offline, k.wsRefused, k.accessCode
	authed := false
	if ck, err := r.Cookie("siyuan"); err == nil {
		authed = k.sessions[ck.Value]
	}
	k.wmu.Unlock()
	if off {
		http.Error(w, "kernel offline", http.StatusServiceUnavailable)
		return
	}
	if refused != 0 {
		http.Error(w, http.StatusText(refused), refused)
		return
	}
	if code != "" && !authed {
		closeUnauthenticated(w, r)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	k.wmu.Lock()
	k.conns[c] = true
	k.wmu.Unlock()
	for {
		if _, _, err := c.Read(context.Background()); err != nil {
			k.wmu.Lock()
			delete(k.conns, c)
			k.wmu.Unlock()
			return
		}
	}
}

// closeUnauthenticated does what the real kernel (melody) does with a /ws
// that has no session while an access code is set: it completes the
// upgrade, then sends a close frame whose payload is "  unauthenticated"
// (two spaces where the close code goes, so clients read code 8224) and
// drops the connection.
func closeUnauthenticated(w http.ResponseWriter, r *http.Request) {
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	payload := []byte("  unauthenticated")
	buf.Write([]byte{0x88, byte(len(payload))}) // FIN + close, unmasked
	buf.Write(payload)
	_ = buf.Flush()
	time.Sleep(50 * time.Millisecond)
}

// writeDoc rewrites a document's rows, deriving parent_id as the kernel
// does: a top-level block under the nearest heading before it (of a lower
// level, for a heading).
func (k *Kernel) writeDoc(d *doc) error {
	if err := k.dropRowsNow(d.id); err != nil {
		return err
	}
	ins := func(id, parent, typ, sub, content, md string) error {
		upd := d.edited
		if id == d.id || upd == "" {
			upd = d.updated
		}
		attrs := fmt.Sprintf(`{: id="%s" updated="%s"}`, id, upd)
		var name, alias, memo, tag string
		if id == d.id {
			if d.hidden || len(d.attrs) > 0 {
				attrs = ial(d.ialAttrs())
			}
			name, alias, memo, tag = d.attrs["name"], d.attrs["alias"], d.attrs["memo"], tagColumn(d.attrs["tags"])
		} else if typ != "c" {
			tag = inlineTagColumn(md)
		}
		created := upd
		if len(id) > 14 && id[14] == '-' {
			created = id[:14] // the kernel dates a block by its id
		}
		_, err := k.db.Exec(`INSERT INTO blocks (id, parent_id, root_id, hash, box, path, hpath, name, alias, memo, tag, content,
			fcontent, markdown, length, type, subtype, ial, sort, created, updated)
			VALUES (?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, 10, ?, ?)`,
			id, parent, d.id, d.box, d.path, d.hpath, name, alias, memo, tag, content, md, len(content), typ, sub,
			attrs, created, upd)
		return err
	}
	if err := ins(d.id, "", "d", "", d.title, ""); err != nil {
		return err
	}
	var heads []Block // the top-level headings open so far
	for _, b := range d.blocks {
		parent := b.Parent
		if parent == "" {
			parent = d.id
			lvl := headingLevel(b)
			for len(heads) > 0 && lvl > 0 && headingLevel(heads[len(heads)-1]) >= lvl {
				heads = heads[:len(heads)-1]
			}
			if len(heads) > 0 {
				parent = heads[len(heads)-1].ID
			}
			if lvl > 0 {
				heads = append(heads, b)
			}
		}
		if err := ins(b.ID, parent, b.Type, b.Subtype, b.Content, b.Markdown); err != nil {
			return err
		}
		for i, to := range b.Refs {
			// The referenced block as the index holds it: its document,
			// parent, path and content (a dynamic anchor shows the content).
			root, defParent, defPath, defContent := to, "", "", ""
			if x, ok := k.docs[to]; ok {
				defPath, defContent = x.path, x.title
			} else {
				_ = k.db.QueryRow(`SELECT root_id, parent_id, path, content FROM blocks WHERE id = ? LIMIT 1`, to).Scan(&root, &defParent, &defPath, &defContent)
			}
			content, md := refText(b, to, defContent)
			if _, err := k.db.Exec(`INSERT INTO refs (id, def_block_id, def_block_parent_id, def_block_root_id, def_block_path,
				block_id, root_id, box, path, content, markdown, type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'textmark')`,
				fmt.Sprintf("%s-r%d", b.ID, i), to, defParent, root, defPath, b.ID, d.id, d.box, d.path, content, md); err != nil {
				return err
			}
		}
	}
	return nil
}

func headingLevel(b Block) int {
	if b.Type != "h" {
		return 0
	}
	var n int
	fmt.Sscanf(b.Subtype, "h%d", &n)
	return n
}

// kramdown renders a document as the kernel does: each block's Markdown
// followed by its attributes; a container's attributes after its children.
func (k *Kernel) kramdown(d *doc) string {
	var sb strings.Builder
	children := map[string][]Block{}
	for _, b := range d.blocks {
		children[b.Parent] = append(children[b.Parent], b)
	}
	var emit func(b Block)
	emit = func(b Block) {
		if kids := children[b.ID]; len(kids) > 0 {
			for _, c := range kids {
				emit(c)
			}
		} else {
			sb.WriteString(b.Markdown + "\n")
		}
		fmt.Fprintf(&sb, "{: id=\"%s\" updated=\"%s\"}\n\n", b.ID, d.edited)
	}
	for _, b := range children[""] {
		emit(b)
	}
	return sb.String()
}

var limitRe = regexp.MustCompile(`(?i)\blimit\s+\d+`)

func (k *Kernel) handle(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.calls[r.URL.Path]++
	k.mu.Unlock()
	if r.URL.Path == "/ws" {
		k.serveWS(w, r) // the API token does not apply to /ws
		return
	}
	if r.URL.Path == "/api/system/loginAuth" {
		k.loginAuth(w, r)
		return
	}
	auth := r.Header.Get("Authorization")
	// The real kernel answers /api/system/version without checking the token.
	if r.URL.Path != "/api/system/version" && auth != "Token "+k.Token && auth != "Bearer "+k.Token {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": -1, "msg": "Auth failed [header: Authorization]", "data": nil})
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(raw, &req)
	reply := func(data any, err error) {
		if err != nil {
			_ = json.NewEncoder(w).Encode(map[string]any{"code": -1, "msg": err.Error(), "data": nil})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"code": 0, "msg": "", "data": data})
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch r.URL.Path {
	case "/api/system/version":
		reply("3.7.3", nil)
	case "/api/notebook/lsNotebooks":
		nbs := []map[string]any{}
		for id := range k.notebooks {
			nbs = append(nbs, k.boxJSON(id))
		}
		reply(map[string]any{"boxDocEnabled": !k.boxDocOff, "notebooks": nbs}, nil)
	case "/api/notebook/closeNotebook":
		id, _ := req["notebook"].(string)
		reply(nil, k.closeNotebook(id))
	case "/api/notebook/openNotebook":
		id, _ := req["notebook"].(string)
		reply(nil, k.openNotebook(id))
	case "/api/query/sql":
		stmt, _ := req["stmt"].(string)
		if !limitRe.MatchString(stmt) {
			stmt += " LIMIT 64" // what the real kernel does, silently
		}
		reply(k.query(stmt))
	case "/api/attr/setBlockAttrs":
		id, _ := req["id"].(string)
		raw, _ := req["attrs"].(map[string]any)
		attrs := map[string]string{}
		for name, v := range raw {
			attrs[name], _ = v.(string)
		}
		reply(nil, k.setBlockAttrs(id, attrs))
	case "/api/filetree/createDocWithMd":
		box, _ := req["notebook"].(string)
		path, _ := req["path"].(string)
		md, _ := req["markdown"].(string)
		reply(k.createDocWithMd(box, path, md))
	case "/api/sqlite/flushTransaction":
		reply(nil, k.flush())
	case "/api/block/getBlockKramdown":
		id, _ := req["id"].(string)
		d, ok := k.docs[id]
		if !ok {
			reply(nil, fmt.Errorf("block not found [%s]", id))
			return
		}
		reply(map[string]string{"id": id, "kramdown": k.kramdown(d)}, nil)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (k *Kernel) query(stmt string) ([]map[string]any, error) {
	rows, err := k.db.Query(stmt)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := []map[string]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for i, c := range cols {
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Flush applies the held SQL writes now.
func (k *Kernel) Flush() error { k.mu.Lock(); defer k.mu.Unlock(); return k.flush() }

// DropRow deletes block id's SQL rows only: the document's updated does
// not move (a change only an id diff finds).
func (k *Kernel) DropRow(id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, d := range k.docs {
		d.blocks = slices.DeleteFunc(d.blocks, func(b Block) bool { return b.ID == id })
	}
	return k.sqlWrite(func() error {
		_, err := k.db.Exec(`DELETE FROM blocks WHERE id = ?`, id)
		return err
	})
}

// RenameDoc retitles a document: its hpath and its descendants' change
// (the blocks' updated do not), and /ws says "rename" (no savedoc), as the
// kernel does.
func (k *Kernel) RenameDoc(id, title string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, ok := k.docs[id]
	if !ok {
		return fmt.Errorf("no document %s", id)
	}
	old := d.hpath
	nu := old[:strings.LastIndex(old, "/")+1] + title
	prefix := strings.TrimSuffix(d.path, ".sy") + "/"
	for _, o := range k.order {
		x := k.docs[o]
		if o != id && !(x.box == d.box && strings.HasPrefix(x.path, prefix)) {
			continue
		}
		x.hpath = nu + strings.TrimPrefix(x.hpath, old)
		x.title = x.hpath[strings.LastIndex(x.hpath, "/")+1:]
		if o == id {
			x.updated = k.tick()
		}
		if err := k.write(x); err != nil {
			return err
		}
	}
	k.broadcast("rename", map[string]string{"box": d.box, "id": id, "path": d.path, "title": title})
	return nil
}

// RenameNotebook renames a notebook (and the title of its hidden document)
// and says "renamenotebook" on /ws. Documents' hpath does not change: it
// does not hold the notebook's name.
func (k *Kernel) RenameNotebook(id, name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.notebooks[id]; !ok {
		return fmt.Errorf("no notebook %s", id)
	}
	k.notebooks[id] = name
	if d := k.docs[id]; d != nil && d.hidden {
		d.hpath, d.title, d.updated = "/"+name, name, k.tick()
		if err := k.write(d); err != nil {
			return err
		}
	}
	k.broadcast("renamenotebook", map[string]string{"box": id, "name": name})
	return nil
}

// MoveDoc moves a document (with its child documents) under the document
// to in the same notebook (to "": to the notebook's top): their path and
// hpath change, their blocks' updated do not, and /ws says "moveDoc".
func (k *Kernel) MoveDoc(id, to string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, ok := k.docs[id]
	if !ok {
		return fmt.Errorf("no document %s", id)
	}
	newDir, newHDir := "/", "/"
	if to != "" {
		p, ok := k.docs[to]
		if !ok {
			return fmt.Errorf("no document %s", to)
		}
		newDir, newHDir = strings.TrimSuffix(p.path, ".sy")+"/", p.hpath+"/"
	}
	oldPath, oldDir := d.path, strings.TrimSuffix(d.path, ".sy")
	oldHPath := d.hpath
	newPath := newDir + id + ".sy"
	newHPath := newHDir + d.title
	for _, o := range k.order {
		x := k.docs[o]
		if o != id && !(x.box == d.box && strings.HasPrefix(x.path, oldDir+"/")) {
			continue
		}
		x.path = strings.TrimSuffix(newPath, ".sy") + strings.TrimPrefix(x.path, oldDir)
		if o == id {
			x.path = newPath
		}
		x.hpath = newHPath + strings.TrimPrefix(x.hpath, oldHPath)
		if err := k.write(x); err != nil {
			return err
		}
	}
	k.broadcast("moveDoc", map[string]string{"fromNotebook": d.box, "fromPath": oldPath, "toNotebook": d.box,
		"toPath": strings.TrimSuffix(newDir, "/") + ".sy", "newPath": newPath})
	return nil
}

// SetWSRefused makes /ws answer with HTTP status instead of upgrading (a
// reverse proxy that does not pass WebSockets on, say 403 or 502); 0 lets
// it upgrade again.
func (k *Kernel) SetWSRefused(status int) { k.wmu.Lock(); k.wsRefused = status; k.wmu.Unlock() }

// SetAccessCode gives the kernel an access authorization code (Settings >
// About > Access authorization code, or SIYUAN_ACCESS_AUTH_CODE in Docker):
// the API token still opens /api/*, but /ws needs the "siyuan" session
// cookie that POST /api/system/loginAuth {"authCode"} sets; without it the
// upgrade is accepted and the connection closed at once with
// "  unauthenticated" (close code 8224). "" removes it.
func (k *Kernel) SetAccessCode(code string) {
	k.wmu.Lock()
	k.accessCode = code
	k.wmu.Unlock()
	if code != "" {
		k.Disconnect()
	}
}

// loginAuth checks an access authorization code and hands out the session
// cookie /ws then accepts. (The real kernel's refusal message is not in the
// recordings; this one says what failed.)
func (k *Kernel) loginAuth(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AuthCode string `json:"authCode"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	k.wmu.Lock()
	defer k.wmu.Unlock()
	if k.accessCode == "" || req.AuthCode != k.accessCode {
		_ = json.NewEncoder(w).Encode(map[string]any{"code": -1, "msg": "Authentication failed: wrong access authorization code", "data": nil})
		return
	}
	sess := fmt.Sprintf("session-%d", len(k.sessions)+1)
	k.sessions[sess] = true
	http.SetCookie(w, &http.Cookie{Name: "siyuan", Value: sess, Path: "/", HttpOnly: true})
	_ = json.NewEncoder(w).Encode(map[string]any{"code": 0, "msg": "", "data": nil})
}

// SetBoxDocEnabled sets fileTree.boxDocEnabled (on by default in 3.7: a
// notebook's own document, its hidden document, is shown and written to).
func (k *Kernel) SetBoxDocEnabled(on bool) { k.mu.Lock(); k.boxDocOff = !on; k.mu.Unlock() }

// boxJSON is a notebook as lsNotebooks and the mount event carry it.
func (k *Kernel) boxJSON(id string) map[string]any {
	return map[string]any{"id": id, "name": k.notebooks[id], "icon": "", "sort": 0, "sortMode": 15, "closed": k.closed[id],
		"subFileCount": 0, "newFlashcardCount": 0, "dueFlashcardCount": 0, "flashcardCount": 0, "encrypted": false, "unlocked": false}
}

// CloseNotebook closes a notebook as /api/notebook/closeNotebook does: its
// documents leave the SQL index (box.Unindex) but stay on disk, lsNotebooks
// lists it with "closed": true, and /ws says "unmount" {box}.
func (k *Kernel) CloseNotebook(box string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.closeNotebook(box)
}

func (k *Kernel) closeNotebook(box string) error {
	if _, ok := k.notebooks[box]; !ok {
		return fmt.Errorf("notebook [%s] not found", box)
	}
	k.closed[box] = true
	for _, o := range k.order {
		if d := k.docs[o]; d != nil && d.box == box {
			id := o
			if err := k.sqlWrite(func() error { return k.dropRowsNow(id) }); err != nil {
				return err
			}
		}
	}
	k.broadcast("unmount", map[string]any{"box": box})
	return nil
}

// OpenNotebook opens a closed notebook as /api/notebook/openNotebook does:
// its documents are indexed again (their updated unchanged) and /ws says
// "mount" {box: the notebook, existed}.
func (k *Kernel) OpenNotebook(box string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.openNotebook(box)
}

func (k *Kernel) openNotebook(box string) error {
	if _, ok := k.notebooks[box]; !ok {
		return fmt.Errorf("notebook [%s] not found", box)
	}
	existed := !k.closed[box]
	delete(k.closed, box)
	for _, o := range k.order {
		if d := k.docs[o]; d != nil && d.box == box {
			if err := k.write(d); err != nil {
				return err
			}
		}
	}
	k.broadcast("mount", map[string]any{"box": k.boxJSON(box), "existed": existed})
	return nil
}
