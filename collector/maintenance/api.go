package maintenance

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/pool"
)

// The paths of the admin API.
const (
	// BackendsPath lists every backend with its state and maintenance.
	BackendsPath = "/api/v1/backends"
	// maintenancePattern is the ServeMux pattern of one backend's maintenance.
	maintenancePattern = BackendsPath + "/{name}/maintenance"
)

// maxRequestBytes bounds the body of a maintenance request.
const maxRequestBytes = 64 << 10

// maxReasonLength bounds the reason, which is stored and logged.
const maxReasonLength = 1024

// API is the admin API of maintenance. Disabled, every path answers 403
// saying how to enable it.
type API struct {
	pool     *pool.Pool
	enabled  bool
	logger   log.Logger
	refusals prometheus.Counter
	// now is the clock a ttl counts from; the pool's clock in production.
	now func() time.Time
	// loopbackOnly refuses clients that are not on a loopback address.
	loopbackOnly bool
}

// NewAPI returns the admin API over the pool and registers its metric. A
// nil logger logs nothing.
func NewAPI(p *pool.Pool, enabled bool, reg prometheus.Registerer, logger log.Logger) *API {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	refusals := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_maintenance_refusals_total",
		Help: "Maintenance requests refused because the readiness budget allowed no disruption.",
	})
	reg.MustRegister(refusals)
	return &API{pool: p, enabled: enabled, logger: logger, refusals: refusals, now: time.Now}
}

// RestrictToLoopback makes the API answer 403 to every client that does
// not connect from a loopback address, for `probegate demo`, which enables
// the API whatever address it listens on. Call it before serving.
func (a *API) RestrictToLoopback() { a.loopbackOnly = true }

// Register mounts the API on mux. The state-changing endpoint refuses
// cross-origin browser requests, so that a page a browser visits cannot
// take backends out.
func (a *API) Register(mux *http.ServeMux) {
	mux.Handle(BackendsPath, a.gated(http.HandlerFunc(a.list)))
	mux.Handle(maintenancePattern, a.gated(http.NewCrossOriginProtection().Handler(http.HandlerFunc(a.maintenance))))
}

// gated answers 403 while the admin API is disabled.
func (a *API) gated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.enabled {
			writeError(w, http.StatusForbidden, "the admin API is disabled; start probegate with --web.enable-admin-api to enable it")
			return
		}
		if a.loopbackOnly && !fromLoopback(r) {
			writeError(w, http.StatusForbidden, "the admin API answers loopback clients only here")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// backendView is one backend of GET /api/v1/backends.
type backendView struct {
	Name        string            `json:"name"`
	URL         string            `json:"url"`
	State       string            `json:"state"`
	InService   bool              `json:"in_service"`
	Maintenance *pool.Maintenance `json:"maintenance"`
}

// listView is the answer of GET /api/v1/backends.
type listView struct {
	Backends []backendView `json:"backends"`
	// Absent are the maintenance entries of backends the pool does not
	// have now (removed by a reload); they apply again when the backend
	// returns, unless they expire first.
	Absent    []pool.Maintenance `json:"absent_maintenance"`
	Readiness pool.Budget        `json:"readiness"`
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	snap := a.pool.Snapshot()
	view := listView{Backends: make([]backendView, len(snap.Backends)), Absent: []pool.Maintenance{}, Readiness: snap.Budget}
	present := make(map[string]bool, len(snap.Backends))
	for i, b := range snap.Backends {
		present[b.Name] = true
		view.Backends[i] = backendView{Name: b.Name, URL: b.URL, State: b.Health.State.String(),
			InService: b.Health.InService(), Maintenance: b.Maintenance}
	}
	for _, m := range a.pool.Maintenances() {
		if !present[m.Backend] {
			view.Absent = append(view.Absent, m)
		}
	}
	writeJSON(w, http.StatusOK, view)
}

// request is the body of POST …/maintenance.
type request struct {
	Reason string `json:"reason"`
	// TTL ends the maintenance by itself after this long, in Prometheus
	// duration syntax (2h, 30m, 1d); empty for none.
	TTL string `json:"ttl"`
}

// entered is the answer to a maintenance request the pool granted.
type entered struct {
	Backend     string           `json:"backend"`
	State       string           `json:"state"`
	Forced      bool             `json:"forced"`
	Maintenance pool.Maintenance `json:"maintenance"`
	Readiness   pool.Budget      `json:"readiness"`
}

// refused is the 429 answer: the budget's numbers.
type refused struct {
	Error string `json:"error"`
	pool.Budget
}

// ended is the answer to DELETE …/maintenance.
type ended struct {
	Backend string `json:"backend"`
	// WasInMaintenance is false when there was nothing to end.
	WasInMaintenance bool `json:"was_in_maintenance"`
	// State is the backend's state now, empty when the pool does not have it.
	State string `json:"state,omitempty"`
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
		writeError(w, http.StatusMethodNotAllowed, "use POST to start a maintenance, DELETE to end it")
	}
}

func (a *API) enter(w http.ResponseWriter, r *http.Request, name string) {
	force, m, err := parseEnter(w, r, a.now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	m.Backend = name
	m.By = requester(r)
	after, forced, err := a.pool.EnterMaintenance(m, force)
	var budgetErr *pool.BudgetError
	switch {
	case errors.Is(err, pool.ErrUnknownBackend):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no backend named %q", name))
		return
	case errors.As(err, &budgetErr):
		a.refusals.Inc()
		level.Info(a.logger).Log("msg", "Maintenance refused by the readiness budget", "backend", name, "by", m.By,
			"expected", budgetErr.Budget.Expected, "current_healthy", budgetErr.Budget.CurrentHealthy,
			"desired_healthy", budgetErr.Budget.DesiredHealthy, "disruptions_allowed", budgetErr.Budget.DisruptionsAllowed)
		w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter(name)))
		writeJSON(w, http.StatusTooManyRequests, refused{Error: budgetErr.Error() + "; retry later or use force", Budget: budgetErr.Budget})
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("backend %s is in maintenance, but the state could not be saved: %v", name, err))
		return
	}
	view := entered{Backend: name, State: "maintenance", Forced: forced, Readiness: after}
	for _, e := range a.pool.Maintenances() {
		if e.Backend == name {
			view.Maintenance = e
		}
	}
	writeJSON(w, http.StatusOK, view)
}

// parseEnter reads the query and the body of a maintenance request. The
// reason is required: an entry that may outlive restarts must say why.
func parseEnter(w http.ResponseWriter, r *http.Request, now time.Time) (force bool, m pool.Maintenance, err error) {
	if v := r.URL.Query().Get("force"); v != "" {
		if force, err = strconv.ParseBool(v); err != nil {
			return false, m, fmt.Errorf("force=%q: want true or false", v)
		}
	}
	var req request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return false, m, fmt.Errorf(`the body must be a JSON object {"reason": "...", "ttl": "2h"}: %v`, err)
	}
	m.Reason = strings.TrimSpace(req.Reason)
	switch {
	case m.Reason == "":
		return false, m, errors.New("reason is required: say why the backend goes out")
	case len(m.Reason) > maxReasonLength:
		return false, m, fmt.Errorf("reason is longer than %d bytes", maxReasonLength)
	}
	if req.TTL != "" {
		ttl, err := model.ParseDuration(req.TTL)
		if err != nil || ttl <= 0 {
			return false, m, fmt.Errorf("ttl %q: want a positive duration such as 30m, 2h or 1d", req.TTL)
		}
		m.Until = now.Add(time.Duration(ttl)).Round(0)
	}
	return force, m, nil
}

// fromLoopback reports whether the client connects from a loopback address.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// requester is who asks: the basic-auth user, else the client address.
func requester(r *http.Request) string {
	if user, _, ok := r.BasicAuth(); ok && user != "" {
		return user
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
	existed, err := a.pool.ExitMaintenance(name)
	switch {
	case errors.Is(err, pool.ErrUnknownBackend):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no backend named %q and no maintenance entry for it", name))
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("the maintenance of %s ended, but the state could not be saved: %v", name, err))
		return
	}
	view := ended{Backend: name, WasInMaintenance: existed}
	for _, b := range a.pool.Backends() {
		if b.Name == name {
			view.State = b.Health().State.String()
		}
	}
	if existed {
		level.Info(a.logger).Log("msg", "Maintenance ended by request", "backend", name, "by", requester(r))
	}
	writeJSON(w, http.StatusOK, view)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}
