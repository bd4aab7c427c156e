package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/pool"
)

// historyStrip reads the history strip of a backend's row: the class
// of each cell that holds a result, their titles, the number of cells in
// all, and the availability text.
func historyStrip(t *testing.T, page, backend string) (classes, titles []string, cells int, availability string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "tr" || attrOf(n, "data-backend") != backend {
			continue
		}
		for c := range n.Descendants() {
			if c.Type != html.ElementNode {
				continue
			}
			if attrOf(c.Parent, "class") == "strip" {
				cells++
				if class := attrOf(c, "data-class"); class != "" {
					classes, titles = append(classes, class), append(titles, attrOf(c, "title"))
				}
			}
			if attrOf(c, "data-field") == "availability" && c.FirstChild != nil {
				availability = c.FirstChild.Data
			}
		}
	}
	return classes, titles, cells, availability
}

func attrOf(n *html.Node, name string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// TestPageShowsHistoryStrips: each row shows its last results as cells
// coloured by class, oldest first, titled with time, status or reason and
// duration, padded to the full strip, and the availability over them.
func TestPageShowsHistoryStrips(t *testing.T) {
	start := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testPool(t, func() time.Time { return start.Add(time.Hour) }, "http://127.0.0.1:19001", "http://127.0.0.1:19002", "http://127.0.0.1:19003")
	bs := p.Backends()
	feedAt := func(b *pool.Backend, i int, r health.Result) {
		r.Time, r.Duration = start.Add(time.Duration(i)*time.Second), 12*time.Millisecond
		b.RecordProbe(r)
	}
	for i := range history.ProbeLength + 10 {
		r := health.StatusResult(200)
		if i%4 == 3 {
			r = health.TimeoutResult("no answer")
		}
		feedAt(bs[0], i, r)
	}
	feedAt(bs[1], 0, health.StatusResult(404))
	feedAt(bs[1], 1, health.Result{Class: health.ClassFailed, Reason: health.ReasonBodyMismatch, StatusCode: 200})
	body := get(t, Handler(Options{Pool: p, Started: start}), "/status?refresh=0").Body.String()

	classes, titles, cells, availability := historyStrip(t, body, "a")
	if cells != history.ProbeLength || len(classes) != history.ProbeLength {
		t.Fatalf("backend a: %d cells, %d with a result; want %d of each", cells, len(classes), history.ProbeLength)
	}
	// The strip starts at result 10, whose index mod 4 is 2.
	for i, class := range classes {
		want := "ok"
		if (i+10)%4 == 3 {
			want = "failed"
		}
		if class != want {
			t.Fatalf("cell %d is %s, want %s: %v", i, class, want, classes)
		}
	}
	if titles[0] != "2024-03-01T12:00:10Z · 200 · 12ms" || titles[1] != "2024-03-01T12:00:11Z · timeout · 12ms" {
		t.Errorf("titles %q, %q", titles[0], titles[1])
	}
	if availability != "75.0% available" {
		t.Errorf("availability of a %q, want 75.0%% available", availability)
	}

	classes, titles, cells, availability = historyStrip(t, body, "b")
	if cells != history.ProbeLength || strings.Join(classes, ",") != "refused,failed" || titles[1] != "2024-03-01T12:00:01Z · 200 body_mismatch · 12ms" || availability != "0.0% available" {
		t.Errorf("backend b: %d cells %v %q, availability %q", cells, classes, titles, availability)
	}
	if classes, _, cells, availability := historyStrip(t, body, "c"); cells != history.ProbeLength || len(classes) != 0 || availability != "not probed yet" {
		t.Errorf("backend c: %d cells, %v, availability %q", cells, classes, availability)
	}
}

// TestPageShowsRecentTransitions: the pool's state changes, newest first,
// each with its time, backend, states and the class and status or reason
// of the probe that caused it, or its cause.
func TestPageShowsRecentTransitions(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testPool(t, func() time.Time { return now }, "http://127.0.0.1:19001", "http://127.0.0.1:19002")
	h := Handler(Options{Pool: p, Started: now})
	if body := get(t, h, "/status").Body.String(); !strings.Contains(body, "No backend has changed state yet.") {
		t.Error("an empty log is not said so")
	}
	bs := p.Backends()
	bs[0].RecordProbe(health.StatusResult(200))
	now = now.Add(time.Minute)
	for range 3 {
		bs[0].RecordProbe(health.StatusResult(503))
	}
	now = now.Add(time.Minute)
	p.SetMaintenance([]entries.Entry{{Backend: "b", Reason: "x"}}, entries.KeptByClock)
	body := get(t, h, "/status").Body.String()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "tr" && attrOf(n, "data-transition-backend") != "" {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.Data == "td" {
					var b bytes.Buffer
					for d := range c.Descendants() {
						if d.Type == html.TextNode {
							b.WriteString(d.Data)
						}
					}
					cells = append(cells, b.String())
				}
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	}
	want := []string{
		"0s ago | b | unknown → maintenance | — | maintenance",
		"1m0s ago | a | healthy → unhealthy | failed | 503",
		"2m0s ago | a | unknown → healthy | ok | 200",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("transitions:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(body, `<time datetime="2024-03-01T12:01:00Z"`) {
		t.Error("a transition lacks its exact time")
	}
}
