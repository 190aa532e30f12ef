package siyuan_test

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// TestThePluginsForwardedEventsSyncTheDocument runs the plugin under ops/
// in Node: its events reach the endpoint with the secret and the document
// is read and sent, while the kernel's /ws says nothing.
func TestThePluginsForwardedEventsSyncTheDocument(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	k := kernel(t)
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour,
		PluginSecret: "shh"}, bus.NewMemKV(), out.publish, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	defer func() { cancel(); <-done }()
	out.waitFor(t, 0, "the initial sync", func(evs []*schemas.DocChanged) bool { return len(evs) == 4 })
	srv := httptest.NewServer(src.PluginHandler())
	defer srv.Close()

	k.SetMuted(true)
	n := out.len()
	must(t, k.EditDoc(probe, func(bs []siyuantest.Block) []siyuantest.Block {
		return append(bs, siyuantest.Block{ID: "20261121101200-plugin1", Type: "p", Content: "Via the plugin.", Markdown: "Via the plugin."})
	}))
	run := func(secret string) {
		cmd := exec.Command(node, "../../ops/siyuan-plugin/plugin.test.js", `{"cmd":"savedoc","data":{"rootID":"`+probe+`"}}`)
		cmd.Env = append(cmd.Environ(), "EXOCORTEX_ENDPOINT="+srv.URL, "EXOCORTEX_SECRET="+secret)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("plugin: %v\n%s", err, b)
		}
	}
	run("wrong")
	time.Sleep(200 * time.Millisecond)
	if out.len() != n {
		t.Fatal("an event with a wrong secret was applied")
	}
	run("shh")
	out.waitFor(t, n, "the plugin's event", func(evs []*schemas.DocChanged) bool {
		return has(evs, probe, false, hasBlock("20261121101200-plugin1"))
	})
}
