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
const blockCols = "id, parent_id, root_id, box, path, hpath, type, subtype, content, markdown, updated, ial, tag, alias"

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
	byID := map[string]Row{}
	var root Row
	for _, r := range rows {
		id := r.Str("id")
		if _, dup := byID[id]; dup {
			continue
		}
		byID[id] = r
		if id == rootID {
			root = r
		}
	}
	if root == nil {
		return nil, fmt.Errorf("document %s: its rows have no document block", rootID)
	}
	box, hpath := root.Str("box"), root.Str("hpath")
	boxDoc := rootID == box
	if boxDoc && len(byID) < 2 || !boxDoc && strings.Contains(root.Str("ial"), `custom-hidden="true"`) {
		return nil, fmt.Errorf("document %s: %w", rootID, ErrHidden)
	}
	doc := &schemas.DocChanged{DocID: rootID, Source: schemas.SourceSiYuan, Notebook: box, Title: root.Str("content"),
		Meta: map[string]string{"hpath": hpath}}
	var titles []string
	if name := notebooks[box]; name != "" {
		titles = append(titles, name)
		doc.Meta["notebook_name"] = name
	}
	for _, t := range strings.Split(strings.Trim(hpath, "/"), "/") {
		if t != "" {
			titles = append(titles, t)
		}
	}
	if boxDoc {
		// The notebook's own document: its title path is the notebook.
		titles = titles[:min(len(titles), 1)]
		doc.Meta[NotebookDocMeta] = "true"
	}
	if len(titles) == 0 || titles[len(titles)-1] != doc.Title {
		titles = append(titles, doc.Title)
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
	doc.TitlePath = titles
	doc.Path = strings.Join(titles, "/")
	if parts := strings.Split(strings.TrimSuffix(strings.Trim(root.Str("path"), "/"), ".sy"), "/"); len(parts) > 1 {
		doc.ParentDocID = parts[len(parts)-2]
	}
	if t, err := time.ParseInLocation("20060102150405", root.Str("updated"), time.Local); err == nil {
		doc.Version = t.UnixNano()
	}

	refsOf := map[string][]string{}
	for _, r := range refs {
		from, to := r.Str("block_id"), r.Str("def_block_id")
		if from != "" && to != "" && !slices.Contains(refsOf[from], to) {
			refsOf[from] = append(refsOf[from], to)
		}
	}
	// parent is the enclosing block: SQL gives a block after a heading the
	// heading as parent; the tree's parent is the heading's own parent.
	parent := func(id string) string {
		p := byID[id].Str("parent_id")
		for p != "" && p != rootID {
			r, ok := byID[p]
			if !ok || r.Str("type") != "h" {
				break
			}
			p = r.Str("parent_id")
		}
		if p == rootID {
			return ""
		}
		return p
	}
	// A block's place is the first of its own and its descendants'
	// positions in the kramdown (a container's attributes close it there);
	// a container sorts before its children.
	pos, depth := map[string]int{}, map[string]int{}
	for id := range byID {
		if id == rootID {
			continue
		}
		p, ok := order[id]
		if !ok {
			p = len(order) + 1 // not in the kramdown: last
		}
		d := 0
		for a := id; a != ""; a = parent(a) {
			if q, ok := pos[a]; !ok || p < q {
				pos[a] = p
			}
			d++
		}
		depth[id] = d
	}
	ids := make([]string, 0, len(pos))
	for id := range pos {
		if _, ok := byID[id]; ok && id != rootID {
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
	for _, id := range ids {
		r := byID[id]
		b := schemas.Block{ID: id, Type: blockType(r.Str("type")), ParentID: parent(id), Updated: r.Str("updated"), Refs: refsOf[id]}
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
		doc.Blocks = append(doc.Blocks, b)
	}
	// Tags and aliases count only when set, so the hash of a document
	// without them is what it was before they were read.
	raw, _ := json.Marshal(struct {
		T      []string
		Bs     []schemas.Block
		Tags   string `json:",omitempty"`
		Alias  string `json:",omitempty"`
		Report string `json:",omitempty"`
	}{doc.TitlePath, doc.Blocks, doc.Meta["tags"], doc.Meta["alias"], doc.Meta[schemas.ReportAttr]})
	sum := sha256.Sum256(raw)
	doc.Hash = hex.EncodeToString(sum[:])
	return doc, nil
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
