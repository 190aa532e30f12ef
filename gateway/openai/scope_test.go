package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/openai"
)

func recordingClient(t *testing.T) (*gatewaytest.Recorder, oa.Client) {
	rec := &gatewaytest.Recorder{}
	srv := httptest.NewServer(openai.Handler(rec))
	t.Cleanup(srv.Close)
	return rec, oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func TestOperatorsInTheLastUserMessageScopeTheAnswer(t *testing.T) {
	rec, c := recordingClient(t)
	cases := []struct {
		name, message, wantQuestion string
		wantTags, wantNotebooks     []string
		wantReason                  string
		wantRecent                  bool
	}{
		{name: "English operators", message: `what did I decide tag:work in:"Work notes"`, wantQuestion: "what did I decide",
			wantTags: []string{"work"}, wantNotebooks: []string{"Work notes"}, wantReason: "scope: notebooks Work notes; tags work"},
		{name: "Russian operators", message: "что я решил тег:работа в:Работа", wantQuestion: "что я решил",
			wantTags: []string{"работа"}, wantNotebooks: []string{"Работа"}, wantReason: "tags работа"},
		{name: "a date phrase", message: "what did I write last week", wantQuestion: "what did I write", wantReason: `(from "last week")`},
		{name: "sort:recent asks for newer notes first", message: "what did I decide about backups sort:recent", wantQuestion: "what did I decide about backups",
			wantReason: "scope: newer first", wantRecent: true},
		{name: "сортировка:новые asks for it in Russian", message: "что я решил по бюджету тег:работа сортировка:новые", wantQuestion: "что я решил по бюджету",
			wantTags: []string{"работа"}, wantReason: "tags работа; newer first", wantRecent: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: openai.ModelAsk,
				Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("earlier tag:other"), oa.AssistantMessage("ok"), oa.UserMessage(tc.message)}})
			if err != nil {
				t.Fatal(err)
			}
			q := rec.Asked()
			if q.Question != tc.wantQuestion || q.Options.Scope == nil {
				t.Fatalf("asked %q with scope %+v, want %q and a scope", q.Question, q.Options.Scope, tc.wantQuestion)
			}
			if !reflect.DeepEqual(q.Options.Scope.Include.Tags, tc.wantTags) || !reflect.DeepEqual(q.Options.Scope.Include.Notebooks, tc.wantNotebooks) {
				t.Errorf("scope %+v, want tags %v notebooks %v (the earlier message's tag:other is history, not scope)", q.Options.Scope, tc.wantTags, tc.wantNotebooks)
			}
			if q.Options.Scope.Recent != tc.wantRecent {
				t.Errorf("scope %+v: recent %v, want %v", q.Options.Scope, q.Options.Scope.Recent, tc.wantRecent)
			}
			var ex extra
			if err := json.Unmarshal([]byte(res.RawJSON()), &ex); err != nil || ex.Exocortex == nil {
				t.Fatalf("%v: %s", err, res.RawJSON())
			}
			if !strings.Contains(strings.Join(ex.Exocortex.Reasons, "\n"), tc.wantReason) {
				t.Errorf("reasons %q lack %q", ex.Exocortex.Reasons, tc.wantReason)
			}
		})
	}
}

func TestTheSearchModelListsAScopeOfOperatorsAlone(t *testing.T) {
	rec, c := recordingClient(t)
	res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: openai.ModelSearch,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("тег:рецепт")}})
	if err != nil {
		t.Fatal(err)
	}
	s := rec.Searched()
	if s.Query != "" || s.Scope == nil || !reflect.DeepEqual(s.Scope.Include.Tags, []string{"рецепт"}) {
		t.Errorf("searched %q with scope %+v", s.Query, s.Scope)
	}
	var ex extra
	_ = json.Unmarshal([]byte(res.RawJSON()), &ex)
	if ex.Exocortex == nil || !strings.Contains(strings.Join(ex.Exocortex.Reasons, "\n"), "listing the scope") {
		t.Errorf("structured fields %+v", ex.Exocortex)
	}
}

func TestAScopeThatCannotBeKeptIsA400OnMessages(t *testing.T) {
	rec, c := recordingClient(t)
	cases := []struct{ name, model, message, want string }{
		{"a misspelt operator names the known ones", openai.ModelAsk, "soup tga:recipe", "tag:, in:"},
		{"a misspelt Russian operator", openai.ModelSearch, "суп тэг:рецепт", "тег:"},
		{"a question of a scope alone", openai.ModelAsk, "tag:recipe", openai.ModelSearch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			_, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: tc.model,
				Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(tc.message)}})
			var apiErr *oa.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != gateway.CodeInvalidScope ||
				apiErr.Param != "messages" || !strings.Contains(apiErr.Message, tc.want) {
				t.Fatalf("%v, want a 400 invalid_scope on messages holding %q", err, tc.want)
			}
			if rec.Asked() != nil || rec.Searched() != nil {
				t.Error("a refused scope reached the backend")
			}
		})
	}
}
