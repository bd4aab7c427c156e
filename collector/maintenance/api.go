package maintenance

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/jsonanswer"
)

// The paths of the admin API.
const (
	// BackendsPath lists every backend with its state and maintenance.
	BackendsPath = "/api/v1/backends"
	// ReplicasPath lists the live replicas sharing the store, and for a
	// while those whose lease lapsed, marked stale.
	ReplicasPath = "/api/v1/replicas"
	// maintenancePattern is the ServeMux pattern of one backend's maintenance.
	maintenancePattern = BackendsPath + "/{name}/maintenance"
)

// MaintenancePath is the path of the named backend's maintenance: POST
// starts it, DELETE ends it.
func MaintenancePath(name string) string {
	return BackendsPath + "/" + url.PathEscape(name) + "/maintenance"
}

// maxRequestBytes bounds the body of a maintenance request.
const maxRequestBytes = 64 << 10

// maxReasonLength bounds the reason, which is stored and logged.
const maxReasonLength = 1024

// storeRetryAfter is the Retry-After, in seconds, of a request refused
// because the store could not be reached.
const storeRetryAfter = 5

// APIOptions are the settings of the admin API.
type APIOptions struct {
	// Guard is the admin listener's guard, which every path passes: with
	// the admin API disabled, every path answers 403 saying how to enable
	// it.
	Guard admin.Guard
	// Authenticated says the web configuration authenticates every client
	// with basic auth, so that the user name of a request is a verified
	// one; otherwise the audit field records the client's address.
	Authenticated bool
	// MaxTTL bounds the ttl a request may ask for.
	MaxTTL time.Duration
	// Replicas lists the live replicas and the stale ones (Replicas.Live),
	// nil when the store is not shared.
	Replicas func() []ReplicaView
}

// API is the admin API of maintenance.
type API struct {
	manager *Manager
	pool    *pool.Pool
	opts    APIOptions
	logger  log.Logger
}

// NewAPI returns the admin API over the manager's pool. A nil logger logs
// nothing.
func NewAPI(m *Manager, opts APIOptions, logger log.Logger) *API {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &API{manager: m, pool: m.pool, opts: opts, logger: logger}
}

// Register mounts the API on mux. The state-changing endpoint refuses
// cross-origin browser requests, so that a page a browser visits cannot
// take backends out.
func (a *API) Register(mux *http.ServeMux) {
	guard := a.opts.Guard
	mux.Handle(BackendsPath, guard.AdminAPI(http.HandlerFunc(a.list)))
	mux.Handle(maintenancePattern, guard.AdminAPI(http.NewCrossOriginProtection().Handler(http.HandlerFunc(a.maintenance))))
	mux.Handle(ReplicasPath, guard.AdminAPI(http.HandlerFunc(a.replicas)))
}

// onlyGet answers 405 to anything but GET and HEAD.
func onlyGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	jsonanswer.WriteError(w, r, http.StatusMethodNotAllowed, "use GET")
	return false
}

// listBackends is the answer of GET /api/v1/backends now.
func (a *API) listBackends() List {
	snap := a.pool.Snapshot()
	view := List{Backends: make([]BackendView, len(snap.Backends)), Absent: []entries.Entry{},
		Readiness: snap.Budget, Store: a.manager.Status()}
	present := make(map[string]bool, len(snap.Backends))
	for i, b := range snap.Backends {
		present[b.Name] = true
		view.Backends[i] = BackendView{Name: b.Name, URL: b.URL, Group: b.Group, State: b.Served.State().String(),
			InService: b.Served.InService(), Maintenance: b.Maintenance,
			Verdict: b.Fleet.Verdict(), VantagePoints: b.Fleet.Views(formatAPITime)}
	}
	for _, m := range a.pool.Maintenances() {
		if !present[m.Backend] {
			view.Absent = append(view.Absent, m)
		}
	}
	return view
}

// formatAPITime is t as encoding/json writes the other times of the
// admin API's answers, in UTC.
func formatAPITime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	if onlyGet(w, r) {
		jsonanswer.Write(w, r, http.StatusOK, a.listBackends())
	}
}

func (a *API) replicas(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	if a.opts.Replicas == nil {
		jsonanswer.WriteError(w, r, http.StatusNotFound, "replica views need maintenance.store: etcd, where replicas share their state")
		return
	}
	jsonanswer.Write(w, r, http.StatusOK, ReplicaList{Replicas: a.opts.Replicas()})
}

func (a *API) maintenance(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	switch r.Method {
	case http.MethodPost:
		a.enter(w, r, name)
	case http.MethodDelete:
		a.exit(w, r, name)
	default:
		w.Header().Set("Allow", "POST, DELETE")
		jsonanswer.WriteError(w, r, http.StatusMethodNotAllowed, "use POST to start a maintenance, DELETE to end it")
	}
}

func (a *API) enter(w http.ResponseWriter, r *http.Request, name string) {
	force, err := parseForce(r)
	if err != nil {
		jsonanswer.WriteError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	req, err := parseRequest(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		jsonanswer.WriteError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	entry, ttl, err := req.entry(a.opts.MaxTTL)
	if err != nil {
		jsonanswer.WriteError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	entry.Backend = name
	entry.By = a.requester(r)
	g, err := a.manager.enter(r.Context(), entry, ttl, force)
	var budgetErr *budgetError
	var notYet *notYetProbedError
	var groupErr *groupBudgetError
	switch {
	case errors.Is(err, pool.ErrUnknownBackend):
		jsonanswer.WriteError(w, r, http.StatusNotFound, fmt.Sprintf("no backend named %q", name))
	case errors.As(err, &notYet):
		awaited := notYet.Awaited
		level.Info(a.logger).Log("msg", "Maintenance refused: the readiness budget cannot be judged yet", "backend", name, "by", entry.By,
			"unjudged_backends", awaited.Unjudged, "discovery", strings.Join(awaited.Discovery, ","))
		w.Header().Set("Retry-After", strconv.Itoa(notYetProbedRetryAfter(awaited)))
		jsonanswer.Write(w, r, http.StatusServiceUnavailable, NotYetProbed{Error: notYet.Error() + "; retry later or use force",
			Awaiting: Awaiting{Backends: nonNil(awaited.Backends), Unjudged: awaited.Unjudged, Discovery: nonNil(awaited.Discovery)}})
	case errors.As(err, &budgetErr):
		b := budgetErr.Budget
		a.refuse(w, r, name, Refused{Error: budgetErr.Error(), Budget: b}, "Maintenance refused by the readiness budget", "by", entry.By,
			"expected", b.Expected, "current_healthy", b.CurrentHealthy, "desired_healthy", b.DesiredHealthy, "disruptions_allowed", b.DisruptionsAllowed)
	case errors.As(err, &groupErr):
		g := groupErr.Group
		a.refuse(w, r, name, Refused{Error: groupErr.Error(), Budget: groupErr.Budget, Group: &g},
			"Maintenance refused by the budget of the backend's replica group", "by", entry.By,
			"group", g.Name, "replicas", g.Expected, "current_healthy", g.CurrentHealthy, "desired_healthy", g.DesiredHealthy)
	case errors.Is(err, errContended):
		w.Header().Set("Retry-After", "1")
		jsonanswer.WriteError(w, r, http.StatusTooManyRequests, err.Error())
	case err != nil:
		a.storeUnavailable(w, r, err)
	default:
		jsonanswer.Write(w, r, http.StatusOK, Entered{Backend: name, State: "maintenance", Forced: g.Forced,
			Maintenance: g.Entry, Readiness: g.Budget})
	}
}

// notYetProbedRetryAfter is the Retry-After, in seconds, of a request
// the budget cannot judge yet: the longest probe interval of the backends
// without a verdict (each probe may bring one), at least a second; while
// only discovery is awaited, storeRetryAfter.
func notYetProbedRetryAfter(awaited pool.Awaited) int {
	if awaited.Interval <= 0 {
		return storeRetryAfter
	}
	return max(1, int((awaited.Interval+time.Second-1)/time.Second))
}

// nonNil is s, or an empty list for nil, so that JSON shows [] rather
// than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// refuse answers 429 for a maintenance of the named backend that a budget
// does not allow, with Retry-After and the budget's numbers, counts it
// and logs msg with keyvals.
func (a *API) refuse(w http.ResponseWriter, r *http.Request, name string, refused Refused, msg string, keyvals ...any) {
	a.manager.metrics.refusals.Inc()
	level.Info(a.logger).Log(append([]any{"msg", msg, "backend", name}, keyvals...)...)
	w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter(name)))
	refused.Error += "; retry later or use force"
	jsonanswer.Write(w, r, http.StatusTooManyRequests, refused)
}

// storeUnavailable answers 503 for a request the store could not take.
func (a *API) storeUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Retry-After", strconv.Itoa(storeRetryAfter))
	jsonanswer.WriteError(w, r, http.StatusServiceUnavailable, err.Error())
}

func parseForce(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("force")
	if v == "" {
		return false, nil
	}
	force, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("force=%q: want true or false", v)
	}
	return force, nil
}

// parseRequest reads the body of a maintenance request: one JSON object
// with the known keys and nothing after it.
func parseRequest(body io.Reader) (Request, error) {
	var req Request
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	const want = `the body must be one JSON object {"reason": "...", "ttl": "2h"}`
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("%s: %v", want, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, fmt.Errorf("%s, with nothing after it", want)
	}
	return req, nil
}

// entry checks the request and makes the entry it asks for, with its ttl
// (0: none). The reason is required: an entry that may outlive restarts
// must say why. A ttl may not exceed maxTTL (no limit when 0).
func (req Request) entry(maxTTL time.Duration) (entries.Entry, time.Duration, error) {
	var m entries.Entry
	m.Reason = strings.TrimSpace(req.Reason)
	switch {
	case m.Reason == "":
		return m, 0, errors.New("reason is required: say why the backend goes out")
	case len(m.Reason) > maxReasonLength:
		return m, 0, fmt.Errorf("reason is longer than %d bytes", maxReasonLength)
	}
	if req.TTL == "" {
		return m, 0, nil
	}
	ttl, err := model.ParseDuration(req.TTL)
	switch {
	case err != nil || ttl <= 0:
		return m, 0, fmt.Errorf("ttl %q: want a positive duration such as 30m, 2h or 1d", req.TTL)
	case maxTTL > 0 && time.Duration(ttl) > maxTTL:
		return m, 0, fmt.Errorf("ttl %q is longer than maintenance.max_ttl (%s)", req.TTL, model.Duration(maxTTL))
	}
	return m, time.Duration(ttl), nil
}

// requester is who asks, for the audit field: the basic-auth user when the
// web configuration verified it, else the client's IP address. A user name
// nobody checked is whatever the client typed.
func (a *API) requester(r *http.Request) string {
	if a.opts.Authenticated {
		if user, _, ok := r.BasicAuth(); ok && user != "" {
			return user
		}
	}
	if ip, ok := admin.ClientIP(r); ok {
		return ip.String()
	}
	return r.RemoteAddr
}

// retryAfter is the Retry-After of a refusal, in seconds: the budget can
// change no sooner than the next probe, so the backend's probe interval,
// at least a second; a minute when nothing probes it.
func (a *API) retryAfter(name string) int {
	for _, b := range a.pool.Backends() {
		if b.Name == name && b.Probe.Enabled {
			return max(1, int((time.Duration(b.Probe.Interval)+time.Second-1)/time.Second))
		}
	}
	return 60
}

func (a *API) exit(w http.ResponseWriter, r *http.Request, name string) {
	existed, saved, err := a.manager.exit(r.Context(), name)
	switch {
	case errors.Is(err, pool.ErrUnknownBackend):
		jsonanswer.WriteError(w, r, http.StatusNotFound, fmt.Sprintf("no backend named %q and no maintenance entry for it", name))
		return
	case err != nil:
		a.storeUnavailable(w, r, err)
		return
	}
	view := Ended{Backend: name, WasInMaintenance: existed, Saved: saved}
	for _, b := range a.pool.Backends() {
		if b.Name == name {
			view.State = b.Served().State().String()
		}
	}
	if existed {
		level.Info(a.logger).Log("msg", "Maintenance ended by request", "backend", name, "by", a.requester(r), "saved", saved)
	}
	jsonanswer.Write(w, r, http.StatusOK, view)
}
