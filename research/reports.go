package research

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// reportKey is the report's key in KB_RESEARCH_REPORTS.
func reportKey(researchID string) string { return "report." + stateKeyPart(researchID) }

// SaveReport stores a finished report under its research id.
func SaveReport(ctx context.Context, kv bus.KV, rep *schemas.ResearchReport) error {
	raw, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode report %s: %w", rep.ResearchID, err)
	}
	if err := kv.Put(ctx, reportKey(rep.ResearchID), raw); err != nil {
		return fmt.Errorf("store report %s: %w", rep.ResearchID, err)
	}
	return nil
}

// LoadReport reads the stored report of a research; nil, nil when there is
// none (not finished, or no such research).
func LoadReport(ctx context.Context, kv bus.KV, researchID string) (*schemas.ResearchReport, error) {
	raw, err := kv.Get(ctx, reportKey(researchID))
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", researchID, err)
	}
	if raw == nil {
		return nil, nil
	}
	var rep schemas.ResearchReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("decode report %s: %w", researchID, err)
	}
	return &rep, nil
}

// ReportInfo is one stored report in a list.
type ReportInfo struct {
	ResearchID string    `json:"research_id"`
	Question   string    `json:"question"`
	Title      string    `json:"title"`
	Lang       string    `json:"lang,omitempty"`
	Mode       string    `json:"mode"`
	Sections   int       `json:"sections"`
	Sources    int       `json:"sources"`
	Facts      int       `json:"facts"`
	Tasks      int       `json:"tasks"`
	Finished   time.Time `json:"finished"`
}

// ListReports lists the stored reports, the most recent first.
func ListReports(ctx context.Context, kv bus.KV) ([]ReportInfo, error) {
	keys, err := kv.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	var out []ReportInfo
	for _, k := range keys {
		if !strings.HasPrefix(k, "report.") {
			continue
		}
		raw, err := kv.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("list reports: %w", err)
		}
		if raw == nil {
			continue
		}
		var rep schemas.ResearchReport
		if err := json.Unmarshal(raw, &rep); err != nil {
			return nil, fmt.Errorf("list reports: decode %s: %w", k, err)
		}
		out = append(out, ReportInfo{ResearchID: rep.ResearchID, Question: rep.Question, Title: rep.Title, Lang: rep.Lang,
			Mode: rep.Mode, Sections: len(rep.Sections), Sources: len(rep.Sources), Facts: len(rep.Facts), Tasks: rep.Tasks,
			Finished: rep.Finished})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Finished.Equal(out[j].Finished) {
			return out[i].Finished.After(out[j].Finished)
		}
		return out[i].ResearchID < out[j].ResearchID
	})
	return out, nil
}
