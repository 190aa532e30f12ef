package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exocortex/exocortex/gateway"
)

// RunIO serves the MCP server over newline-delimited JSON-RPC on in and
// out (RunStdio's transport) until in ends or ctx does. A message over
// MaxBody is not read: it is answered with a JSON-RPC error carrying the
// gateway's too_large code and message (a notification gets no answer),
// and the session goes on, as over HTTP.
func RunIO(ctx context.Context, b gateway.Backend, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	r := &limitedLines{in: bufio.NewReaderSize(in, 64<<10), max: MaxBody, reject: func(id json.RawMessage, notification bool) {
		if notification {
			return
		}
		_, _ = w.Write(append(tooLarge(id), '\n'))
	}}
	return NewServer(b).Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopCloser{w}})
}

// tooLarge is the JSON-RPC response to the request id (nil: not found)
// whose message is over MaxBody: an invalid request, with the message of
// the gateway's 413 and its code (too_large) as the error's data.
func tooLarge(id json.RawMessage) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": jsonrpc.CodeInvalidRequest, "message": gateway.TooLargeMessage(MaxBody),
		"data": map[string]string{"code": gateway.CodeTooLarge}}})
	return msg
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// lockedWriter serialises writes: the SDK writes each message in one
// call, and so does a refusal.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// limitedLines passes whole lines of in through, and drops every line
// longer than max (its newline aside), calling reject with the request id
// found in it (nil when none could be found; notification true when it
// named a method and had no id).
type limitedLines struct {
	in     *bufio.Reader
	max    int
	reject func(id json.RawMessage, notification bool)

	pending []byte // what of the current line is not read yet
	err     error
}

func (l *limitedLines) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.next()
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// next reads the next line into pending, or drops it when it is too long.
func (l *limitedLines) next() {
	var line []byte
	var scan *idFinder
	for {
		part, err := l.in.ReadSlice('\n')
		if scan != nil {
			scan.feed(part)
		} else if len(line)+len(bytes.TrimRight(part, "\r\n")) > l.max {
			scan = &idFinder{}
			scan.feed(line)
			scan.feed(part)
			line = nil
		} else {
			line = append(line, part...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			l.err = err
		}
		break
	}
	if scan != nil {
		l.reject(scan.id, scan.id == nil && scan.method && scan.depth == 0)
		return
	}
	l.pending = line
}

// idFinder reads a JSON-RPC message byte by byte, as much of it as there
// is, and keeps the value of its top-level "id" (a string or a number)
// and whether it has a top-level "method".
type idFinder struct {
	depth     int
	inString  bool
	escaped   bool
	expectKey bool // at the top level, the next string is a key
	inKey     bool
	key       []byte
	lastKey   string
	capture   bool // reading the id's value
	val       []byte

	id     json.RawMessage
	method bool
}

// Write feeds b (the rest of a body read to find its id).
func (f *idFinder) Write(b []byte) (int, error) { f.feed(b); return len(b), nil }

func (f *idFinder) feed(b []byte) {
	for _, c := range b {
		f.byte(c)
	}
}

func (f *idFinder) byte(c byte) {
	if f.capture {
		switch {
		case f.inString:
			f.val = append(f.val, c)
			switch {
			case f.escaped:
				f.escaped = false
			case c == '\\':
				f.escaped = true
			case c == '"':
				f.inString, f.capture = false, false
				f.id = json.RawMessage(f.val)
			}
			return
		case c == '"' && len(f.val) == 0:
			f.inString = true
			f.val = append(f.val, c)
			return
		case c == ',' || c == '}':
			f.capture = false
			if v := bytes.TrimSpace(f.val); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
				f.id = json.RawMessage(v)
			}
		case c == '{' || c == '[':
			f.capture = false // not an id a response can carry
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			return
		default:
			f.val = append(f.val, c)
			return
		}
	}
	if f.inString {
		switch {
		case f.escaped:
			f.escaped = false
		case c == '\\':
			f.escaped = true
		case c == '"':
			f.inString = false
			if f.inKey {
				f.inKey, f.lastKey = false, string(f.key)
				f.method = f.method || f.lastKey == "method"
			}
			return
		}
		if f.inKey && len(f.key) < 16 {
			f.key = append(f.key, c)
		}
		return
	}
	switch c {
	case '"':
		f.inString = true
		if f.depth == 1 && f.expectKey {
			f.inKey, f.expectKey, f.key = true, false, f.key[:0]
		}
	case '{', '[':
		f.depth++
		if c == '{' && f.depth == 1 {
			f.expectKey = true
		}
	case '}', ']':
		f.depth--
	case ',':
		if f.depth == 1 {
			f.expectKey = true
		}
	case ':':
		if f.depth == 1 && f.lastKey == "id" && f.id == nil {
			f.capture, f.val = true, f.val[:0]
		}
		f.lastKey = ""
	}
}

// goType finds the Go type names in the JSON decoder's errors.
var goType = regexp.MustCompile(`json: cannot unmarshal (.+?) into Go (?:struct field (\S+) of type|value of type) ([^\s:]+(?: \{\})?)`)

// plainErrors keeps Go's type names out of what a tool call answers (the
// SDK reports arguments that are not an object as "cannot unmarshal ...
// into Go value of type map[string]interface {}"): the same words over
// both transports, in JSON's terms.
func plainErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
			if a := bytes.TrimSpace(ct.Params.Arguments); len(a) > 0 && a[0] != '{' && !bytes.Equal(a, []byte("null")) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
					Text: "arguments: want a JSON object of the tool's inputs, got " + jsonKindOf(a)}}}, nil
			}
		}
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					tc.Text = plainJSON(tc.Text)
				}
			}
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			je.Message = plainJSON(je.Message)
		}
		return res, err
	}
}

// plainJSON rewrites the decoder's "cannot unmarshal X into Go value of
// type T" as "X where T's JSON kind was wanted".
func plainJSON(s string) string {
	return goType.ReplaceAllStringFunc(s, func(m string) string {
		sub := goType.FindStringSubmatch(m)
		got, field, typ := strings.Trim(sub[1], `"`), sub[2], sub[3]
		if field != "" {
			return "field " + field + " wants " + kindOfGoType(typ) + ", got " + got
		}
		return "want " + kindOfGoType(typ) + ", got " + got
	})
}

// kindOfGoType names a Go type, as the decoder prints it, in JSON's words.
func kindOfGoType(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "map[") || strings.Contains(t, ".") || strings.HasPrefix(t, "struct"):
		return "a JSON object"
	case strings.HasPrefix(t, "["):
		return "a JSON array"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	}
	return "another JSON value"
}

// jsonKindOf names the kind of a JSON value by its first byte.
func jsonKindOf(v []byte) string {
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "true or false"
	}
	return "a number"
}
