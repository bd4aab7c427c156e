package exporter

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/pool"
)

// healthzTimeFormat is RFC 3339 in UTC with a fixed millisecond fraction,
// so every time in /healthz has the same width and sorts as text.
const healthzTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// healthzReport is the /healthz document. Its field names are a contract
// with operators' scripts: docs/operations.md documents them, and they change only
// together with it.
type healthzReport struct {
	Backends  []healthzBackend `json:"backends"`
	Pool      healthzPool      `json:"pool"`
	Readiness healthzReadiness `json:"readiness"`
	// Groups are the replica groups, when some backend was given one;
	// an empty array otherwise.
	Groups     []healthzGroup `json:"groups"`
	LastFanout *healthzRound  `json:"last_fanout"`
	// MaintenanceStore is the maintenance store's health, with a store
	// several replicas share; absent otherwise.
	MaintenanceStore *HealthzStore `json:"maintenance_store,omitempty"`
	// Probing is shared probing's mode, shared or local, and Dissenters
	// the vantage points named lone dissenters; both absent while shared
	// probing is off.
	Probing    string             `json:"probing,omitempty"`
	Dissenters []healthzDissenter `json:"dissenters,omitzero"`
}

// healthzDissenter is a vantage point named a lone dissenter: on how many
// backends it disagrees alone with the fleet's verdict now, and how many
// times it was named since this replica started.
type healthzDissenter struct {
	Replica       string `json:"replica"`
	Backends      int    `json:"backends"`
	Disagreements uint64 `json:"disagreements"`
}

type healthzBackend struct {
	Name             string            `json:"name"`
	URL              string            `json:"url"`
	ProbePath        string            `json:"probe_path"`
	State            string            `json:"state"`
	InService        bool              `json:"in_service"`
	Reachable        bool              `json:"reachable"`
	Verified         bool              `json:"verified"`
	ConsecutiveNotOK int               `json:"consecutive_not_ok"`
	ConsecutiveGood  int               `json:"consecutive_good"`
	LastProbe        *healthzLastProbe `json:"last_probe"`
	// Since is the time of the last state change, null before the first;
	// DowntimeSeconds the total time out of service, the current
	// stretch included.
	Since           *string        `json:"since"`
	DowntimeSeconds float64        `json:"downtime_seconds"`
	Maintenance     *entries.Entry `json:"maintenance,omitempty"`
	// Ejection is set while outlier detection holds the backend out, or
	// a dry run would.
	Ejection *healthzEjection `json:"ejection,omitempty"`
	// Verdict says whether the backend is served by its vantage points'
	// verdicts (shared) or by this replica's own probes (local), and
	// VantagePoints are those replicas; both absent while shared probing
	// does not judge the backend.
	Verdict       string                  `json:"verdict,omitempty"`
	VantagePoints []pool.VantagePointView `json:"vantage_points,omitzero"`
}

// healthzEjection is an outlier ejection: why, since and until when, and
// whether it is enforced (false: a dry run's record).
type healthzEjection struct {
	Reason   string `json:"reason"`
	Since    string `json:"since"`
	Until    string `json:"until"`
	Enforced bool   `json:"enforced"`
}

// healthzLastProbe keeps reason and error as empty strings rather than
// omitting them, so every last_probe object has the same keys.
type healthzLastProbe struct {
	Time            string  `json:"time"`
	Class           string  `json:"class"`
	Reason          string  `json:"reason"`
	StatusCode      int     `json:"status_code"`
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error"`
}

type healthzPool struct {
	Configured int  `json:"configured"`
	InService  int  `json:"in_service"`
	FailOpen   bool `json:"fail_open"`
}

type healthzReadiness struct {
	Expected           int `json:"expected"`
	CurrentHealthy     int `json:"current_healthy"`
	DesiredHealthy     int `json:"desired_healthy"`
	DisruptionsAllowed int `json:"disruptions_allowed"`
}

// healthzGroup is one replica group: its replicas, those in service, and
// whether its budget (readiness.per_group) holds; a group without one
// always holds.
type healthzGroup struct {
	Name      string `json:"name"`
	Replicas  int    `json:"replicas"`
	InService int    `json:"in_service"`
	BudgetOK  bool   `json:"budget_ok"`
}

type healthzRound struct {
	Time        string `json:"time"`
	Contributed int    `json:"contributed"`
	Configured  int    `json:"configured"`
	Partial     bool   `json:"partial"`
	// Backends is every configured backend's part in the round.
	Backends []healthzRoundBackend `json:"backends"`
}

// healthzRoundBackend is one backend's outcome in a fan-out round:
// contributed, failed (with any HTTP status) or skipped (not selected: out
// of service), with the reason a failed or skipped one is missing in the
// words of X-Backends-Missing.
type healthzRoundBackend struct {
	Name string `json:"name"`
	// Group is the backend's replica group, shown when the pool has any.
	Group   string `json:"group,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Status  int    `json:"status"`
}

// HealthzHandler serves /healthz: every backend's health, the pool, the
// readiness budget and the last fan-out round as JSON. It always answers
// 200 to GET and HEAD, whatever the backends' health: it is for people and
// scripts, the gate's /ready is for load balancers. lastRound may be nil or
// return nil before the first fan-out round.
func HealthzHandler(backends *pool.Pool, lastRound func() *fanout.RoundSummary) http.Handler {
	return HealthzHandlerWithStore(backends, lastRound, nil)
}

// HealthzStore is the maintenance store's health in /healthz.
type HealthzStore struct {
	Kind string `json:"kind"`
	// Healthy is false while the store cannot be reached, and while the
	// state in force is not the store's own.
	Healthy bool `json:"healthy"`
	// Stale is set while the maintenance entries in force may not be the
	// store's current ones: the store cannot be reached, or this replica
	// serves the state it saved before a restart.
	Stale bool `json:"stale"`
	// LastSync is when the store last answered, RFC 3339; empty before
	// the first time.
	LastSync string `json:"last_sync,omitempty"`
}

// HealthzHandlerWithStore is HealthzHandler with the maintenance store's
// health, which store (when not nil) reports at each request.
func HealthzHandlerWithStore(backends *pool.Pool, lastRound func() *fanout.RoundSummary, store func() HealthzStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		var round *fanout.RoundSummary
		if lastRound != nil {
			round = lastRound()
		}
		report := newHealthzReport(backends.Snapshot(), round)
		if store != nil {
			st := store()
			report.MaintenanceStore = &st
		}
		body, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			// Only a non-finite float could get here; say so rather than
			// send half a document.
			http.Error(w, "encode /healthz: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(append(body, '\n'))
		}
	})
}

func newHealthzReport(s pool.Snapshot, round *fanout.RoundSummary) healthzReport {
	report := healthzReport{
		// An empty pool is an empty array, never null.
		Backends: make([]healthzBackend, len(s.Backends)),
		Pool: healthzPool{
			Configured: len(s.Backends),
			InService:  s.InService,
			FailOpen:   s.FailOpen,
		},
		Readiness: healthzReadiness{
			Expected:           s.Budget.Expected,
			CurrentHealthy:     s.Budget.CurrentHealthy,
			DesiredHealthy:     s.Budget.DesiredHealthy,
			DisruptionsAllowed: s.Budget.DisruptionsAllowed,
		},
		Groups:  make([]healthzGroup, len(s.Groups)),
		Probing: s.Probing,
	}
	// Dissenters is nil while shared probing is off, and the list, empty
	// or not, while it is on.
	if dissenters := s.Dissenters(); dissenters != nil {
		report.Dissenters = make([]healthzDissenter, len(dissenters))
		for i, d := range dissenters {
			report.Dissenters[i] = healthzDissenter{Replica: d.Replica, Backends: d.Backends, Disagreements: d.Named}
		}
	}
	for i, g := range s.Groups {
		report.Groups[i] = healthzGroup{Name: g.Name, Replicas: g.Expected, InService: g.CurrentHealthy, BudgetOK: g.Holds()}
	}
	for i, b := range s.Backends {
		report.Backends[i] = healthzBackend{
			Name:             b.Name,
			URL:              b.URL,
			ProbePath:        b.ProbePath,
			State:            b.Served.State().String(),
			InService:        b.Served.InService(),
			Reachable:        b.Health.Reachable(),
			Verified:         b.Health.Verified,
			ConsecutiveNotOK: b.Health.NotOK,
			ConsecutiveGood:  b.Health.Good,
			DowntimeSeconds:  b.DowntimeAt(s.Time).Seconds(),
			Maintenance:      b.Maintenance,
			Verdict:          b.Fleet.Verdict(),
			VantagePoints:    b.Fleet.Views(formatHealthzTime),
		}
		if o := b.Outlier; o.Ejected {
			report.Backends[i].Ejection = &healthzEjection{Reason: o.Reason.String(), Since: formatHealthzTime(o.Since),
				Until: formatHealthzTime(o.Until), Enforced: o.Enforced}
		}
		if !b.Since.IsZero() {
			since := formatHealthzTime(b.Since)
			report.Backends[i].Since = &since
		}
		if p := b.LastProbe; p != nil {
			report.Backends[i].LastProbe = &healthzLastProbe{
				Time:            formatHealthzTime(p.Time),
				Class:           p.Class.String(),
				Reason:          p.Reason.String(),
				StatusCode:      p.StatusCode,
				DurationSeconds: p.Duration.Seconds(),
				Error:           p.Err,
			}
		}
	}
	if round != nil {
		report.LastFanout = &healthzRound{
			Time:        formatHealthzTime(round.Time),
			Contributed: round.Contributed,
			Configured:  round.Configured,
			Partial:     round.Partial,
			Backends:    make([]healthzRoundBackend, len(round.Backends)),
		}
		for i, b := range round.Backends {
			report.LastFanout.Backends[i] = healthzRoundBackend{
				Name: b.Name, Group: b.Group, Outcome: b.Outcome.String(), Reason: b.Reason.String(), Status: b.Status,
			}
		}
	}
	return report
}

func formatHealthzTime(t time.Time) string {
	return t.UTC().Format(healthzTimeFormat)
}
