package siyuan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// ErrGone is a document the kernel no longer has.
var ErrGone = errors.New("siyuan: document not found")

// ErrHidden is a hidden document (custom-hidden="true"): not a note, never
// synced. A notebook's own document (its id is the notebook's, shown when
// fileTree.boxDocEnabled, on by default in 3.7) is hidden only while empty.
var ErrHidden = errors.New("siyuan: a notebook's hidden document")

// NotebookDocMeta marks (Meta, "true") a notebook's own document.
const NotebookDocMeta = "notebook_document"

// blockCols are the blocks columns a document is built from.
const blockCols = "id, parent_id, root_id, box, path, hpath, type, subtype, content, markdown, created, updated, ial, tag, alias"

// idAttr finds the block ids of a kramdown text in document order.
var idAttr = regexp.MustCompile(`\bid="([^"]+)"`)

// FetchDoc reads the document rootID from the kernel: its blocks (SQL,
// paged, duplicates removed), their order (the document's kramdown), and
// their references (the refs table). notebooks names the boxes for the
// title path; it may be nil.
func (c *Client) FetchDoc(ctx context.Context, rootID string, notebooks map[string]string) (*schemas.DocChanged, error) {
	rows, err := c.SelectAll(ctx, blockCols, "blocks", "root_id = "+quote(rootID), "id", 1000)
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", rootID, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("document %s: %w", rootID, ErrGone)
	}
	var kd struct {
		Kramdown string `json:"kramdown"`
	}
	if err := c.Call(ctx, "/api/block/getBlockKramdown", map[string]string{"id": rootID}, &kd); err != nil {
		return nil, fmt.Errorf("document %s: %w", rootID, err)
	}
	refs, err := c.SelectAll(ctx, "id, block_id, def_block_id", "refs", "root_id = "+quote(rootID), "id", 1000)
	if err != nil {
		return nil, fmt.Errorf("document %s: refs: %w", rootID, err)
	}
	order := map[string]int{}
	for i, m := range idAttr.FindAllStringSubmatch(kd.Kramdown, -1) {
		if _, ok := order[m[1]]; !ok {
			order[m[1]] = i
		}
	}
	return buildDoc(rootID, rows, order, refs, notebooks)
}

// buildDoc assembles the kb.doc.changed event of a document.
func buildDoc(rootID string, rows []Row, order map[string]int, refs []Row, notebooks map[string]string) (*schemas.DocChanged, error) {
	tree, root := newDocTree(rootID, rows)
	if root == nil {
		return nil, fmt.Errorf("document %s: its rows have no document block", rootID)
	}
	boxDoc := rootID == root.Str("box")
	if boxDoc && len(tree.byID) < 2 || !boxDoc && strings.Contains(root.Str("ial"), `custom-hidden="true"`) {
		return nil, fmt.Errorf("document %s: %w", rootID, ErrHidden)
	}
	doc := docHeader(rootID, root, boxDoc, notebooks)
	refsOf := refsByBlock(refs)
	for _, id := range tree.ordered(order) {
		doc.Blocks = append(doc.Blocks, blockOf(id, tree.byID[id], tree.parent(id), refsOf[id]))
	}
	doc.Tags = docTags(rows)
	doc.Hash = docHash(doc)
	return doc, nil
}

// docTags are a document's tags: its tags attribute and the tags in its
// blocks' text, both in the blocks' tag column ("#a# #b c#").
func docTags(rows []Row) []string {
	var tags []string
	for _, r := range rows {
		if t := tagList(r.Str("tag")); t != "" {
			tags = append(tags, strings.Split(t, ",")...)
		}
	}
	return schemas.NormalizeTags(tags)
}

// docHeader is a document's event without its blocks and hash: its
// notebook, title path, properties, parent document and version.
func docHeader(rootID string, root Row, boxDoc bool, notebooks map[string]string) *schemas.DocChanged {
	box, hpath := root.Str("box"), root.Str("hpath")
	doc := &schemas.DocChanged{DocID: rootID, Source: schemas.SourceSiYuan, Notebook: box, Title: root.Str("content"),
		Meta: map[string]string{"hpath": hpath}}
	name := notebooks[box]
	if name != "" {
		doc.Meta["notebook_name"] = name
	}
	if boxDoc {
		doc.Meta[NotebookDocMeta] = "true"
	}
	// The document's tags and aliases (its properties in SiYuan), indexed
	// with its title as Markdown front matter's are.
	if tags := tagList(root.Str("tag")); tags != "" {
		doc.Meta["tags"] = tags
	}
	if alias := aliasList(root.Str("alias")); alias != "" {
		doc.Meta["alias"] = alias
	}
	// A report saved by research --save siyuan carries its research id in
	// the document block's attribute custom-exocortex-report (its ial).
	if id := ialAttr(root.Str("ial"), schemas.ReportAttr); id != "" {
		doc.Meta[schemas.ReportAttr] = id
		doc.Report = true
	}
	doc.TitlePath = titlePath(hpath, name, doc.Title, boxDoc)
	doc.Path = strings.Join(doc.TitlePath, "/")
	if parts := strings.Split(strings.TrimSuffix(strings.Trim(root.Str("path"), "/"), ".sy"), "/"); len(parts) > 1 {
		doc.ParentDocID = parts[len(parts)-2]
	}
	if t, err := time.ParseInLocation("20060102150405", root.Str("updated"), time.Local); err == nil {
		doc.Version = t.UnixNano()
		doc.Updated = t.UTC()
	}
	if t, err := time.ParseInLocation("20060102150405", root.Str("created"), time.Local); err == nil {
		doc.Created = t.UTC()
	}
	doc.NotebookName = name
	return doc
}

// titlePath is a document's titles: its notebook's name (when known), the
// titles of its hpath, and its own title unless hpath ends with it. The
// notebook's own document's title path is the notebook.
func titlePath(hpath, notebookName, title string, boxDoc bool) []string {
	var titles []string
	if notebookName != "" {
		titles = append(titles, notebookName)
	}
	for _, t := range strings.Split(strings.Trim(hpath, "/"), "/") {
		if t != "" {
			titles = append(titles, t)
		}
	}
	if boxDoc {
		titles = titles[:min(len(titles), 1)]
	}
	if len(titles) == 0 || titles[len(titles)-1] != title {
		titles = append(titles, title)
	}
	return titles
}

// refsByBlock is the blocks each block references (the refs table's
// rows), each once.
func refsByBlock(refs []Row) map[string][]string {
	refsOf := map[string][]string{}
	for _, r := range refs {
		from, to := r.Str("block_id"), r.Str("def_block_id")
		if from != "" && to != "" && !slices.Contains(refsOf[from], to) {
			refsOf[from] = append(refsOf[from], to)
		}
	}
	return refsOf
}

// docTree is a document's block rows by id.
type docTree struct {
	rootID string
	byID   map[string]Row
}

// newDocTree indexes rows by id (the first of duplicates SQL's paging
// gives) and returns the document block's row too (nil if absent).
func newDocTree(rootID string, rows []Row) (docTree, Row) {
	t := docTree{rootID: rootID, byID: map[string]Row{}}
	var root Row
	for _, r := range rows {
		id := r.Str("id")
		if _, dup := t.byID[id]; dup {
			continue
		}
		t.byID[id] = r
		if id == rootID {
			root = r
		}
	}
	return t, root
}

// parent is the enclosing block of id ("" for the document): SQL gives a
// block after a heading the heading as parent; the tree's parent is the
// heading's own parent.
func (t docTree) parent(id string) string {
	p := t.byID[id].Str("parent_id")
	for p != "" && p != t.rootID {
		r, ok := t.byID[p]
		if !ok || r.Str("type") != "h" {
			break
		}
		p = r.Str("parent_id")
	}
	if p == t.rootID {
		return ""
	}
	return p
}

// ordered is the document's blocks (the document block aside) in reading
// order. A block's place is the first of its own and its descendants'
// positions in the kramdown (order; a container's attributes close it
// there); a container sorts before its children.
func (t docTree) ordered(order map[string]int) []string {
	pos, depth := map[string]int{}, map[string]int{}
	for id := range t.byID {
		if id == t.rootID {
			continue
		}
		p, ok := order[id]
		if !ok {
			p = len(order) + 1 // not in the kramdown: last
		}
		d := 0
		for a := id; a != ""; a = t.parent(a) {
			if q, ok := pos[a]; !ok || p < q {
				pos[a] = p
			}
			d++
		}
		depth[id] = d
	}
	ids := make([]string, 0, len(pos))
	for id := range pos {
		if _, ok := t.byID[id]; ok && id != t.rootID {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if pos[a] != pos[b] {
			return pos[a] < pos[b]
		}
		if depth[a] != depth[b] {
			return depth[a] < depth[b]
		}
		return a < b
	})
	return ids
}

// blockOf is the shared block of row r, block id, with its enclosing
// block and references.
func blockOf(id string, r Row, parent string, refs []string) schemas.Block {
	b := schemas.Block{ID: id, Type: blockType(r.Str("type")), ParentID: parent, Updated: r.Str("updated"), Refs: refs}
	switch b.Type {
	case schemas.BlockHeading:
		fmt.Sscanf(r.Str("subtype"), "h%d", &b.Level)
		b.Text = r.Str("content")
	case schemas.BlockCode, schemas.BlockTable:
		b.Text = r.Str("markdown")
	case schemas.BlockEmbed:
		b.Text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(r.Str("markdown")), "{{"), "}}")
	case schemas.BlockList, schemas.BlockListItem, schemas.BlockQuote, schemas.BlockSuperBlock, schemas.BlockCallout:
		// containers: their children carry the text
	default:
		b.Text = r.Str("content")
	}
	return b
}

// docHash is the hash of what a document says: its title path, blocks,
// and labels. Tags and aliases count only when set, so the hash of a
// document without them is what it was before they were read.
func docHash(doc *schemas.DocChanged) string {
	raw, _ := json.Marshal(struct {
		T      []string
		Bs     []schemas.Block
		Tags   string `json:",omitempty"`
		Alias  string `json:",omitempty"`
		Report string `json:",omitempty"`
	}{doc.TitlePath, doc.Blocks, doc.Meta["tags"], doc.Meta["alias"], doc.Meta[schemas.ReportAttr]})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// ialAttr is the value of attribute name in a block's ial ({: id="..."
// name="value"}), unescaped as the kernel escapes it; "" when absent.
func ialAttr(ial, name string) string {
	_, rest, ok := strings.Cut(ial, " "+name+`="`)
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return html.UnescapeString(v)
}

// labelsOf is one string for a document's tags and alias (as tagList and
// aliasList give them) and its report mark (the research id of
// custom-exocortex-report), empty when it has none, so that state written
// before labels were tracked matches an unlabelled document (and a
// document's labels from before the report mark was read match too).
func labelsOf(tags, alias, report string) string {
	if report != "" {
		return tags + "\x1f" + alias + "\x1f" + report
	}
	if tags == "" && alias == "" {
		return ""
	}
	return tags + "\x1f" + alias
}

// tagList turns a blocks.tag value ("#a# #b c#": what the kernel writes for
// a document's tags "a,b c") into "a,b c".
func tagList(col string) string {
	col = strings.TrimSpace(col)
	if len(col) < 2 || col[0] != '#' || col[len(col)-1] != '#' {
		return ""
	}
	var tags []string
	for _, t := range strings.Split(col[1:len(col)-1], "# #") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return strings.Join(tags, ",")
}

// aliasList tidies a blocks.alias value (the alias attribute, "a, b") into
// "a,b".
func aliasList(col string) string {
	var out []string
	for _, a := range strings.Split(col, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return strings.Join(out, ",")
}

// blockType maps SiYuan's SQL block types onto the shared ones.
func blockType(t string) string {
	switch t {
	case "h":
		return schemas.BlockHeading
	case "p":
		return schemas.BlockParagraph
	case "l":
		return schemas.BlockList
	case "i":
		return schemas.BlockListItem
	case "c":
		return schemas.BlockCode
	case "t":
		return schemas.BlockTable
	case "b":
		return schemas.BlockQuote
	case "s":
		return schemas.BlockSuperBlock
	case "m":
		return schemas.BlockMath
	case "html":
		return schemas.BlockHTML
	case "query_embed":
		return schemas.BlockEmbed
	case "callout":
		return schemas.BlockCallout
	case "video", "audio", "iframe", "widget":
		return schemas.BlockMedia
	}
	return schemas.BlockOther
}
