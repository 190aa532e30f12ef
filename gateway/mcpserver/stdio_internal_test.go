package mcpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestTheRequestIDIsFoundWhereverTheClientPutsIt(t *testing.T) {
	cases := []struct {
		name         string
		msg          string
		id           string // "" for none
		notification bool
	}{
		{"a numeric id before the method (Go SDK order)", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search"}}`, "7", false},
		{"a numeric id after the params (TypeScript SDK order)", `{"method":"tools/call","params":{"arguments":{"query":"вороны"}},"jsonrpc":"2.0","id":12}`, "12", false},
		{"a string id with an escaped quote", `{"id" : "a\"b","method":"ping"}`, `"a\"b"`, false},
		{"an id inside the params is not the request's", `{"method":"tools/call","params":{"arguments":{"id":"20990101-x"}},"id":3}`, "3", false},
		{"a notification names a method and has no id", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":1}}`, "", true},
		{"a null id is no id", `{"id":null,"method":"ping"}`, "", true},
		{"garbage has no id", `not json at all`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f idFinder
			f.feed([]byte(tc.msg))
			if string(f.id) != tc.id {
				t.Errorf("id %s, want %s", f.id, tc.id)
			}
			if got := f.id == nil && f.method && f.depth == 0; got != tc.notification {
				t.Errorf("notification %v, want %v", got, tc.notification)
			}
		})
	}
}

func TestLinesOverTheLimitAreDroppedAndTheOthersPassWhole(t *testing.T) {
	long := `{"method":"tools/call","params":{"arguments":{"query":"` + strings.Repeat("ворона ", 40) + `"}},"id":5}`
	in := `{"id":1,"method":"ping"}` + "\n" + long + "\n" + `{"id":2,"method":"ping"}` + "\r\n" + `{"method":"x","params":"` + strings.Repeat("y", 300) + `"}` + "\n"
	var rejected []string
	l := &limitedLines{in: bufio.NewReaderSize(strings.NewReader(in), 16), max: 200, reject: func(id json.RawMessage, notification bool) {
		rejected = append(rejected, string(id)+map[bool]string{true: " notification", false: ""}[notification])
	}}
	out, err := io.ReadAll(l)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":1,"method":"ping"}` + "\n" + `{"id":2,"method":"ping"}` + "\r\n"; string(out) != want {
		t.Errorf("passed %q, want %q", out, want)
	}
	if strings.Join(rejected, ",") != "5, notification" {
		t.Errorf("rejected %q, want the request 5 and a notification", rejected)
	}
}
