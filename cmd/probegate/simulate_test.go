package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSimulateJSONHasExactlyTheDocumentedFields(t *testing.T) {
	var out bytes.Buffer
	s := simulation{failures: 3, successes: 2, output: "json", inputs: []string{"200", "404", "503", "timeout", "error", "503"}}
	if err := s.run(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d lines, want one per probe:\n%s", len(lines), out.String())
	}
	want := []string{"class", "in_service", "input", "probe", "reachable", "reason", "state", "verified"}
	for i, line := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		if len(obj) != len(want) {
			t.Errorf("line %d has fields %v, want exactly %v", i+1, obj, want)
		}
		for _, k := range want {
			if _, ok := obj[k]; !ok {
				t.Errorf("line %d lacks %q", i+1, k)
			}
		}
	}
	var last simulatedProbe
	if err := json.Unmarshal([]byte(lines[5]), &last); err != nil {
		t.Fatal(err)
	}
	// 200 verifies; then 404, 503, timeout, error, 503 are five non-ok results.
	if last.State != "unhealthy" || last.InService || !last.Verified || last.Class != "failed" || last.Reason != "http_5xx" || last.Probe != 6 {
		t.Errorf("last probe %+v, want unhealthy, verified, failed/http_5xx", last)
	}
}

func TestSimulateTextAndBadInput(t *testing.T) {
	var out bytes.Buffer
	s := simulation{failures: 3, successes: 2, inputs: []string{"404", "404"}}
	if err := s.run(&out); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "state=probe_unsupported"); got != 2 {
		t.Errorf("text output:\n%s\nwant two probe_unsupported lines", out.String())
	}
	err := simulation{failures: 3, successes: 2, inputs: []string{"200", "banana"}}.run(&out)
	if err == nil || !strings.Contains(err.Error(), "input 2") || !strings.Contains(err.Error(), "banana") {
		t.Errorf("bad input error %v, want it to name input 2 and the value", err)
	}
}
