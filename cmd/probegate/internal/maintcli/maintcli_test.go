package maintcli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/maintenance"
)

// run parses args as probegate does and runs the maintenance command.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	app := kingpin.New("probegate", "test")
	c := Register(app)
	command, err := app.Parse(args)
	if err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	if !c.Handles(command) {
		t.Fatalf("%q is not a maintenance command", command)
	}
	var out, errOut bytes.Buffer
	code = c.Run(command, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestExitCodes: 2 for a mistake in the command line, before any request;
// 1 when probegate refuses, with the budget's numbers; 0 when granted.
func TestExitCodes(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Query().Get("force") == "true" {
			json.NewEncoder(w).Encode(maintenance.Entered{Backend: "a", Forced: true, Maintenance: entries.Entry{Reason: "disk"}})
			return
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		json.NewEncoder(w).Encode(maintenance.Refused{Error: "no", Budget: budget.Budget{Expected: 2, CurrentHealthy: 1, DesiredHealthy: 1}})
	}))
	defer srv.Close()

	for _, args := range [][]string{
		{"maintenance", "--url=ftp://x", "start", "a", "--reason=disk"},
		{"maintenance", "--url=" + srv.URL, "start", "a", "--reason= "},
		{"maintenance", "--url=" + srv.URL, "start", "a", "--reason=disk", "--ttl=soon"},
	} {
		if code, _, stderr := run(t, args...); code != 2 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, stderr)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
	code, _, stderr := run(t, "maintenance", "--url="+srv.URL, "start", "a", "--reason=disk")
	if want := "expected=2 current_healthy=1 desired_healthy=1 disruptions_allowed=0); retry in 7s"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("refused: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	code, stdout, _ := run(t, "maintenance", "--url="+srv.URL, "start", "a", "--reason=disk", "--force")
	if code != 0 || !strings.Contains(stdout, "a is in maintenance until stopped (reason: disk)") || !strings.Contains(stdout, "forced") {
		t.Errorf("forced: exit %d, stdout %q", code, stdout)
	}
	srv.Close()
	if code, _, stderr := run(t, "maintenance", "--url="+srv.URL, "list"); code != 1 || !strings.Contains(stderr, "cannot reach probegate") {
		t.Errorf("unreachable: exit %d, stderr %q; want 1", code, stderr)
	}
}

// TestListEscapesControlCharacters reproduces the audit's finding: a
// maintenance reason with escape sequences erased lines of `probegate
// maintenance list` and forged a row. Every field from the server shows
// escaped, and the output holds no control character but its own line
// ends and the table's spaces.
func TestListEscapesControlCharacters(t *testing.T) {
	hostile := "disk\x1b[1A\x1b[2K\rb9  maintenance  yes\nforged\ttab \u009b2J \u202eevil"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(maintenance.List{
			Backends: []maintenance.BackendView{{
				Name: "b0\x1b]0;owned\a", State: "maintenance",
				Maintenance: &entries.Entry{Backend: "b0", Reason: hostile, By: "op\x1b[8m"},
			}},
			Store: maintenance.StoreStatus{Kind: "file", Healthy: true},
		})
	}))
	defer srv.Close()
	code, stdout, stderr := run(t, "maintenance", "--url="+srv.URL, "list")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for i, r := range stdout {
		if r != '\n' && (r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e') {
			t.Fatalf("the output holds the control character %U at byte %d:\n%q", r, i, stdout)
		}
	}
	for _, want := range []string{`b0\x1b]0;owned\a`, `disk\x1b[1A\x1b[2K\rb9  maintenance  yes\nforged\ttab \u009b2J \u202eevil`, `op\x1b[8m`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout)
		}
	}
	if lines := strings.Count(stdout, "\n"); lines != 4 {
		t.Errorf("%d lines, want 4 (header, one row, blank, readiness):\n%s", lines, stdout)
	}
}

// TestListWarnsOfAStaleStore: the table is printed, but an unhealthy
// store, or an answer from saved state, is a warning on stderr and exit
// 3, so that a script cannot take an old list for the truth.
func TestListWarnsOfAStaleStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store string
		code  int
		warn  string
	}{
		{"healthy", `{"kind":"etcd","healthy":true}`, 0, ""},
		{"unhealthy", `{"kind":"etcd","healthy":false,"error":"context deadline exceeded"}`, 3,
			"probegate maintenance list: warning: the etcd maintenance store is unhealthy (context deadline exceeded): this list is the last state probegate knew and may be out of date\n"},
		{"from saved state", `{"kind":"etcd","healthy":true,"stale":true}`, 3,
			"probegate maintenance list: warning: this list is from the state probegate saved, not from the etcd maintenance store: it may be out of date\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"backends":[{"name":"a","url":"http://127.0.0.1:1","state":"healthy","in_service":true}],"absent":[],` +
					`"readiness":{},"store":` + tc.store + `}`))
			}))
			defer srv.Close()
			code, stdout, stderr := run(t, "maintenance", "--url="+srv.URL, "list")
			if code != tc.code || stderr != tc.warn || !strings.Contains(stdout, "a     healthy  yes") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, the table and %q", code, stdout, stderr, tc.code, tc.warn)
			}
		})
	}
}

// TestStartNamesWhatIsWrongWithTheTTL: a negative, zero or absurdly long
// ttl is refused before any request, saying which.
func TestStartNamesWhatIsWrongWithTheTTL(t *testing.T) {
	for ttl, want := range map[string]string{
		"-5m":      `--ttl "-5m" is negative`,
		"0s":       `--ttl "0s" is zero`,
		"11y":      `--ttl "11y" is longer than 10y`,
		"1000000y": `--ttl "1000000y" is too long`,
		"soon":     `--ttl "soon": want a positive duration such as 30m, 2h or 1d`,
	} {
		code, _, stderr := run(t, "maintenance", "--url=http://127.0.0.1:1", "start", "a", "--reason=disk", "--ttl="+ttl)
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("--ttl=%s: exit %d, stderr %q; want 2 and %q", ttl, code, stderr, want)
		}
	}
}

// TestStoreUnavailableIsNotUnreachable: when probegate answers 503
// because its maintenance store cannot be reached, start, stop and list
// say what probegate said, and that it could not do it now, with exit 4,
// never that probegate cannot be reached; a probegate that took the
// request and did not answer in time is told apart from one that cannot
// be reached.
func TestStoreUnavailableIsNotUnreachable(t *testing.T) {
	const said = "the etcd maintenance store is unavailable, nothing changed: etcd: write /probegate/default/maintenance: context deadline exceeded"
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": said})
	}))
	defer unavailable.Close()
	for _, args := range [][]string{
		{"start", "a", "--reason=disk"},
		{"stop", "a"},
		{"list"},
	} {
		code, _, stderr := run(t, append([]string{"maintenance", "--url=" + unavailable.URL}, args...)...)
		if code != 4 || !strings.Contains(stderr, said) || !strings.Contains(stderr, "retry in 5s") || strings.Contains(stderr, "cannot reach") {
			t.Errorf("%q against a 503: exit %d, stderr %q; want 4, what probegate said and when to retry", args, code, stderr)
		}
	}

	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer silent.Close()
	defer close(release)
	code, _, stderr := run(t, "maintenance", "--url="+silent.URL, "--timeout=200ms", "start", "a", "--reason=disk")
	if code != 1 || strings.Contains(stderr, "cannot reach") || !strings.Contains(stderr, "no answer within 200ms") {
		t.Errorf("no answer: exit %d, stderr %q; want 1, saying probegate took the request but gave no answer in time", code, stderr)
	}
}

// TestStartNamesTheRefusingGroup: a request refused by the budget of the
// backend's replica group says so, with the group's name and numbers.
func TestStartNamesTheRefusingGroup(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusTooManyRequests)
		json.NewEncoder(w).Encode(maintenance.Refused{Error: "no", Budget: budget.Budget{Expected: 8, CurrentHealthy: 7, DisruptionsAllowed: 7},
			Group: &budget.Group{Name: "s1", Budget: budget.Budget{Expected: 2, CurrentHealthy: 1, DesiredHealthy: 1}, Budgeted: true}})
	}))
	defer srv.Close()
	code, _, stderr := run(t, "maintenance", "--url="+srv.URL, "start", "s1-b", "--reason=disk")
	if want := `the budget of replica group "s1" allows no disruption (expected=2 current_healthy=1 desired_healthy=1 disruptions_allowed=0); retry in 5s`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("refused: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
