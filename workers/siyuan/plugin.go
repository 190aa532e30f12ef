package siyuan

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// PluginHeader carries the shared secret of a forwarding plugin.
const PluginHeader = "X-Exocortex-Secret"

// PluginHandler accepts events a SiYuan front-end plugin forwards (POST, a
// /ws message or a list of them, with the shared secret in PluginHeader or
// as a Bearer token). They are applied like /ws events.
func (s *Source) PluginHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.PluginSecret == "" {
			http.Error(w, "the SiYuan bridge has no plugin secret configured", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "POST events here", http.StatusMethodNotAllowed)
			return
		}
		got := r.Header.Get(PluginHeader)
		if got == "" {
			got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.PluginSecret)) != 1 {
			s.log.Warn().Str("remote", r.RemoteAddr).Msg("siyuan plugin: wrong or missing secret")
			http.Error(w, "wrong or missing secret", http.StatusUnauthorized)
			return
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var evs []Event
		if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
			err = json.Unmarshal(raw, &evs)
		} else {
			var ev Event
			err = json.Unmarshal(raw, &ev)
			evs = []Event{ev}
		}
		if err != nil {
			http.Error(w, "not a SiYuan event: "+err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, ev := range evs {
			if ev.Cmd == "" {
				continue
			}
			select {
			case s.inbox <- ev:
				n++
			default:
				http.Error(w, fmt.Sprintf("busy: %d events queued", len(s.inbox)), http.StatusServiceUnavailable)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"accepted":%d}`+"\n", n)
	})
}
