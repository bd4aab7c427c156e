package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/probegate/probegate/collector/discovery"
)

// TestDiscoveryPageShowsEveryTargetAndWhy: one row per backend and per
// dropped target, carrying the backend's name or the reason as data, the
// labels as discovered (escaped: a label value is text, never markup),
// the error of an invalid target, and a note when more were dropped than
// are shown.
func TestDiscoveryPageShowsEveryTargetAndWhy(t *testing.T) {
	view := discovery.View{Sources: []discovery.SourceView{{
		Mechanism: "file", Config: "file_sd_configs[0]", ConfigFile: "probegate.yml", ConfigLine: 7, File: "sd.yml", Targets: 1003, Backends: 1,
		DroppedCounts: map[string]int{"relabel": 1, "invalid": 1001, "name_clash": 0, "limit": 0, "loop": 0},
		Active: []discovery.TargetView{{Source: "sd.yml:0", Backend: "pdb-1", URL: "http://10.0.0.1:80", ProbePath: "/healthz",
			Labels: map[string]string{"__address__": "10.0.0.1:80", "team": "<script>alert(1)</script>"}}},
		Dropped: []discovery.TargetView{
			{Source: "sd.yml:0", Reason: "relabel", Labels: map[string]string{"__address__": "10.0.0.2:80", "env": "test"}},
			{Source: "sd.yml:1", File: "sd.yml", Line: 12, Reason: "invalid", Error: `__address__ "alice:xxxxx@h" is not host:port`, Labels: map[string]string{"__address__": "alice:xxxxx@h"}},
		},
	}, {Mechanism: "dns", Config: "dns_sd_configs[0]", DroppedCounts: map[string]int{}}}}
	var asked []string
	h := DiscoveryHandler(func(target string) discovery.View {
		asked = append(asked, target)
		v := view
		v.Target = target
		return v
	})
	rec := get(t, h, "/status/discovery")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var backends, reasons []string
	scripts := 0
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			switch a.Key {
			case "data-backend":
				backends = append(backends, a.Val)
			case "data-reason":
				reasons = append(reasons, a.Val)
			}
		}
		if n.Data == "script" {
			scripts++
		}
	}
	if strings.Join(backends, " ") != "pdb-1" || strings.Join(reasons, " ") != "relabel invalid" {
		t.Errorf("rows: backends %v, reasons %v; want pdb-1, then relabel and invalid", backends, reasons)
	}
	if scripts != 0 || !strings.Contains(body, "&lt;script&gt;") {
		t.Error("a label value became markup")
	}
	for _, want := range []string{`env="test"`, `is not host:port`, "2 of 1002 are shown", `data-mechanism="dns"`, "No targets.",
		`<h2>file_sd_configs[0] <code>sd.yml</code></h2>`, "configured at probegate.yml:7", `<span data-line="12">line 12</span>`, `name="target"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if rec := get(t, h, "/status/discovery?target=10.0.0.2:80"); rec.Code != http.StatusOK || asked[len(asked)-1] != "10.0.0.2:80" ||
		!strings.Contains(rec.Body.String(), "Targets matching <code>10.0.0.2:80</code>") {
		t.Errorf("search: %d, asked for %q", rec.Code, asked)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/status/discovery", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", rec.Code)
	}
}
