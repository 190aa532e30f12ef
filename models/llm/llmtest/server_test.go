package llmtest_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
)

func TestATokenDelaySpacesTheStreamedTokens(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("one two three")
	const pace = 80 * time.Millisecond
	srv.SetTokenDelay(pace)
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var at []time.Time
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"content"`) {
			at = append(at, time.Now())
		}
	}
	if len(at) != 3 {
		t.Fatalf("%d content chunks, want 3", len(at))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < pace*3/4 {
			t.Errorf("token %d came %v after the one before, want about %v", i+1, gap, pace)
		}
	}
}
