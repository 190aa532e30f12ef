// Package siyuan is the live SiYuan source: it reads a running kernel's
// notebooks through its HTTP API, follows its /ws events, and publishes
// kb.doc.changed for each document that changed.
package siyuan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// ErrAuth is a kernel refusing the API token: retrying cannot help.
var ErrAuth = errors.New("siyuan: the kernel refused the API token (Settings > About > API token, or api.token in <workspace>/conf/conf.json)")

// Client calls a SiYuan kernel's HTTP API. The token is sent as
// "Authorization: Token <token>" and never appears in errors or logs.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client // default: 30 s timeout
}

// NewClient returns a client of the kernel at baseURL.
func NewClient(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// reply is every API answer: code 0 and data, or an error message.
type reply struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// Call posts req (JSON) to path (such as /api/query/sql) and decodes the
// reply's data into out (when out is not nil).
func (c *Client) Call(ctx context.Context, path string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("siyuan %s: %w", path, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("siyuan %s: %w", path, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		hr.Header.Set("Authorization", "Token "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return fmt.Errorf("siyuan %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("siyuan %s: reading the reply: %w", path, err)
	}
	var r reply
	jerr := json.Unmarshal(raw, &r)
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden ||
		(jerr == nil && r.Code != 0 && strings.Contains(r.Msg, "Auth failed")) {
		return fmt.Errorf("siyuan %s at %s: %w", path, c.BaseURL, ErrAuth)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("siyuan %s: HTTP %d: %s", path, resp.StatusCode, snippet(raw))
	}
	if jerr != nil {
		return fmt.Errorf("siyuan %s: a reply that is not the API's JSON (%v): %s", path, jerr, snippet(raw))
	}
	if r.Code != 0 {
		return fmt.Errorf("siyuan %s: code %d: %s", path, r.Code, r.Msg)
	}
	if out == nil || len(r.Data) == 0 || string(r.Data) == "null" {
		return nil
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("siyuan %s: unexpected data (%v): %s", path, err, snippet(r.Data))
	}
	return nil
}

func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Version returns the kernel's version. The kernel answers it without
// checking the token: Check does.
func (c *Client) Version(ctx context.Context) (string, error) {
	var v string
	err := c.Call(ctx, "/api/system/version", nil, &v)
	return v, err
}

// Check reaches the kernel with a call that needs the token
// (/api/notebook/lsNotebooks): a refused token is ErrAuth.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.Notebooks(ctx)
	return err
}

// Notebook is one of the kernel's notebooks (boxes).
type Notebook struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Closed bool   `json:"closed"`
}

// Notebooks lists the kernel's notebooks (closed ones too, Closed set).
func (c *Client) Notebooks(ctx context.Context) ([]Notebook, error) {
	l, err := c.ListNotebooks(ctx)
	return l.Notebooks, err
}

// NotebookList is lsNotebooks' answer: the notebooks, and whether the
// notebooks' own documents are shown (fileTree.boxDocEnabled, on by default
// in 3.7: a notebook's top-level document can hold notes).
type NotebookList struct {
	Notebooks     []Notebook `json:"notebooks"`
	BoxDocEnabled bool       `json:"boxDocEnabled"`
}

// ListNotebooks lists the kernel's notebooks with its boxDocEnabled setting.
func (c *Client) ListNotebooks(ctx context.Context) (NotebookList, error) {
	var out NotebookList
	err := c.Call(ctx, "/api/notebook/lsNotebooks", nil, &out)
	return out, err
}

// ErrAccessCode is a kernel refusing the access authorization code.
var ErrAccessCode = errors.New("siyuan: the kernel refused the access authorization code (EXOCORTEX_SIYUAN_ACCESS_CODE)")

// LoginAuth logs in with the kernel's access authorization code (POST
// /api/system/loginAuth {"authCode"}) and returns the "siyuan" session
// cookie that /ws then accepts. The API token opens /api/* with or without
// an access code; /ws needs this cookie when the kernel has one.
func (c *Client) LoginAuth(ctx context.Context, code string) (*http.Cookie, error) {
	body, _ := json.Marshal(map[string]string{"authCode": code})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/api/system/loginAuth", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("siyuan /api/system/loginAuth: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("siyuan /api/system/loginAuth: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var r reply
	if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("siyuan /api/system/loginAuth: HTTP %d: %s", resp.StatusCode, snippet(raw))
	}
	if r.Code != 0 {
		return nil, fmt.Errorf("siyuan /api/system/loginAuth at %s (%s): %w", c.BaseURL, r.Msg, ErrAccessCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "siyuan" {
			return ck, nil
		}
	}
	return nil, fmt.Errorf("siyuan /api/system/loginAuth at %s: accepted, but no \"siyuan\" session cookie came back", c.BaseURL)
}

// Row is one row of a SQL reply.
type Row map[string]any

// Str returns a column as a string ("" when absent or null).
func (r Row) Str(col string) string {
	switch v := r[col].(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// Int returns a numeric column as an int (0 when absent or not a number).
func (r Row) Int(col string) int {
	switch v := r[col].(type) {
	case float64:
		return int(v)
	case string:
		var n int
		fmt.Sscan(v, &n)
		return n
	}
	return 0
}

// SQL runs one statement through /api/query/sql. The kernel caps a
// statement without LIMIT at 64 rows silently, so a statement without one
// is refused here: page with SelectAll.
func (c *Client) SQL(ctx context.Context, stmt string) ([]Row, error) {
	if !strings.Contains(strings.ToUpper(stmt), " LIMIT ") {
		return nil, fmt.Errorf("siyuan sql: %q has no LIMIT (the kernel would cut it at 64 rows)", stmt)
	}
	var rows []Row
	if err := c.Call(ctx, "/api/query/sql", map[string]string{"stmt": stmt}, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// SelectAll runs "SELECT cols FROM table WHERE where" page by page, keyed
// on key (a unique-ish column: SiYuan's tables have duplicate rows, which
// come out once), and returns every row in key order.
func (c *Client) SelectAll(ctx context.Context, cols, table, where, key string, page int) ([]Row, error) {
	if page <= 0 {
		page = 1000
	}
	var out []Row
	last := ""
	for {
		cond := fmt.Sprintf("%s > %s", key, quote(last))
		if where != "" {
			cond = "(" + where + ") AND " + cond
		}
		rows, err := c.SQL(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d", cols, table, cond, key, page))
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			k := r.Str(key)
			if k == last && len(out) > 0 {
				continue // a duplicate row
			}
			out = append(out, r)
			last = k
		}
		if len(rows) < page {
			return out, nil
		}
		if rows[len(rows)-1].Str(key) == "" {
			return nil, fmt.Errorf("siyuan sql: paging %s needs the column %s in the rows", table, key)
		}
	}
}

// quote makes s a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DescendantDocs returns the ids of the documents under document id (its
// children, their children...), whose title paths change with its own.
func (c *Client) DescendantDocs(ctx context.Context, id string) ([]string, error) {
	rows, err := c.SelectAll(ctx, "id", "blocks", "type = 'd' AND "+notHidden+" AND path LIKE "+quote("%/"+id+"/%"), "id", 1000)
	if err != nil {
		return nil, fmt.Errorf("documents under %s: %w", id, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Str("id")
	}
	return out, nil
}

// Flush asks the kernel to write pending transactions to its SQL index
// (which it otherwise does about every 3 s).
func (c *Client) Flush(ctx context.Context) error {
	return c.Call(ctx, "/api/sqlite/flushTransaction", map[string]any{}, nil)
}

// DocInfo is a document as the blocks table lists it.
type DocInfo struct {
	ID, Box, Updated, HPath string
	// Labels are the document's tags, alias and report mark (see
	// labelsOf): the kernel leaves updated alone when they change.
	Labels string
}

// notHidden leaves out the hidden document every notebook has (the
// notebook's own id, custom-hidden="true"): it is not a note.
const notHidden = `id != box AND ial NOT LIKE '%custom-hidden="true"%'`

// Docs lists every document of the kernel (paged; duplicates once), in the
// notebooks keep allows (nil: all), without the notebooks' hidden documents.
func (c *Client) Docs(ctx context.Context, keep func(box string) bool) ([]DocInfo, error) {
	return c.docs(ctx, keep, "type = 'd' AND "+notHidden)
}

// NotebookDocs lists the notebooks' own documents (hidden, with the
// notebook's id; shown and written to when fileTree.boxDocEnabled, on by
// default in 3.7), in the notebooks keep allows (nil: all).
func (c *Client) NotebookDocs(ctx context.Context, keep func(box string) bool) ([]DocInfo, error) {
	return c.docs(ctx, keep, "type = 'd' AND id = box")
}

func (c *Client) docs(ctx context.Context, keep func(box string) bool, where string) ([]DocInfo, error) {
	rows, err := c.SelectAll(ctx, "id, box, updated, hpath, tag, alias, ial", "blocks", where, "id", 1000)
	if err != nil {
		return nil, fmt.Errorf("listing documents: %w", err)
	}
	out := make([]DocInfo, 0, len(rows))
	for _, r := range rows {
		if keep == nil || keep(r.Str("box")) {
			out = append(out, DocInfo{ID: r.Str("id"), Box: r.Str("box"), Updated: r.Str("updated"), HPath: r.Str("hpath"),
				Labels: labelsOf(tagList(r.Str("tag")), aliasList(r.Str("alias")), ialAttr(r.Str("ial"), schemas.ReportAttr))})
		}
	}
	return out, nil
}

// BlockCounts returns the number of distinct blocks of every document
// (paged): a document whose count changed lost or gained blocks, even when
// a delete missed while disconnected left its updated stamp alone.
func (c *Client) BlockCounts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	last := ""
	const page = 1000
	for {
		rows, err := c.SQL(ctx, fmt.Sprintf("SELECT root_id, count(DISTINCT id) AS n FROM blocks WHERE root_id > %s GROUP BY root_id ORDER BY root_id LIMIT %d", quote(last), page))
		if err != nil {
			return nil, fmt.Errorf("counting blocks: %w", err)
		}
		for _, r := range rows {
			last = r.Str("root_id")
			out[last] = r.Int("n") - 1 // the document block itself
		}
		if len(rows) < page {
			return out, nil
		}
	}
}

// CreateDocWithMd creates a document in notebook at the title path path
// (such as /Research/My report; missing parent documents are created too)
// from markdown, through /api/filetree/createDocWithMd, and returns the new
// document's id. Block references in markdown, ((<block id> "anchor")),
// become references to those blocks (the kernel's refs table, backlinks).
func (c *Client) CreateDocWithMd(ctx context.Context, notebook, path, markdown string) (string, error) {
	if notebook == "" || !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("siyuan createDocWithMd: want a notebook and a path that begins with /, got %q and %q", notebook, path)
	}
	var id string
	if err := c.Call(ctx, "/api/filetree/createDocWithMd", map[string]string{"notebook": notebook, "path": path, "markdown": markdown}, &id); err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("siyuan createDocWithMd %s: the kernel returned no document id", path)
	}
	return id, nil
}

// SetBlockAttrs sets attributes of block id (a document's id: its document
// block) through /api/attr/setBlockAttrs. Custom attributes are named
// custom-*; an empty value removes one. The kernel keeps the block's
// updated and says "transactions" with an updateAttrs operation on /ws.
func (c *Client) SetBlockAttrs(ctx context.Context, id string, attrs map[string]string) error {
	if id == "" || len(attrs) == 0 {
		return fmt.Errorf("siyuan setBlockAttrs: want a block id and attributes, got %q and %d", id, len(attrs))
	}
	return c.Call(ctx, "/api/attr/setBlockAttrs", map[string]any{"id": id, "attrs": attrs}, nil)
}
