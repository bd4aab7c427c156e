package exporter

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
)

// exporter mirrors the pool into Prometheus series at scrape time. Building the series from one pool snapshot per scrape means
// a backend removed by reload vanishes from the next scrape without any
// bookkeeping, and a scrape costs one pass over it.
//
// A pool of 10,000 backends exports close to 280,000 series and the budget
// is 1.5 µs for each (docs/design.md, "Budgets"). prometheus.MustNewConstMetric
// allocates about ten objects per series and the registry hashes, checks
// and sorts every one, which together cost more than the budget. So the
// exporter builds the metric families itself, in a few large per-scrape
// slabs: label pairs of fixed values (states, reasons) exist once, a
// backend's own label pairs once per scrape, shared by all its series, and
// every family comes out sorted. It serves them two ways: as a
// prometheus.Collector for any registry, and as a
// prometheus.Gatherer (NewGatherer) that skips the registry's per-series
// work for /metrics.
type exporter struct {
	pool *pool.Pool

	families [numFamilies]exportedFamily
	// familyOrder lists the families sorted by name, the exposition order.
	familyOrder []familyID

	// The label values in the order the exposition sorts them, so that
	// each family's series come out already sorted.
	states         []health.ServedState
	failureReasons []health.Reason
	fanoutReasons  []traffic.Reason

	// failures says which failure reasons' series each backend has.
	failures failureSeries

	// Label pairs with a fixed value, shared by every scrape.
	statePairs         [health.NumServedStates]*dto.LabelPair
	toPairs            [health.NumServedStates]*dto.LabelPair
	failureReasonPairs [health.NumReasons]*dto.LabelPair
	fanoutReasonPairs  [traffic.NumReasons]*dto.LabelPair
	outlierReasonPairs [outlier.NumReasons]*dto.LabelPair
	enforcedPairs      [2]*dto.LabelPair

	// The names of the per-backend labels, pointed to by every scrape's
	// label pairs.
	backendLabel, urlLabel, probePathLabel, groupLabel, replicaLabel *string
}

// familyID names one metric family of the exporter.
type familyID int

// The exporter's metric families.
const (
	familyProbes familyID = iota
	familyProbeFailures
	familyProbeRefusals
	familyState
	familyInService
	familyReachable
	familyVerified
	familyTransitions
	familyLastStatusCode
	familyLastTimestamp
	familyInfo
	familyFanoutErrors
	familyPassiveEjections
	familyBackendsByState
	familyConfigured
	familyPoolInService
	familyFailOpen
	familyDesiredHealthy
	familyDisruptionsAllowed
	familyLastTransition
	familyProbeDuration
	familyLastProbeDuration
	familyCertExpiry
	familyOutlierEjections
	familyOutlierEjected
	familyOutlierSuppressed
	familyPassiveSuppressed
	familyGroupInService
	familyGroupReplicas
	familyVantageDisagreements
	familyVantageDissents
	numFamilies
)

// exportedFamily is what the exporter knows about one family.
type exportedFamily struct {
	desc       *prometheus.Desc
	name, help *string
	kind       *dto.MetricType
	// perBackend is how many series each backend has in the family
	// (0 for pool-wide families), to size the family up front.
	perBackend int
}

// newExporter returns the collector that exports every backend and pool
// series of the pool. Each scrape takes one snapshot. NewGatherer serves
// /metrics with it; the tests also register it in a plain registry, whose
// checks prove the series well formed.
func newExporter(backends *pool.Pool) *exporter {
	e := &exporter{
		pool:           backends,
		states:         sortedByName(health.ServedStates()),
		failureReasons: sortedByName(health.FailureReasons()),
		failures:       newFailureSeries(),
		fanoutReasons:  sortedByName(fanoutErrorReasons()),
		backendLabel:   new("backend"),
		urlLabel:       new("url"),
		probePathLabel: new("probe_path"),
		groupLabel:     new("group"),
		replicaLabel:   new("replica"),
	}
	counter, gauge, histogram := dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM
	perState, perFailure, perFanout := len(e.states), len(e.failureReasons), len(e.fanoutReasons)
	e.define(familyProbes, "probes_total", counter, 1,
		"Probes finished per backend, of any class.")
	e.define(familyProbeFailures, "probe_failures_total", counter, perFailure, failuresHelp(), "reason")
	e.define(familyProbeRefusals, "probe_refusals_total", counter, 1,
		"Probes of class refused per backend: the probe path answered 4xx (not 429) or 501, evidence about the path, not the backend.")
	e.define(familyState, "backend_state", gauge, perState,
		"Health state of the backend: 1 for the current state, 0 for the others.", "state")
	e.define(familyInService, "backend_in_service", gauge, 1,
		"Whether the backend may receive traffic (1) or is out of service (0).")
	e.define(familyReachable, "backend_reachable", gauge, 1,
		"Whether the backend answered HTTP recently (0 after `failures` consecutive unanswered probes).")
	e.define(familyVerified, "backend_probe_verified", gauge, 1,
		"Whether the probe path ever showed it tells health apart (an ok or an answered failure); 0 means in service without a health signal.")
	e.define(familyTransitions, "backend_transitions_total", counter, perState,
		"State changes of the backend, by the state entered.", "to")
	e.define(familyLastStatusCode, "backend_last_probe_status_code", gauge, 1,
		"HTTP status code of the last probe; 0 when it got no HTTP answer or none finished yet.")
	e.define(familyLastTimestamp, "backend_last_probe_timestamp_seconds", gauge, 1,
		"Unix time the last finished probe started; absent until the first probe finishes.")
	e.define(familyLastTransition, "backend_last_transition_timestamp_seconds", gauge, 1,
		"Unix time of the backend's last state change; absent until the first.")
	e.define(familyProbeDuration, "backend_probe_duration_seconds", histogram, 1,
		"Duration of the backend's health probes; absent for a backend that is not probed.")
	e.define(familyLastProbeDuration, "backend_last_probe_duration_seconds", gauge, 1,
		"Duration of the backend's last finished probe; absent until the first probe finishes.")
	e.define(familyCertExpiry, "backend_tls_cert_expiry_timestamp_seconds", gauge, 1,
		"Unix time the earliest certificate of the chain the backend presented on its last probe over TLS expires; absent for a backend not probed over TLS.")
	e.define(familyInfo, "backend_info", gauge, 1,
		"Configured backend, with its base URL and probe path; always 1.", "url", "probe_path")
	e.define(familyFanoutErrors, "fanout_backend_errors_total", counter, perFanout,
		"Fan-out requests the backend did not contribute to, by reason.", "reason")
	e.define(familyPassiveEjections, "passive_ejections_total", counter, 1,
		"Times passive health took the backend out of service for failing real traffic.")
	e.define(familyOutlierEjections, "outlier_ejections_total", counter, 2,
		"Times outlier detection ejected the backend, by reason (failure, latency); enforced=\"false\" counts what a dry run would have done.", "enforced", "reason")
	e.define(familyOutlierEjected, "backend_outlier_ejected", gauge, 1,
		"Whether outlier detection holds the backend out of service (1).")
	e.define(familyOutlierSuppressed, "outlier_ejections_suppressed_total", counter, 0,
		"Outlier ejections not made because the readiness budget allowed no disruption, by reason; counted once a window per backend.", "reason")
	e.define(familyPassiveSuppressed, "passive_ejections_suppressed_total", counter, 0,
		"Passive ejections not made because the readiness budget allowed no disruption; counted once a window per backend.")
	e.define(familyBackendsByState, "backends", gauge, 0,
		"Backends in the pool, static and discovered, per health state.", "state")
	e.define(familyConfigured, "backends_configured", gauge, 0,
		"Backends in the pool: those the configuration lists and those service discovery found.")
	e.define(familyPoolInService, "backends_in_service", gauge, 0,
		"Backends in service, not counting fail-open.")
	e.define(familyFailOpen, "pool_fail_open", gauge, 0,
		"Whether the pool fails open (1): too few backends in service, so every configured backend is selected.")
	e.define(familyDesiredHealthy, "readiness_desired_healthy", gauge, 0,
		"Backends that must be in service for the readiness budget to hold.")
	e.define(familyDisruptionsAllowed, "readiness_disruptions_allowed", gauge, 0,
		"How many more backends may leave service while the readiness budget still holds.")
	e.define(familyGroupInService, "group_in_service", gauge, 0,
		"Replicas of the replica group in service, not counting fail-open; exported while the fan-out is enabled and some backend has a group, a backend without one a group of its own.", "group")
	e.define(familyGroupReplicas, "group_replicas", gauge, 0,
		"Backends in the replica group; exported while the fan-out is enabled and some backend has a group, a backend without one a group of its own.", "group")
	e.define(familyVantageDisagreements, "vantage_disagreements_total", counter, 0,
		"Times a vantage point was named a lone dissenter: it disagreed alone with the fleet's verdict on a backend for longer than 3 probe intervals, ejecting nothing.", "replica")
	e.define(familyVantageDissents, "vantage_dissents", gauge, 0,
		"Backends on which a vantage point currently disagrees alone with the fleet's verdict.", "replica")

	for f := range numFamilies {
		e.familyOrder = append(e.familyOrder, f)
	}
	slices.SortFunc(e.familyOrder, func(a, b familyID) int {
		return strings.Compare(*e.families[a].name, *e.families[b].name)
	})
	for _, s := range e.states {
		e.statePairs[s] = fixedLabelPair("state", s.String())
		e.toPairs[s] = fixedLabelPair("to", s.String())
	}
	for _, r := range e.failureReasons {
		e.failureReasonPairs[r] = fixedLabelPair("reason", r.String())
	}
	for _, r := range e.fanoutReasons {
		e.fanoutReasonPairs[r] = fixedLabelPair("reason", r.String())
	}
	for _, r := range outlier.Reasons() {
		e.outlierReasonPairs[r] = fixedLabelPair("reason", r.String())
	}
	e.enforcedPairs = [2]*dto.LabelPair{fixedLabelPair("enforced", "false"), fixedLabelPair("enforced", "true")}
	return e
}

// fanoutErrorReasons are the reasons of probegate_fanout_backend_errors_total:
// every traffic reason but a straggler cut, which the pool never records
// and the fan-out counts in probegate_fanout_stragglers_total, and only
// while it cuts stragglers.
func fanoutErrorReasons() []traffic.Reason {
	return slices.DeleteFunc(traffic.Reasons(), func(r traffic.Reason) bool { return r == traffic.Straggler })
}

// define describes family f. Backend families (perBackend > 0) carry the
// backend label first; labels follow it.
func (e *exporter) define(f familyID, name string, kind dto.MetricType, perBackend int, help string, labels ...string) {
	if perBackend > 0 {
		labels = append([]string{"backend"}, labels...)
	}
	fqName := prometheus.BuildFQName(metricsNamespace, "", name)
	e.families[f] = exportedFamily{
		desc:       prometheus.NewDesc(fqName, help, labels, nil),
		name:       &fqName,
		help:       &help,
		kind:       &kind,
		perBackend: perBackend,
	}
}

func fixedLabelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}

// sortedByName orders label values the way the exposition sorts them.
func sortedByName[T interface{ String() string }](values []T) []T {
	slices.SortFunc(values, func(a, b T) int { return strings.Compare(a.String(), b.String()) })
	return values
}

// Describe sends every descriptor the exporter uses.
func (e *exporter) Describe(ch chan<- *prometheus.Desc) {
	for f := range numFamilies {
		ch <- e.families[f].desc
	}
}

// Collect takes one snapshot of the pool and sends its series.
func (e *exporter) Collect(ch chan<- prometheus.Metric) {
	e.collect(ch, e.pool.Snapshot())
}

func (e *exporter) collect(ch chan<- prometheus.Metric, snap pool.Snapshot) {
	s := e.build(snap)
	var series exportSlab[dtoSeries]
	for f := range numFamilies {
		for _, m := range s.families[f].Metric {
			c := series.next()
			c.desc, c.metric = e.families[f].desc, m
			ch <- c
		}
	}
}

// build turns a pool snapshot into the exporter's metric families, each
// with its series sorted by label values, backends in name order. The
// families point into snap, which must stay unchanged while they are used.
func (e *exporter) build(snap pool.Snapshot) *exportScrape {
	order := make([]*pool.BackendSnapshot, len(snap.Backends))
	for i := range snap.Backends {
		order[i] = &snap.Backends[i]
	}
	slices.SortFunc(order, func(a, b *pool.BackendSnapshot) int { return strings.Compare(a.Name, b.Name) })

	s := &exportScrape{exporter: e, states: e.states, toStates: e.states, snap: &snap}
	// A feature that is off exports no series: without maintenance no
	// backend can be in that state or enter it, and only maintenance and
	// passive health's readmission lead back to unknown.
	if !snap.Maintenance {
		s.states = without(s.states, health.ServedMaintenance)
		s.toStates = s.states
	}
	if !snap.OutlierDetection {
		s.states = without(s.states, health.ServedEjected)
		s.toStates = without(s.toStates, health.ServedEjected)
	}
	if !snap.Maintenance && !snap.PassiveHealth && !snap.OutlierDetection {
		s.toStates = without(s.toStates, health.ServedUnknown)
	}
	for f := range numFamilies {
		ef := &e.families[f]
		size := ef.perBackend * len(order)
		if ef.perBackend == 0 {
			size = len(e.states)
		}
		s.families[f] = &dto.MetricFamily{Name: ef.name, Help: ef.help, Type: ef.kind, Metric: make([]*dto.Metric, 0, size)}
	}

	var perState [health.NumServedStates]int
	for _, b := range order {
		perState[b.Served.State()]++
		e.addBackend(s, b, &snap)
	}
	for _, st := range s.states {
		s.add(familyBackendsByState, float64(perState[st]), s.labels(e.statePairs[st]))
	}
	if snap.OutlierDetection {
		for _, r := range outlier.Reasons() {
			s.add(familyOutlierSuppressed, float64(snap.Suppressed[r]), s.labels(e.outlierReasonPairs[r]))
		}
	}
	if snap.PassiveHealth {
		s.add(familyPassiveSuppressed, float64(snap.PassiveSuppressed), nil)
	}
	s.add(familyConfigured, float64(len(snap.Backends)), nil)
	s.add(familyPoolInService, float64(snap.InService), nil)
	s.add(familyFailOpen, metricBool(snap.FailOpen), nil)
	s.add(familyDesiredHealthy, float64(snap.Budget.DesiredHealthy), nil)
	s.add(familyDisruptionsAllowed, float64(snap.Budget.DisruptionsAllowed), nil)
	if snap.Fanout {
		e.addGroups(s, snap.Groups)
	}
	e.addDissenters(s, snap.Dissenters())
	return s
}

// addDissenters adds the series of the vantage points named lone
// dissenters, in name order: none while shared probing is off, and two a
// replica while it is on. Their only label is the replica, never the
// backend, so that they cost nothing per backend; /healthz names the
// backends.
func (e *exporter) addDissenters(s *exportScrape, dissenters []pool.Dissenter) {
	for i := range dissenters {
		d := &dissenters[i]
		replica := s.labels(s.pair(e.replicaLabel, &d.Replica))
		s.add(familyVantageDisagreements, float64(d.Named), replica)
		s.add(familyVantageDissents, float64(d.Backends), replica)
	}
}

// addGroups adds the series of the replica groups, in name order. The
// pool lists groups only while some backend has one, so a pool without
// groups has none of these series, and one with groups at most two per
// backend: a group has at least one backend. Their only label is the
// group: nothing per round. build adds them only while the fan-out is
// enabled, which is what groups are for: with it off a lean probed
// backend already has the 25 series the budget per backend allows, and
// even a group of two would add one per backend.
func (e *exporter) addGroups(s *exportScrape, groups []budget.Group) {
	order := make([]*budget.Group, len(groups))
	for i := range groups {
		order[i] = &groups[i]
	}
	slices.SortFunc(order, func(a, b *budget.Group) int { return strings.Compare(a.Name, b.Name) })
	for _, g := range order {
		group := s.labels(s.pair(e.groupLabel, &g.Name))
		s.add(familyGroupInService, float64(g.CurrentHealthy), group)
		s.add(familyGroupReplicas, float64(g.Expected), group)
	}
}

// addBackend adds the series of one backend, each family's in label order.
func (e *exporter) addBackend(s *exportScrape, b *pool.BackendSnapshot, snap *pool.Snapshot) {
	backend := s.pair(e.backendLabel, &b.Name)
	only := s.labels(backend)

	s.add(familyProbes, float64(b.Probes), only)
	failures := e.failures.of(b)
	for _, r := range e.failureReasons {
		if failures[r] {
			s.add(familyProbeFailures, float64(b.Failures[r]), s.labels(backend, e.failureReasonPairs[r]))
		}
	}
	s.add(familyProbeRefusals, float64(b.Refusals), only)
	served := b.Served.State()
	for _, st := range s.states {
		s.add(familyState, metricBool(served == st), s.labels(backend, e.statePairs[st]))
	}
	s.add(familyInService, metricBool(b.Served.InService()), only)
	s.add(familyReachable, metricBool(b.Health.Reachable()), only)
	s.add(familyVerified, metricBool(b.Health.Verified), only)
	for _, st := range s.toStates {
		s.add(familyTransitions, float64(b.Transitions[st]), s.labels(backend, e.toPairs[st]))
	}
	statusCode := 0
	if b.LastProbe != nil {
		statusCode = b.LastProbe.StatusCode
		// A timestamp of 0 would read as a probe 55 years ago; an absent
		// series says "never probed" without tripping staleness alerts.
		s.add(familyLastTimestamp, metricTimestamp(b.LastProbe.Time), only)
		s.add(familyLastProbeDuration, b.LastProbe.Duration.Seconds(), only)
	}
	if !b.TLSCertExpiry.IsZero() {
		s.add(familyCertExpiry, metricTimestamp(b.TLSCertExpiry), only)
	}
	if b.ProbeDurations != nil {
		s.addWritten(familyProbeDuration, b.ProbeDurations, only)
	}
	s.add(familyLastStatusCode, float64(statusCode), only)
	if !b.Since.IsZero() {
		s.add(familyLastTransition, metricTimestamp(b.Since), only)
	}
	// Label pairs sorted by name: backend, probe_path, url.
	s.add(familyInfo, 1, s.labels(backend, s.pair(e.probePathLabel, &b.ProbePath), s.pair(e.urlLabel, &b.URL)))
	if s.snap.Fanout {
		for _, r := range e.fanoutReasons {
			s.add(familyFanoutErrors, float64(b.Traffic.Errors[r]), s.labels(backend, e.fanoutReasonPairs[r]))
		}
	}
	if s.snap.PassiveHealth {
		s.add(familyPassiveEjections, float64(b.Traffic.Ejections), only)
	}
	if snap.OutlierDetection {
		e.addOutlier(s, b, backend, snap.OutlierEnforcing)
	}
}

// addOutlier adds a backend's outlier detection series: the ejections of
// the mode in force for every reason, and of the other mode only once it
// counted any (after a reload switched modes), so that a dry run does not
// double the series.
func (e *exporter) addOutlier(s *exportScrape, b *pool.BackendSnapshot, backend *dto.LabelPair, enforcing bool) {
	for enforced := range 2 {
		mode := enforced == 1
		for _, r := range outlier.Reasons() {
			if n := b.Outlier.Ejections[r][enforced]; n > 0 || mode == enforcing {
				s.add(familyOutlierEjections, float64(n), s.labels(backend, e.enforcedPairs[enforced], e.outlierReasonPairs[r]))
			}
		}
	}
	s.add(familyOutlierEjected, metricBool(b.Outlier.Ejected && b.Outlier.Enforced), s.labels(backend))
}

// without is states less one, in a new slice.
func without(states []health.ServedState, drop health.ServedState) []health.ServedState {
	kept := make([]health.ServedState, 0, len(states))
	for _, st := range states {
		if st != drop {
			kept = append(kept, st)
		}
	}
	return kept
}

// metricBool is the 0/1 value of a boolean gauge.
func metricBool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// exportScrape is one scrape's metric families under construction.
type exportScrape struct {
	exporter *exporter
	snap     *pool.Snapshot
	// states are the values of the state label this scrape exports and
	// toStates those of the to label: those the features in use can reach.
	states, toStates []health.ServedState
	families         [numFamilies]*dto.MetricFamily
	counters         exportSlab[counterSample]
	gauges           exportSlab[gaugeSample]
	written          exportSlab[dto.Metric]
	pairs            exportSlab[dto.LabelPair]
	// labelSlab is carved into the label lists of the series.
	labelSlab []*dto.LabelPair
}

// counterSample and gaugeSample hold one series and its value together,
// so that a series costs a fraction of a slab chunk, not five allocations.
type counterSample struct {
	metric  dto.Metric
	counter dto.Counter
	value   float64
}

type gaugeSample struct {
	metric dto.Metric
	gauge  dto.Gauge
	value  float64
}

// add appends a series of value v with labels to family f.
func (s *exportScrape) add(f familyID, v float64, labels []*dto.LabelPair) {
	var m *dto.Metric
	if *s.exporter.families[f].kind == dto.MetricType_COUNTER {
		c := s.counters.next()
		c.value = v
		c.counter.Value = &c.value
		c.metric.Counter = &c.counter
		m = &c.metric
	} else {
		g := s.gauges.next()
		g.value = v
		g.gauge.Value = &g.value
		g.metric.Gauge = &g.gauge
		m = &g.metric
	}
	m.Label = labels
	s.families[f].Metric = append(s.families[f].Metric, m)
}

// addWritten appends the series m writes (a histogram, say) with labels
// to family f. A metric that fails to write is left out: the ones this
// exporter holds never fail.
func (s *exportScrape) addWritten(f familyID, m prometheus.Metric, labels []*dto.LabelPair) {
	out := s.written.next()
	if err := m.Write(out); err != nil {
		return
	}
	out.Label = labels
	s.families[f].Metric = append(s.families[f].Metric, out)
}

// pair returns a label pair pointing at name and value, which must not
// change until the scrape is encoded. A value that is not UTF-8 (a URL
// from a flag, say) is repaired rather than breaking the exposition.
func (s *exportScrape) pair(name, value *string) *dto.LabelPair {
	if !utf8.ValidString(*value) {
		repaired := strings.ToValidUTF8(*value, "\uFFFD")
		value = &repaired
	}
	p := s.pairs.next()
	p.Name, p.Value = name, value
	return p
}

// labels returns a label list of pairs, which must be sorted by name.
func (s *exportScrape) labels(pairs ...*dto.LabelPair) []*dto.LabelPair {
	if len(s.labelSlab) < len(pairs) {
		s.labelSlab = make([]*dto.LabelPair, max(slabChunk, len(pairs)))
	}
	l := s.labelSlab[:len(pairs):len(pairs)]
	copy(l, pairs)
	s.labelSlab = s.labelSlab[len(pairs):]
	return l
}

// sorted returns the families that have series, sorted by name.
func (s *exportScrape) sorted() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, numFamilies)
	for _, f := range s.exporter.familyOrder {
		if len(s.families[f].Metric) > 0 {
			out = append(out, s.families[f])
		}
	}
	return out
}

// slabChunk is how many objects of a kind a scrape allocates at a time:
// large enough that allocation is rare, small enough that a small pool
// does not pay for a large one.
const slabChunk = 1024

// exportSlab hands out pointers to objects carved from chunks of
// slabChunk, so that a scrape allocates per chunk rather than per series.
// Nothing is reused: whoever gathered the scrape holds on to it until it
// is encoded.
type exportSlab[T any] struct{ free []T }

func (s *exportSlab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabChunk)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// dtoSeries is a built series as a prometheus.Metric, for the Collector
// path.
type dtoSeries struct {
	desc   *prometheus.Desc
	metric *dto.Metric
}

func (s *dtoSeries) Desc() *prometheus.Desc { return s.desc }

func (s *dtoSeries) Write(out *dto.Metric) error {
	out.Label, out.Counter, out.Gauge, out.Histogram = s.metric.Label, s.metric.Counter, s.metric.Gauge, s.metric.Histogram
	return nil
}

// NewGatherer returns the Gatherer to serve /metrics from: everything
// others gathers (the registry with probegate's other metrics, the Go and
// process collectors) merged with the pool's backend and pool series, all
// sorted by name. A family others exports too is an error (the pool's
// copy is kept).
//
// It hands the families to the encoder directly instead of through a registry, whose per-series
// hashing, checks and sorting would cost more than the /metrics budget at
// 10,000 backends. The checks it skips hold by construction: unique
// backend names (config validation), label names fixed here, label values
// repaired to UTF-8, families sorted.
func NewGatherer(backends *pool.Pool, others prometheus.Gatherer) prometheus.Gatherer {
	return &poolGatherer{exporter: newExporter(backends), others: others}
}

type poolGatherer struct {
	exporter *exporter
	others   prometheus.Gatherer
}

// Gather merges the two name-sorted lists of families.
func (g *poolGatherer) Gather() ([]*dto.MetricFamily, error) {
	var errs prometheus.MultiError
	var theirs []*dto.MetricFamily
	if g.others != nil {
		var err error
		theirs, err = g.others.Gather()
		errs.Append(err)
	}
	ours := g.exporter.build(g.exporter.pool.Snapshot()).sorted()

	merged := make([]*dto.MetricFamily, 0, len(theirs)+len(ours))
	for len(theirs) > 0 && len(ours) > 0 {
		switch c := strings.Compare(theirs[0].GetName(), ours[0].GetName()); {
		case c < 0:
			merged, theirs = append(merged, theirs[0]), theirs[1:]
		case c > 0:
			merged, ours = append(merged, ours[0]), ours[1:]
		default:
			errs.Append(fmt.Errorf("metric family %s is exported by both the pool and another collector; keeping the pool's", ours[0].GetName()))
			merged, theirs, ours = append(merged, ours[0]), theirs[1:], ours[1:]
		}
	}
	merged = append(append(merged, theirs...), ours...)
	return merged, errs.MaybeUnwrap()
}
