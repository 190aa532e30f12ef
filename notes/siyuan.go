package notes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// idRe matches SiYuan block, document and notebook ids (YYYYMMDDhhmmss-xxxxxxx;
// a few hand-made ids have more than 7 characters after the dash).
var idRe = regexp.MustCompile(`^\d{14}-[0-9a-z]+$`)

// Notebook is a SiYuan notebook folder: <Dir> is named after its ID and holds
// .siyuan/conf.json (with the Name) and the .sy documents, child documents in
// a folder named after their parent's id. Copies of a Notebook share a cache of
// document titles; it is not safe for concurrent use.
type Notebook struct {
	ID, Name, Dir string
	titles        map[string]string // doc id -> title, for title paths
}

// LoadNotebook reads the notebook at dir: its id is the folder name and its
// name comes from .siyuan/conf.json. A missing conf.json leaves Name empty; an
// unreadable one is an error (the Notebook is still usable, without a name).
func LoadNotebook(dir string) (Notebook, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Notebook{}, fmt.Errorf("siyuan notebook %s: %w", dir, err)
	}
	nb := Notebook{ID: filepath.Base(abs), Dir: abs, titles: map[string]string{}}
	confPath := filepath.Join(abs, ".siyuan", "conf.json")
	data, err := os.ReadFile(confPath)
	if os.IsNotExist(err) {
		return nb, nil
	}
	if err != nil {
		return nb, err
	}
	var conf struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		return nb, fmt.Errorf("siyuan notebook conf %s: %w", confPath, err)
	}
	nb.Name = conf.Name
	return nb, nil
}

// notebookDir finds the notebook folder of a .sy file: among the ancestors
// whose names look like SiYuan ids (the notebook and the parent documents),
// the nearest one holding .siyuan/conf.json, else the topmost. A file outside
// any such folder belongs to its own folder.
func notebookDir(file string) string {
	dir := filepath.Dir(file)
	top := ""
	for d := dir; idRe.MatchString(filepath.Base(d)); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".siyuan", "conf.json")); err == nil {
			return d
		}
		top = d
		if filepath.Dir(d) == d {
			break
		}
	}
	if top == "" {
		return dir
	}
	return top
}

// title returns the title of document id, read from file on first use. When
// the file cannot be read the id stands in for the title.
func (nb Notebook) title(id, file string) string {
	if t, ok := nb.titles[id]; ok {
		return t
	}
	t := id
	if data, err := os.ReadFile(file); err == nil {
		var head struct {
			Properties struct {
				Title string `json:"title"`
			}
		}
		if json.Unmarshal(data, &head) == nil && head.Properties.Title != "" {
			t = head.Properties.Title
		}
	}
	if nb.titles != nil {
		nb.titles[id] = t
	}
	return t
}

// avName returns the name of a database (attribute view) block's definition,
// kept in storage/av/<id>.json in the notebook or in the data folder above it.
func (nb Notebook) avName(id string) string {
	if id == "" {
		return ""
	}
	for _, dir := range []string{nb.Dir, filepath.Dir(nb.Dir)} {
		data, err := os.ReadFile(filepath.Join(dir, "storage", "av", id+".json"))
		if err != nil {
			continue
		}
		var av struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(data, &av) == nil {
			return av.Name
		}
	}
	return ""
}

// syNode is a node of a .sy file (Lute's JSON AST), with the fields we read.
type syNode struct {
	ID           string
	Type         string
	Data         string
	Properties   map[string]string
	Children     []*syNode
	HeadingLevel int
	// CodeBlockInfo is the fence's info string (language); Go's JSON encoding
	// of a []byte, so it arrives base64-encoded.
	CodeBlockInfo             []byte
	TextMarkType              string
	TextMarkTextContent       string
	TextMarkBlockRefID        string
	TextMarkInlineMathContent string
	AttributeViewID           string
}

// syBlockTypes maps SiYuan block node types onto schema block types. Nodes
// with an ID but not listed here become BlockOther, except thematic breaks
// (skipped) and the ID-carrying insides of code and math blocks.
var syBlockTypes = map[string]string{
	"NodeHeading":         schemas.BlockHeading,
	"NodeParagraph":       schemas.BlockParagraph,
	"NodeList":            schemas.BlockList,
	"NodeListItem":        schemas.BlockListItem,
	"NodeCodeBlock":       schemas.BlockCode,
	"NodeTable":           schemas.BlockTable,
	"NodeBlockquote":      schemas.BlockQuote,
	"NodeSuperBlock":      schemas.BlockSuperBlock,
	"NodeCallout":         schemas.BlockCallout,
	"NodeMathBlock":       schemas.BlockMath,
	"NodeHTMLBlock":       schemas.BlockHTML,
	"NodeBlockQueryEmbed": schemas.BlockEmbed,
	"NodeAttributeView":   schemas.BlockOther,
	"NodeImage":           schemas.BlockMedia,
	"NodeVideo":           schemas.BlockMedia,
	"NodeAudio":           schemas.BlockMedia,
	"NodeIFrame":          schemas.BlockMedia,
}

// syContainers hold blocks and have no text of their own.
var syContainers = map[string]bool{
	"NodeList": true, "NodeListItem": true, "NodeBlockquote": true,
	"NodeSuperBlock": true, "NodeCallout": true,
}

// syDocMeta are the document properties copied into Meta (besides custom-*).
var syDocMeta = []string{"icon", "alias", "name", "memo", "tags", "bookmark"}

// ParseSiYuan turns one .sy document of notebook nb into a DocChanged
// (envelope left empty). Ancestor titles for TitlePath are read from the
// parent documents' .sy files under nb.Dir and cached in nb.
func ParseSiYuan(path string, content []byte, nb Notebook) (*schemas.DocChanged, error) {
	var root syNode
	if err := json.Unmarshal(content, &root); err != nil {
		return nil, fmt.Errorf("siyuan %s: %w", path, err)
	}
	if root.Type != "NodeDocument" || root.ID == "" {
		return nil, fmt.Errorf("siyuan %s: not a SiYuan document (root %q, id %q)", path, root.Type, root.ID)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("siyuan %s: %w", path, err)
	}
	if nb.titles == nil {
		nb.titles = map[string]string{} // a bare Notebook literal: cache for this call
	}

	sum := sha256.Sum256(content)
	doc := &schemas.DocChanged{
		DocID:    root.ID,
		Source:   schemas.SourceSiYuan,
		Path:     abs,
		Notebook: nb.ID,
		Title:    root.Properties["title"],
		Hash:     hex.EncodeToString(sum[:]),
		Meta:     map[string]string{},
	}
	nb.titles[root.ID] = doc.Title

	// The folders between the notebook and the file are the ancestor docs.
	if nb.Name != "" {
		doc.TitlePath = append(doc.TitlePath, nb.Name)
	}
	if rel, err := filepath.Rel(nb.Dir, filepath.Dir(abs)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		dir := nb.Dir
		for _, id := range strings.Split(filepath.ToSlash(rel), "/") {
			if !idRe.MatchString(id) {
				dir = filepath.Join(dir, id)
				continue
			}
			doc.TitlePath = append(doc.TitlePath, nb.title(id, filepath.Join(dir, id+".sy")))
			doc.ParentDocID = id
			dir = filepath.Join(dir, id)
		}
	}
	doc.TitlePath = append(doc.TitlePath, doc.Title)
	doc.BoundTitles()

	if t, err := time.ParseInLocation("20060102150405", root.Properties["updated"], time.UTC); err == nil {
		doc.Version = t.UnixNano()
	} else {
		info, err := os.Stat(abs)
		if err != nil {
			return nil, err // *PathError names the file
		}
		doc.Version = info.ModTime().UnixNano()
	}

	if nb.Name != "" {
		doc.Meta["notebook_name"] = nb.Name
	}
	for k, v := range root.Properties {
		if v != "" && (strings.HasPrefix(k, "custom-") || slices.Contains(syDocMeta, k)) {
			doc.Meta[k] = v
		}
	}
	if len(doc.Meta) == 0 {
		doc.Meta = nil
	}
	// A report saved by research --save siyuan (custom-exocortex-report).
	doc.Report = schemas.IsReportMeta(doc.Meta)

	c := &syConv{nb: nb}
	c.blocks(root.Children, "")
	doc.Blocks = c.out
	syMeta(doc, &root, nb)
	return doc, nil
}

// syMeta sets a .sy document's tags (its tags property and the tags in its
// text), its own time (updated; created from its id, as SiYuan dates a
// block) and its notebook's name.
func syMeta(doc *schemas.DocChanged, root *syNode, nb Notebook) {
	tags := strings.Split(root.Properties["tags"], ",")
	doc.Tags = schemas.NormalizeTags(append(tags, syTextTags(root.Children)...))
	doc.NotebookName = nb.Name
	if t, ok := ParseNoteTime(root.Properties["updated"]); ok {
		doc.Updated = t
	} else {
		doc.Updated = time.Unix(0, doc.Version).UTC()
	}
	doc.Created = IDTime(root.ID)
}

// IDTime is when a SiYuan block was created, read from its id
// (YYYYMMDDhhmmss-...); zero for an id of another form.
func IDTime(id string) time.Time {
	if !idRe.MatchString(id) {
		return time.Time{}
	}
	t, _ := ParseNoteTime(id[:14])
	return t
}

// syTextTags are the texts of the tag marks ("#tag#") in nodes, code
// blocks left out.
func syTextTags(nodes []*syNode) []string {
	var tags []string
	for _, n := range nodes {
		switch {
		case n.Type == "NodeCodeBlock" || n.Type == "NodeMathBlock" || n.Type == "NodeHTMLBlock":
		case n.Type == "NodeTextMark" && slices.Contains(strings.Fields(n.TextMarkType), "tag"):
			tags = append(tags, strings.ReplaceAll(n.TextMarkTextContent, "\u200b", ""))
		default:
			tags = append(tags, syTextTags(n.Children)...)
		}
	}
	return tags
}

// syConv flattens a document's node tree into blocks.
type syConv struct {
	nb  Notebook
	out []schemas.Block
}

// blocks appends the blocks among nodes (pre-order) under parent.
func (c *syConv) blocks(nodes []*syNode, parent string) {
	for _, n := range nodes {
		if n.ID == "" || n.Type == "NodeThematicBreak" {
			continue // inline nodes and markers; breaks carry nothing
		}
		typ, ok := syBlockTypes[n.Type]
		if !ok {
			typ = schemas.BlockOther
		}
		b := schemas.Block{ID: n.ID, Type: typ, ParentID: parent, Updated: n.Properties["updated"]}
		switch {
		case syContainers[n.Type]:
			c.out = append(c.out, b)
			c.blocks(n.Children, n.ID)
			continue
		case n.Type == "NodeHeading":
			b.Level = n.HeadingLevel
			b.Text, b.Refs = inlineText(n.Children)
		case n.Type == "NodeParagraph":
			b.Text, b.Refs = inlineText(n.Children)
		case n.Type == "NodeCodeBlock":
			b.Text = codeText(n)
		case n.Type == "NodeTable":
			b.Text, b.Refs = tableText(n)
		case n.Type == "NodeMathBlock":
			b.Text = strings.TrimSpace(childData(n, "NodeMathBlockContent"))
		case n.Type == "NodeHTMLBlock":
			b.Text = strings.TrimSpace(n.Data)
		case n.Type == "NodeBlockQueryEmbed":
			b.Text = childData(n, "NodeBlockQueryEmbedScript")
			if b.Text == "" {
				b.Text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(n.Data), "{{"), "}}")
			}
		case n.Type == "NodeAttributeView":
			b.Text = c.nb.avName(n.AttributeViewID)
		case n.Type == "NodeImage":
			b.Text, _ = inlineText(n.Children) // the alt text
		case typ == schemas.BlockMedia:
			// video, audio, iframe: HTML only, no text
		default:
			// An unknown block: its inline text here, its blocks as children.
			b.Text, b.Refs = inlineText(n.Children)
			c.out = append(c.out, b)
			c.blocks(n.Children, n.ID)
			continue
		}
		c.out = append(c.out, b)
	}
}

// childData returns the Data of the first child of the given type.
func childData(n *syNode, typ string) string {
	for _, ch := range n.Children {
		if ch.Type == typ {
			return ch.Data
		}
	}
	return ""
}

// codeText renders a code block as a fence with its language, like Markdown.
func codeText(n *syNode) string {
	lang := string(n.CodeBlockInfo)
	code := ""
	for _, ch := range n.Children {
		switch ch.Type {
		case "NodeCodeBlockFenceInfoMarker":
			if len(ch.CodeBlockInfo) > 0 {
				lang = string(ch.CodeBlockInfo)
			}
		case "NodeCodeBlockCode":
			code = ch.Data
		}
	}
	if code != "" && !strings.HasSuffix(code, "\n") {
		code += "\n"
	}
	return "```" + strings.TrimSpace(lang) + "\n" + code + "```"
}

// tableText renders a table as one "cell | cell" line per row (header first).
func tableText(n *syNode) (string, []string) {
	var rows []string
	var refs []string
	var row func(r *syNode)
	row = func(r *syNode) {
		var cells []string
		for _, cell := range r.Children {
			t, rr := inlineText(cell.Children)
			cells = append(cells, strings.Join(strings.Fields(t), " "))
			refs = appendNew(refs, rr...)
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	for _, ch := range n.Children {
		switch ch.Type {
		case "NodeTableHead":
			for _, r := range ch.Children {
				if r.Type == "NodeTableRow" {
					row(r)
				}
			}
		case "NodeTableRow":
			row(ch)
		}
	}
	return strings.Join(rows, "\n"), refs
}

// inlineSkip are inline nodes that carry no visible text: punctuation of
// links and images, their destinations, and kramdown attribute lists.
var inlineSkip = map[string]bool{
	"NodeBang": true, "NodeOpenBracket": true, "NodeCloseBracket": true,
	"NodeOpenParen": true, "NodeCloseParen": true, "NodeOpenBrace": true, "NodeCloseBrace": true,
	"NodeLinkDest": true, "NodeLinkSpace": true, "NodeLinkTitle": true,
	"NodeKramdownSpanIAL": true, "NodeTaskListItemMarker": true,
}

// inlineText renders inline nodes as light Markdown-ish text: block refs
// become their anchor text (and a ref), code keeps its backticks, inline math
// its dollars; other marks keep just their text. Zero-width spaces (SiYuan
// puts them around marks) are dropped.
func inlineText(nodes []*syNode) (string, []string) {
	var b strings.Builder
	var refs []string
	var walk func(nodes []*syNode)
	walk = func(nodes []*syNode) {
		for _, n := range nodes {
			switch {
			case n.ID != "" || inlineSkip[n.Type] || strings.HasSuffix(n.Type, "Marker"):
				// nested blocks are not inline text; markers are syntax
			case n.Type == "NodeText", n.Type == "NodeLinkText":
				b.WriteString(n.Data)
			case n.Type == "NodeBr":
				b.WriteString("\n")
			case n.Type == "NodeTextMark":
				marks := strings.Fields(n.TextMarkType)
				switch {
				case slices.Contains(marks, "block-ref"):
					b.WriteString(n.TextMarkTextContent)
					if n.TextMarkBlockRefID != "" {
						refs = appendNew(refs, n.TextMarkBlockRefID)
					}
				case slices.Contains(marks, "inline-math"):
					b.WriteString("$" + n.TextMarkInlineMathContent + "$")
				case slices.Contains(marks, "code"):
					b.WriteString("`" + n.TextMarkTextContent + "`")
				case slices.Contains(marks, "tag"):
					b.WriteString("#" + n.TextMarkTextContent)
				default:
					b.WriteString(n.TextMarkTextContent)
				}
			default:
				walk(n.Children) // images (alt text), backslash escapes, ...
			}
		}
	}
	walk(nodes)
	return strings.TrimSpace(strings.ReplaceAll(b.String(), "\u200b", "")), refs
}

// appendNew appends the items not yet in list.
func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
