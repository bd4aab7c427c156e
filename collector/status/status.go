// Package status serves /status, the page a person reads: the instance, the
// gate, the readiness budget, fail-open, every backend's health with since
// when and how long it has been out of service, and the last fan-out round.
// It is rendered on the server with html/template, needs no JavaScript and
// no asset from elsewhere, and refreshes itself unless paused.
package status

import (
	_ "embed"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/passive"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
)

//go:embed status.html
var pageSource string

var page = template.Must(template.New("status").Parse(pageSource))

// defaultRefresh is how often the page reloads itself unless the URL says
// otherwise (?refresh=N seconds, 0 to pause).
const defaultRefresh = 5 * time.Second

// maxRefresh bounds ?refresh.
const maxRefresh = time.Hour

// Options is what the page shows and where it reads it.
type Options struct {
	Pool *pool.Pool
	// LastRound returns the last fan-out round, nil before the first; the
	// func may be nil.
	LastRound func() *fanout.RoundSummary
	// Draining reports whether the gate is draining; nil is never.
	Draining func() bool
	// Replica is the name this replica goes by (--replica.name), the one
	// its peers and the Via of what it forwards know it by; Instance is
	// its host name; Version is the build.
	Replica  string
	Instance string
	Version  string
	// Started is when the process started, for the uptime.
	Started time.Time
	// MetricsPath is where the Prometheus metrics are served.
	MetricsPath string
	// Store reports the maintenance store's health; nil shows none.
	Store func() maintenance.StoreStatus
	// Replicas lists the live replicas sharing the store; nil when it is
	// not shared.
	Replicas func() []maintenance.ReplicaView
	// AdminAPI says the admin API is on; with it off, backends in
	// maintenance are called out, since nothing running can end it.
	AdminAPI bool
}

// Handler serves the page to GET and HEAD.
func Handler(o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		refresh, err := parseRefresh(r.URL.Query().Get("refresh"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		number, err := parsePage(r.URL.Query().Get("page"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		render(w, r, page, newView(o, refresh, number))
	})
}

// parseRefresh reads ?refresh: whole seconds from 0 (paused) to an hour.
func parseRefresh(s string) (time.Duration, error) {
	if s == "" {
		return defaultRefresh, nil
	}
	n, err := strconv.Atoi(s)
	// Compared in seconds: a huge n times a second would wrap.
	if err != nil || n < 0 || n > int(maxRefresh/time.Second) {
		return 0, &refreshError{s}
	}
	return time.Duration(n) * time.Second, nil
}

type refreshError struct{ value string }

func (e *refreshError) Error() string {
	return "refresh=" + strconv.Quote(e.value) + ": want whole seconds from 0 (paused) to 3600"
}

// view is what the template renders.
type view struct {
	Replica, Instance, Version string
	MetricsPath                string
	Now                        string
	Uptime                     string
	Draining                   bool
	// Refresh is the reload period in seconds, 0 when paused.
	Refresh int
	// DefaultRefresh is the period the resume link sets.
	DefaultRefresh int

	Configured, InService int
	FailOpen              bool
	PanicThreshold        float64
	Budget                budget.Budget
	BudgetHolds           bool
	PassiveHealth         bool

	// Backends are the rows of this page; Pager says which they are.
	Backends []backendRow
	Pager    pagerView
	Round    *roundView
	// Transitions are the pool's last state changes, newest first.
	Transitions   []transitionView
	HistoryLength int

	Store      *storeView
	Replicas   []replicaView
	NoAdminAPI []string
	// Groups are the replica groups' rows, when some backend has a group.
	Groups groupsView
	// Probing is shared probing's mode and dissenters, nil while it is
	// off.
	Probing *probingView
}

type storeView struct {
	Kind, LastSync, Error string
	Healthy, Stale        bool
}

type replicaView struct {
	maintenance.ReplicaView
	// Updated is how long ago the replica last published its view;
	// Lapsed, for a stale view, how long ago this replica found it gone.
	Updated, Lapsed string
}

type backendRow struct {
	Name, URL, ProbePath string
	// Group is the backend's replica group, empty when it was given none.
	Group string
	// ProbeVia is how an HTTP probe reaches the backend: its own
	// connection, or net/http and the setting that needs it.
	ProbeVia            string
	State               string
	InService, Verified bool
	Reachable           bool
	Since               string
	SinceAgo            string
	Downtime            string
	LastProbe           *probeView
	Probes, Refusals    uint64
	Failures            uint64
	Window              *passive.Counts
	Maintenance         string
	History             historyView
	// Ejection says why outlier detection ejected the backend and until
	// when, or what a dry run would have done; empty otherwise.
	Ejection string
	// Fleet is the verdict the backend is served by and its vantage
	// points, nil while shared probing does not judge it.
	Fleet *fleetView
}

type probeView struct {
	Ago      string
	Result   string
	Class    string
	Duration string
	Error    string
}

type roundView struct {
	Time                    string
	Ago                     string
	Contributed, Configured int
	Partial                 bool
	Backends                []fanout.RoundBackend
	// More is how many backends of the round the page leaves out.
	More int
}

func newView(o Options, refresh time.Duration, pageNumber int) view {
	s := o.Pool.SnapshotWithTransitions()
	now := s.Time
	query := ""
	if refresh != defaultRefresh {
		query = "&refresh=" + strconv.Itoa(int(refresh/time.Second))
	}
	shown, pager := paginate(s.Backends, pageNumber, query)
	// The histories of the shown rows alone are copied: a page is a
	// hundred rows, the pool may have ten thousand backends.
	names := make([]string, len(shown))
	for i, index := range shown {
		names[i] = s.Backends[index].Name
	}
	histories := o.Pool.ProbeHistories(names)
	v := view{
		Replica: o.Replica, Instance: o.Instance, Version: o.Version, MetricsPath: o.MetricsPath,
		Now:            now.UTC().Format(time.RFC3339),
		Uptime:         human(now.Sub(o.Started)),
		Draining:       o.Draining != nil && o.Draining(),
		Refresh:        int(refresh / time.Second),
		DefaultRefresh: int(defaultRefresh / time.Second),
		Configured:     len(s.Backends), InService: s.InService,
		FailOpen: s.FailOpen, PanicThreshold: s.PanicThreshold,
		Budget: s.Budget, BudgetHolds: s.Budget.Holds(),
		PassiveHealth: s.PassiveHealth,
		Backends:      make([]backendRow, len(shown)),
		Pager:         pager,
		Transitions:   newTransitionViews(s.Transitions, now),
		HistoryLength: history.ProbeLength,
	}
	via := make(map[string]string, len(shown))
	for _, b := range o.Pool.Backends() {
		via[b.Name] = probe.HTTPPath(b)
	}
	for i, index := range shown {
		b := &s.Backends[index]
		row := backendRow{
			Name: b.Name, URL: redact(b.URL), ProbePath: b.ProbePath, ProbeVia: via[b.Name],
			State:     b.Served.State().String(),
			InService: b.Served.InService(), Verified: b.Health.Verified, Reachable: b.Health.Reachable(),
			Downtime: human(b.DowntimeAt(now)),
			Probes:   b.Probes, Refusals: b.Refusals,
			Maintenance: "—",
			History:     newHistoryView(histories[i]),
			Fleet:       newFleetView(b.Fleet, now),
		}
		if m := b.Maintenance; m != nil {
			row.Maintenance = m.Reason + " (by " + m.By + ")"
		}
		if b.Grouped {
			row.Group = b.Group
		}
		if o := b.Outlier; o.Ejected {
			row.Ejection = "outlier: " + o.Reason.String() + ", until " + o.Until.UTC().Format(time.RFC3339)
			if !o.Enforced {
				row.Ejection = "dry run would eject: " + o.Reason.String()
			}
		}
		for _, n := range b.Failures {
			row.Failures += n
		}
		if !b.Since.IsZero() {
			row.Since = b.Since.UTC().Format(time.RFC3339)
			row.SinceAgo = human(now.Sub(b.Since))
		}
		if !b.ProbeEnabled {
			row.ProbePath = ""
		}
		if p := b.LastProbe; p != nil {
			row.LastProbe = &probeView{
				Ago: human(now.Sub(p.Time)), Result: resultText(p.Reason, p.StatusCode, p.Status), Class: p.Class.String(),
				Duration: human(p.Duration), Error: p.Err,
			}
		}
		if s.PassiveHealth {
			w := b.Traffic.Window
			row.Window = &w
		}
		v.Backends[i] = row
	}
	v.Store, v.Replicas = storeOf(o), replicasOf(o, now)
	v.Groups = newGroupsView(s.Groups)
	v.Probing = newProbingView(&s)
	if !o.AdminAPI {
		for _, m := range o.Pool.Maintenances() {
			v.NoAdminAPI = append(v.NoAdminAPI, m.Backend)
		}
	}
	if o.LastRound != nil {
		if r := o.LastRound(); r != nil {
			v.Round = &roundView{
				Time: r.Time.UTC().Format(time.RFC3339), Ago: human(now.Sub(r.Time)),
				Contributed: r.Contributed, Configured: r.Configured, Partial: r.Partial,
			}
			v.Round.Backends, v.Round.More = roundRows(r.Backends)
		}
	}
	return v
}

func storeOf(o Options) *storeView {
	if o.Store == nil {
		return nil
	}
	st := o.Store()
	v := &storeView{Kind: st.Kind, Healthy: st.Healthy, Stale: st.Stale, Error: st.Error}
	if !st.LastSync.IsZero() {
		v.LastSync = st.LastSync.UTC().Format(time.RFC3339)
	}
	return v
}

func replicasOf(o Options, now time.Time) []replicaView {
	if o.Replicas == nil {
		return nil
	}
	var rows []replicaView
	for _, r := range o.Replicas() {
		row := replicaView{ReplicaView: r, Updated: human(now.Sub(r.Updated)) + " ago"}
		if r.Stale {
			row.Lapsed = human(now.Sub(r.Lapsed)) + " ago"
		}
		rows = append(rows, row)
	}
	return rows
}

// redact hides a password in a URL's user information.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// human is a duration rounded for a person: 850ms, 42s, 3m12s, 5h4m, 2d3h.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		days := d / (24 * time.Hour)
		hours := (d % (24 * time.Hour)).Round(time.Hour) / time.Hour
		return strconv.Itoa(int(days)) + "d" + strconv.Itoa(int(hours)) + "h"
	}
}
