package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// demoHistory is the classes each demo backend's probes can have.
var demoHistory = map[string][]string{
	"healthy":        {"ok"},
	"dead":           {"failed"},
	"wrong-path":     {"refused"},
	"flapping-proxy": {"refused", "failed"},
	"overloaded":     {"failed"},
}

// demoHistoryShown is how many results every demo backend's history strip
// shows before the page is checked and photographed.
const demoHistoryShown = 12

// demoSettled is the state every demo backend settles in.
var demoSettled = map[string]string{
	"healthy":        "healthy",
	"dead":           "unhealthy",
	"wrong-path":     "probe_unsupported",
	"flapping-proxy": "unhealthy",
	"overloaded":     "unhealthy",
}

// chromium runs headless Chromium on url with extra flags, bounded in time,
// and returns its stdout.
func chromium(t *testing.T, url string, flags ...string) []byte {
	t.Helper()
	bin := requireTool(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr.String())
	}
	return stdout.Bytes()
}

// attr is the value of an element's attribute, "" when it has none.
func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// text is the text content of a node.
func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.TrimSpace(b.String())
}

// statusRow is what a backend's row of the rendered status page says.
type statusRow struct {
	dataState, stateText, inService string
	// results is the history strip's count of results (data-results),
	// historyClasses the class of every cell holding one, historyCells
	// the number of cells in all, availability its text.
	results        string
	historyClasses []string
	historyCells   int
	availability   string
}

// statusRows reads every backend row of a rendered status page.
func statusRows(t *testing.T, dom []byte) map[string]statusRow {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatalf("parse the rendered DOM: %v", err)
	}
	rows := map[string]statusRow{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "tr" || attr(n, "data-backend") == "" {
			continue
		}
		row := statusRow{dataState: attr(n, "data-state")}
		for c := range n.Descendants() {
			if c.Type == html.ElementNode && c.Data == "td" {
				switch attr(c, "data-field") {
				case "state":
					row.stateText = text(c)
				case "in-service":
					row.inService = text(c)
				case "history":
					row.results = attr(c, "data-results")
				}
			}
			if c.Type == html.ElementNode && attr(c, "data-field") == "availability" {
				row.availability = text(c)
			}
			if c.Type == html.ElementNode && c.Parent != nil && attr(c.Parent, "class") == "strip" {
				row.historyCells++
				if class := attr(c, "data-class"); class != "" {
					row.historyClasses = append(row.historyClasses, class)
				}
			}
		}
		rows[attr(n, "data-backend")] = row
	}
	return rows
}

// TestStatusPageInChromium renders /status of the real demo in headless
// Chromium once every demo backend has settled, and checks that each row
// shows the state /healthz reports, as text and as data, and a history
// strip of its results; it keeps a screenshot of the page in
// e2e/artifacts.
func TestStatusPageInChromium(t *testing.T) {
	p := startProbegate(t, "demo")
	var healthz map[string]healthzBackend
	waitFor(t, 15*time.Second, "every demo backend settled in /healthz", func() bool {
		healthz = getHealthz(t, p.base)
		for name, state := range demoSettled {
			if healthz[name].State != state {
				return false
			}
		}
		return true
	})

	waitFor(t, 30*time.Second, "every demo backend's history strip showing results", func() bool {
		rows := statusRows(t, []byte(getBody(t, p.base+"/status?refresh=0")))
		for name := range demoSettled {
			if n, _ := strconv.Atoi(rows[name].results); n < demoHistoryShown {
				return false
			}
		}
		return true
	})

	dom := chromium(t, p.base+"/status?refresh=0", "--dump-dom")
	rows := statusRows(t, dom)
	// Besides the listed backends, the demo's file_sd source swaps one
	// discovered backend every few seconds: exactly one of its two has a
	// row, whichever it was when the page was rendered.
	if len(rows) != len(demoSettled)+1 {
		t.Errorf("%d backend rows, want %d:\n%s", len(rows), len(demoSettled)+1, dom)
	}
	for name := range demoSettled {
		b := healthz[name]
		row, ok := rows[name]
		want := "yes"
		if !b.InService {
			want = "no"
		}
		if !ok || row.dataState != b.State || row.stateText != b.State || row.inService != want {
			t.Errorf("row of %s = %+v, want state %s (as data and text) and in service %s", name, row, b.State, want)
		}
	}
	// Every row draws a full strip of its results, in its backend's
	// classes, and the recent transitions name the demo's ejections.
	for name, classes := range demoHistory {
		row := rows[name]
		if row.historyCells != 60 || len(row.historyClasses) < demoHistoryShown || row.availability == "" {
			t.Errorf("history of %s: %d cells, %d results, availability %q; want 60 cells, at least %d results", name, row.historyCells, len(row.historyClasses), row.availability, demoHistoryShown)
		}
		for _, class := range row.historyClasses {
			if !slices.Contains(classes, class) {
				t.Errorf("history of %s has a %s result, want only %v: %v", name, class, classes, row.historyClasses)
				break
			}
		}
	}
	for _, want := range []string{`data-transition-backend="dead" data-from="unknown" data-to="unhealthy"`, `data-transition-backend="healthy" data-from="unknown" data-to="healthy"`} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the recent transitions lack %s", want)
		}
	}
	if !bytes.Contains(dom, []byte(`data-control="resume"`)) {
		t.Error("the paused page offers no way to resume refreshing")
	}

	artifacts, err := filepath.Abs("artifacts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, "status.png")
	os.Remove(shot)
	chromium(t, p.base+"/status?refresh=0", "--screenshot="+shot, "--window-size=1400,900")
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("no PNG screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot of /status: %s", shot)
}

// TestLandingPageLinksExist follows every link of the landing page on a
// real server: none may be a 404.
func TestLandingPageLinksExist(t *testing.T) {
	p := startProbegate(t, "--backend", "a=http://127.0.0.1:9")
	doc, err := html.Parse(strings.NewReader(getBody(t, p.base+"/")))
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "a" && strings.HasPrefix(attr(n, "href"), "/") {
			links = append(links, attr(n, "href"))
		}
	}
	for _, want := range []string{"/status", "/api/v1/status/config", "/status/discovery", "/healthz", "/metrics"} {
		if !strings.Contains(strings.Join(links, " "), want) {
			t.Errorf("the landing page does not link %s; links: %v", want, links)
		}
	}
	for _, link := range links {
		resp, err := http.Get(p.base + link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			t.Errorf("the landing page links %s, which is a 404", link)
		}
	}
}

// TestRunningConfigHidesSecrets: /api/v1/status/config answers as
// Prometheus does, with the configuration the file gave and no secret.
func TestRunningConfigHidesSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probegate.yml")
	cfg := `
health_probe: {interval: 3s}
http_client_config:
  basic_auth: {username: u, password: topsecret-basic}
backends:
  - name: a
    url: http://127.0.0.1:9
    http_client_config:
      authorization: {credentials: topsecret-token}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+path)
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			YAML string `json:"yaml"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(getBody(t, p.base+"/api/v1/status/config")), &answer); err != nil {
		t.Fatal(err)
	}
	if answer.Status != "success" || !strings.Contains(answer.Data.YAML, "interval: 3s") || !strings.Contains(answer.Data.YAML, "name: a") {
		t.Errorf("answer %+v", answer)
	}
	if strings.Contains(answer.Data.YAML, "topsecret") {
		t.Errorf("a secret is shown:\n%s", answer.Data.YAML)
	}
}
