package exporter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// getHealthz serves one GET /healthz and decodes the body generically,
// so the tests see field names and JSON types as a client does.
func getHealthz(t *testing.T, h http.Handler) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return doc
}

// jsonKeys fails unless obj is a JSON object with exactly keys.
func jsonKeys(t *testing.T, what string, obj any, keys ...string) map[string]any {
	t.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want an object", what, obj)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Errorf("%s has keys %v, want %v", what, got, keys)
	}
	return m
}

// checkFields compares fields of a decoded object with want, values
// as encoding/json decodes them (numbers are float64).
func checkFields(t *testing.T, what string, obj map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if !reflect.DeepEqual(obj[k], v) {
			t.Errorf("%s.%s = %#v (%T), want %#v (%T)", what, k, obj[k], obj[k], v, v)
		}
	}
}

var backendKeys = []string{"name", "url", "probe_path", "state", "in_service", "reachable",
	"verified", "consecutive_not_ok", "consecutive_good", "last_probe", "since", "downtime_seconds"}

// TestHealthzBeforeAnything checks the document of a pool nothing happened
// to yet: every key present with its JSON type, last_probe and last_fanout
// null.
func TestHealthzBeforeAnything(t *testing.T) {
	p := samplePool(t, sampleConfig("a", "b"))
	for name, lastRound := range map[string]func() *fanout.RoundSummary{
		"no round source":        nil,
		"round source, no round": func() *fanout.RoundSummary { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			doc := getHealthz(t, HealthzHandler(p, lastRound))
			jsonKeys(t, "document", doc, "backends", "pool", "readiness", "groups", "last_fanout")
			if groups, ok := doc["groups"].([]any); !ok || len(groups) != 0 {
				t.Errorf("groups = %#v in a pool without groups, want an empty array", doc["groups"])
			}
			if doc["last_fanout"] != nil {
				t.Errorf("last_fanout = %#v before any round, want null", doc["last_fanout"])
			}
			backends, ok := doc["backends"].([]any)
			if !ok || len(backends) != 2 {
				t.Fatalf("backends = %#v, want an array of 2", doc["backends"])
			}
			b := jsonKeys(t, "backends[0]", backends[0], backendKeys...)
			checkFields(t, "backends[0]", b, map[string]any{
				"name": "a", "url": "http://127.0.0.1:19001", "probe_path": "/healthz",
				"state": "unknown", "in_service": true, "reachable": true, "verified": false,
				"consecutive_not_ok": 0.0, "consecutive_good": 0.0, "last_probe": nil,
				"since": nil, "downtime_seconds": 0.0,
			})
			poolDoc := jsonKeys(t, "pool", doc["pool"], "configured", "in_service", "fail_open")
			checkFields(t, "pool", poolDoc, map[string]any{"configured": 2.0, "in_service": 2.0, "fail_open": false})
			readiness := jsonKeys(t, "readiness", doc["readiness"],
				"expected", "current_healthy", "desired_healthy", "disruptions_allowed")
			checkFields(t, "readiness", readiness, map[string]any{
				"expected": 2.0, "current_healthy": 2.0, "desired_healthy": 1.0, "disruptions_allowed": 1.0,
			})
		})
	}
}

// TestHealthzAfterProbesAndRound checks the last probe of an answered
// failure, of an unanswered one, and the last fan-out round, field by field.
func TestHealthzAfterProbesAndRound(t *testing.T) {
	p := samplePool(t, sampleConfig("a", "b"))
	bs := p.Backends()
	for range 3 {
		r := health.StatusResult(503)
		r.Time = time.Date(2024, 3, 1, 12, 0, 0, 500_000_000, time.FixedZone("CET", 3600))
		r.Duration = 250 * time.Millisecond
		bs[0].RecordProbe(r)
	}
	timeout := health.TimeoutResult("context deadline exceeded")
	timeout.Time = time.Date(2024, 3, 1, 11, 0, 1, 0, time.UTC)
	timeout.Duration = 2 * time.Second
	bs[1].RecordProbe(timeout)
	round := &fanout.RoundSummary{Time: time.Date(2024, 3, 1, 11, 0, 2, 0, time.UTC), Contributed: 1, Configured: 2, Partial: true}

	doc := getHealthz(t, HealthzHandler(p, func() *fanout.RoundSummary { return round }))
	backends := doc["backends"].([]any)

	a := jsonKeys(t, "backends[0]", backends[0], backendKeys...)
	checkFields(t, "backends[0]", a, map[string]any{
		"state": "unhealthy", "in_service": false, "reachable": true, "verified": true,
		"consecutive_not_ok": 3.0, "consecutive_good": 0.0,
	})
	lastA := jsonKeys(t, "backends[0].last_probe", a["last_probe"],
		"time", "class", "reason", "status_code", "duration_seconds", "error")
	checkFields(t, "backends[0].last_probe", lastA, map[string]any{
		"time": "2024-03-01T11:00:00.500Z", "class": "failed", "reason": "http_5xx",
		"status_code": 503.0, "duration_seconds": 0.25, "error": "",
	})

	b := jsonKeys(t, "backends[1]", backends[1], backendKeys...)
	checkFields(t, "backends[1]", b, map[string]any{
		"state": "unknown", "in_service": true, "reachable": true, "verified": false,
		"consecutive_not_ok": 1.0, "consecutive_good": 0.0,
	})
	lastB := jsonKeys(t, "backends[1].last_probe", b["last_probe"],
		"time", "class", "reason", "status_code", "duration_seconds", "error")
	checkFields(t, "backends[1].last_probe", lastB, map[string]any{
		"time": "2024-03-01T11:00:01.000Z", "class": "failed", "reason": "timeout",
		"status_code": 0.0, "duration_seconds": 2.0, "error": "context deadline exceeded",
	})

	fanout := jsonKeys(t, "last_fanout", doc["last_fanout"], "time", "contributed", "configured", "partial", "backends")
	checkFields(t, "last_fanout", fanout, map[string]any{
		"time": "2024-03-01T11:00:02.000Z", "contributed": 1.0, "configured": 2.0, "partial": true,
	})
	checkFields(t, "pool", doc["pool"].(map[string]any), map[string]any{"configured": 2.0, "in_service": 1.0, "fail_open": false})
}

// TestHealthzRefusedProbeHasEmptyReason checks that ok and refused results
// keep the reason key with an empty string, so every last_probe has the
// same keys.
func TestHealthzRefusedProbeHasEmptyReason(t *testing.T) {
	p := samplePool(t, sampleConfig("a"))
	recordResult(p.Backends()[0], 0, 404)
	doc := getHealthz(t, HealthzHandler(p, nil))
	b := doc["backends"].([]any)[0].(map[string]any)
	checkFields(t, "backends[0]", b, map[string]any{"state": "probe_unsupported", "consecutive_good": 1.0})
	checkFields(t, "backends[0].last_probe", b["last_probe"].(map[string]any), map[string]any{
		"class": "refused", "reason": "", "status_code": 404.0, "error": "",
	})
}

// TestHealthzAlways200WhenNothingIsInService checks that /healthz reports
// rather than judges: a pool with every backend out of service still gets
// 200, with fail_open set.
func TestHealthzAlways200WhenNothingIsInService(t *testing.T) {
	p := samplePool(t, sampleConfig("a"))
	recordResult(p.Backends()[0], 0, 503, 503, 503)
	doc := getHealthz(t, HealthzHandler(p, nil))
	checkFields(t, "pool", doc["pool"].(map[string]any), map[string]any{"configured": 1.0, "in_service": 0.0, "fail_open": true})
}

// TestHealthzEmptyPool checks that an empty pool is an empty array, not null.
func TestHealthzEmptyPool(t *testing.T) {
	p := samplePool(t, sampleConfig())
	rec := httptest.NewRecorder()
	HealthzHandler(p, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if !strings.Contains(rec.Body.String(), `"backends": []`) {
		t.Errorf("empty pool body has no empty backends array:\n%s", rec.Body.String())
	}
	doc := getHealthz(t, HealthzHandler(p, nil))
	checkFields(t, "pool", doc["pool"].(map[string]any), map[string]any{"configured": 0.0, "in_service": 0.0, "fail_open": false})
}

// TestHealthzMethods checks that HEAD gets the headers without a body and
// that a write method is refused with its Allow header.
func TestHealthzMethods(t *testing.T) {
	h := HealthzHandler(samplePool(t, sampleConfig("a")), nil)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/healthz", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("HEAD: status %d, %d body bytes, Content-Type %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"))
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d Allow %q, want 405 with Allow GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestHealthzShowsAStaleStore: with a shared maintenance store, /healthz
// says whether the entries it shows are the store's current ones; without
// one it has no maintenance_store key.
func TestHealthzShowsAStaleStore(t *testing.T) {
	p := samplePool(t, sampleConfig("a"))
	doc := getHealthz(t, HealthzHandlerWithStore(p, nil, func() HealthzStore { return HealthzStore{Kind: "etcd", Stale: true} }))
	store, ok := doc["maintenance_store"].(map[string]any)
	if !ok {
		t.Fatalf("no maintenance_store in %v", doc)
	}
	checkFields(t, "maintenance_store", store, map[string]any{"kind": "etcd", "healthy": false, "stale": true})
	if _, ok := getHealthz(t, HealthzHandler(p, nil))["maintenance_store"]; ok {
		t.Error("maintenance_store shown without a shared store")
	}
}

// TestHealthzGroups: with replica groups, groups[] lists each, in the
// order of its first member, with its replicas, those in service and
// whether its budget holds; a backend without a group is a group of its
// own.
func TestHealthzGroups(t *testing.T) {
	cfg := sampleConfig("a", "b", "c", "d")
	cfg.Backends[0].Group, cfg.Backends[1].Group, cfg.Backends[3].Group = "s1", "s1", "s2"
	cfg.Readiness.PerGroup = config.GroupBudget{MinAvailable: &config.IntOrPercent{Value: 2}}
	p := samplePool(t, cfg)
	for range cfg.HealthProbe.Failures {
		p.Backends()[1].RecordProbe(health.StatusResult(503))
	}
	doc := getHealthz(t, HealthzHandler(p, nil))
	groups, ok := doc["groups"].([]any)
	if !ok || len(groups) != 3 {
		t.Fatalf("groups = %#v, want 3", doc["groups"])
	}
	for i, want := range []map[string]any{
		{"name": "s1", "replicas": 2.0, "in_service": 1.0, "budget_ok": false},
		{"name": "c", "replicas": 1.0, "in_service": 1.0, "budget_ok": true},
		{"name": "s2", "replicas": 1.0, "in_service": 1.0, "budget_ok": true},
	} {
		what := fmt.Sprintf("groups[%d]", i)
		checkFields(t, what, jsonKeys(t, what, groups[i], "name", "replicas", "in_service", "budget_ok"), want)
	}
}
