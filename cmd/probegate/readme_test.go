package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/internal/markdown"
)

// readmeTable is the README's table whose first header is first.
func readmeTable(t *testing.T, first string) markdown.Table {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var found []markdown.Table
	for _, table := range markdown.Tables(string(data)) {
		if len(table.Header) > 0 && table.Header[0] == first {
			found = append(found, table)
		}
	}
	if len(found) == 0 {
		t.Fatalf("README.md has no table headed %q", first)
	}
	return found[0]
}

// TestReadmeStatesAreTheServedOnes: the README's table of states lists
// every state a backend can be in, as /healthz and the metrics name it,
// in service or not as the pool counts it, and no other.
func TestReadmeStatesAreTheServedOnes(t *testing.T) {
	table := readmeTable(t, "state")
	listed := map[string]string{}
	for _, row := range table.Rows {
		spans := markdown.CodeSpans(row[0])
		if len(spans) != 1 || len(row) < 2 {
			t.Fatalf("README.md:%d: a state row %q, want `state` | in service | meaning", table.Line, row)
		}
		listed[spans[0]] = row[1]
	}
	var names []string
	for _, s := range health.ServedStates() {
		names = append(names, s.String())
		inService, ok := listed[s.String()]
		if !ok {
			t.Errorf("README.md's state table lacks %s", s)
			continue
		}
		want := "**no**"
		if s.InService() {
			want = "yes"
		}
		if !strings.HasPrefix(inService, want) {
			t.Errorf("README.md says %s is in service %q, want %q", s, inService, want)
		}
	}
	for name := range listed {
		if !slices.Contains(names, name) {
			t.Errorf("README.md's state table lists %s, which is no state", name)
		}
	}
	data, _ := os.ReadFile("../../README.md")
	if want := "## The " + []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight"}[len(names)] + " states"; !strings.Contains(string(data), want) {
		t.Errorf("README.md does not head the table %q", want)
	}
}

// TestReadmeEndpointsAreTheServedOnes: the README's endpoint tables name
// every path probegate serves, and only those, each on its listener: the
// main table builtinRoutes, the default telemetry path and the landing
// page, the admin table adminRoutes. A path under a served subtree, such
// as /api/v1/backends/<name>/probe, is served.
func TestReadmeEndpointsAreTheServedOnes(t *testing.T) {
	for _, tc := range []struct {
		header string
		served []string
	}{
		{"path", append(builtinRoutes(), "/metrics", "/")},
		{"path (admin listener)", adminRoutes()},
	} {
		table := readmeTable(t, tc.header)
		var listed []string
		for _, cell := range table.Column(tc.header) {
			for _, p := range markdown.CodeSpans(cell) {
				p, _, _ = strings.Cut(p, "?")
				listed = append(listed, p)
			}
		}
		under := func(p, route string) bool {
			return p == route || (strings.HasSuffix(route, "/") && route != "/" && strings.HasPrefix(p, route))
		}
		for _, route := range tc.served {
			if !slices.ContainsFunc(listed, func(p string) bool { return under(p, route) }) {
				t.Errorf("README.md's table %q lacks %s", tc.header, route)
			}
		}
		for _, p := range listed {
			if !slices.ContainsFunc(tc.served, func(route string) bool { return under(p, route) }) {
				t.Errorf("README.md's table %q lists %s, which that listener does not serve", tc.header, p)
			}
		}
	}
}
