package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestUpgradePlanRequest(t *testing.T) {
	versions := []string{"v1.33.2", "v1.34.1", "v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2"}
	for name, c := range map[string]struct {
		request    planRequest
		cp, worker []string
		refused    string
	}{
		"chained, workers once at the end": {
			request: planRequest{versions, "v1.36.3", "v1.34.4", "v1.34.4"},
			cp:      []string{"v1.35.4", "v1.36.3"}, worker: []string{"v1.36.3"},
		},
		"four minors: the workers step at the third": {
			request: planRequest{versions, "v1.37.2", "v1.33.2", "v1.33.2"},
			cp:      []string{"v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2"}, worker: []string{"v1.36.3", "v1.37.2"},
		},
		"without a versions list, one minor only": {
			request: planRequest{nil, "v1.36.3", "v1.34.4", "v1.34.4"}, refused: "cannot compute an upgrade plan from v1.34.4 to v1.36.3",
		},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := json.Marshal(map[string]any{"upgradePlan": c.request})
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), bytes.NewReader(req), &stdout, &stderr)
			if c.refused != "" {
				if code != 1 || !strings.Contains(stdout.String(), c.refused) {
					t.Fatalf("want exit 1 with %q, got %d: %s", c.refused, code, stdout.String())
				}
				return
			}
			var out planOutput
			if code != 0 || json.Unmarshal(stdout.Bytes(), &out) != nil {
				t.Fatalf("want exit 0 and a plan, got %d: %s %s", code, stdout.String(), stderr.String())
			}
			expect(t, out.ControlPlane, c.cp)
			expect(t, out.Workers, c.worker)
		})
	}
}
