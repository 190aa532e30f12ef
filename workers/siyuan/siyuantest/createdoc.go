package siyuantest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

// createDocWithMd is /api/filetree/createDocWithMd {notebook, path,
// markdown}: as the real kernel (v3.7.3) does, it creates the document
// titled with path's last segment under the documents of the segments
// before it (creating those that are missing, empty), parses markdown into
// blocks (headings, paragraphs, lists of items holding a paragraph, quotes)
// whose block references ((id "anchor")) and ((id 'anchor')) go into the
// refs table, says "create" and "savedoc" on /ws, and returns the new
// document's id. The caller holds k.mu.
func (k *Kernel) createDocWithMd(box, hpath, markdown string) (string, error) {
	if _, ok := k.notebooks[box]; !ok {
		return "", fmt.Errorf("not found box [%s]", box)
	}
	if !strings.HasPrefix(hpath, "/") || strings.Trim(hpath, "/") == "" {
		return "", fmt.Errorf("invalid path [%s]", hpath)
	}
	segs := strings.Split(strings.Trim(hpath, "/"), "/")
	parentPath, at := "", ""
	for i, seg := range segs {
		at += "/" + seg
		if i == len(segs)-1 {
			break
		}
		if d := k.docByHPath(box, at); d != nil {
			parentPath = strings.TrimSuffix(d.path, ".sy")
			continue
		}
		d, err := k.newDoc(box, parentPath, at, nil)
		if err != nil {
			return "", err
		}
		parentPath = strings.TrimSuffix(d.path, ".sy")
	}
	d, err := k.newDoc(box, parentPath, at, parseMarkdown(markdown, k.newID))
	if err != nil {
		return "", err
	}
	return d.id, nil
}

// docByHPath is the first document of box at hpath (nil: none).
func (k *Kernel) docByHPath(box, hpath string) *doc {
	for _, id := range k.order {
		if d := k.docs[id]; d != nil && d.box == box && d.hpath == hpath && !d.hidden {
			return d
		}
	}
	return nil
}

func (k *Kernel) newDoc(box, parentPath, hpath string, blocks []Block) (*doc, error) {
	id := k.newID()
	d := &doc{id: id, box: box, hpath: hpath, path: parentPath + "/" + id + ".sy",
		title: hpath[strings.LastIndex(hpath, "/")+1:], blocks: blocks, updated: k.tick()}
	d.edited = d.updated
	k.docs[id] = d
	k.order = append(k.order, id)
	if err := k.write(d); err != nil {
		return nil, err
	}
	k.broadcast("create", map[string]any{"box": map[string]any{"id": box, "name": k.notebooks[box], "closed": false},
		"listDocTree": false, "path": d.path})
	k.broadcast("savedoc", map[string]any{"rootID": id, "type": "tx", "sources": []any{}})
	return d, nil
}

var idSeq atomic.Int64

// newID is a new block id in the kernel's form: the clock's time and seven
// lower-case letters or digits (20261121100831-xs0m89b).
func (k *Kernel) newID() string {
	s := strconv.FormatInt(idSeq.Add(1)*7919+1000000, 36)
	if len(s) < 7 {
		s = strings.Repeat("0", 7-len(s)) + s
	}
	return k.clock.Format("20060102150405") + "-" + s[len(s)-7:]
}

var (
	headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
	itemRe    = regexp.MustCompile(`^(?:[-*+]|(\d+)[.)])\s+(.*)$`)
	// refRe is a block reference: ((id "static anchor")) or ((id 'dynamic anchor')).
	refRe  = regexp.MustCompile(`\(\(([0-9A-Za-z-]+)\s+(?:"([^"]*)"|'([^']*)')\)\)`)
	linkRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// parseMarkdown splits markdown into the kernel's blocks: a heading (h),
// a paragraph (p), a list (l, subtype u or o) of items (i) each holding a
// paragraph, a quote (b) holding a paragraph. A block's content is its
// plain text (a reference's anchor, a link's text, no emphasis markers);
// its refs are the blocks it references.
func parseMarkdown(md string, newID func() string) []Block {
	var out []Block
	para := func(parent, text string) Block {
		b := Block{ID: newID(), Type: "p", Content: plainText(text), Markdown: text, Parent: parent}
		for _, m := range refRe.FindAllStringSubmatch(text, -1) {
			b.Refs = append(b.Refs, m[1])
		}
		return b
	}
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); {
		line := strings.TrimRight(lines[i], " \t")
		switch {
		case strings.TrimSpace(line) == "":
			i++
		case headingRe.MatchString(line):
			m := headingRe.FindStringSubmatch(line)
			h := para("", m[2])
			h.Type, h.Subtype, h.Markdown = "h", "h"+strconv.Itoa(len(m[1])), line
			out = append(out, h)
			i++
		case itemRe.MatchString(line):
			list := Block{ID: newID(), Type: "l", Subtype: "u"}
			if itemRe.FindStringSubmatch(line)[1] != "" {
				list.Subtype = "o"
			}
			var items []Block
			var mds, contents []string
			for ; i < len(lines) && itemRe.MatchString(strings.TrimRight(lines[i], " \t")); i++ {
				l := strings.TrimRight(lines[i], " \t")
				p := para("", itemRe.FindStringSubmatch(l)[2])
				item := Block{ID: newID(), Type: "i", Subtype: list.Subtype, Parent: list.ID, Markdown: l, Content: " " + p.Content}
				p.Parent = item.ID
				items = append(items, item, p)
				mds, contents = append(mds, l), append(contents, p.Content)
			}
			list.Markdown, list.Content = strings.Join(mds, "\n"), " "+strings.Join(contents, " ")
			out = append(append(out, list), items...)
		case strings.HasPrefix(line, ">"):
			var text []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], ">"); i++ {
				text = append(text, strings.TrimSpace(strings.TrimPrefix(lines[i], ">")))
			}
			q := Block{ID: newID(), Type: "b", Markdown: "> " + strings.Join(text, "\n> ")}
			p := para(q.ID, strings.Join(text, "\n"))
			q.Content = p.Content
			out = append(out, q, p)
		default:
			var text []string
			for ; i < len(lines); i++ {
				l := strings.TrimRight(lines[i], " \t")
				if strings.TrimSpace(l) == "" || (len(text) > 0 && (headingRe.MatchString(l) || itemRe.MatchString(l) || strings.HasPrefix(l, ">"))) {
					break
				}
				text = append(text, l)
			}
			out = append(out, para("", strings.Join(text, "\n")))
		}
	}
	return out
}

// plainText is a block's content as the kernel indexes it: references by
// their anchors, links by their text, without emphasis markers.
func plainText(md string) string {
	s := refRe.ReplaceAllStringFunc(md, func(r string) string {
		m := refRe.FindStringSubmatch(r)
		return m[2] + m[3]
	})
	s = linkRe.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// refText is the anchor and markdown of block b's reference to def, as the
// kernel's refs table holds them: a static anchor ("...") as written, a
// dynamic one ('...') the referenced block's content ("" when b's markdown
// has no such reference).
func refText(b Block, def, defContent string) (content, markdown string) {
	for _, m := range refRe.FindAllStringSubmatch(b.Markdown, -1) {
		if m[1] != def {
			continue
		}
		if strings.HasSuffix(m[0], `"))`) || defContent == "" {
			return m[2] + m[3], m[0]
		}
		return defContent, m[0]
	}
	return "", ""
}
