package fanout

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/fanout/internal/hedge"
	"github.com/probegate/probegate/collector/fanout/internal/membudget"
	"github.com/probegate/probegate/collector/fanout/internal/merge"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/jsonanswer"
	"github.com/probegate/probegate/internal/proxyheader"
)

// Path is where the fan-out handler is mounted: it serves Path
// itself and every path under Path + "/", and what follows Path
// goes to the backends.
const Path = "/fanout"

// errorBodyDrainBytes is how much of a body that is thrown away is still
// read, so that a short error page does not cost the keep-alive connection.
const errorBodyDrainBytes = 4 << 10

// Fanout serves /fanout/<path>?<query>: it sends the request concurrently
// to every selected backend, merges the answers of those that contributed,
// and feeds each backend's outcome to the pool's passive health. It is safe
// for concurrent use; Update swaps its settings on reload without
// disturbing rounds in flight.
type Fanout struct {
	pool    *pool.Pool
	metrics *Metrics
	logger  log.Logger
	now     func() time.Time

	// replica is this probegate's name in the Via of what it forwards.
	replica string

	settings  atomic.Pointer[settings]
	lastRound atomic.Pointer[RoundSummary]
	// inFlight counts the rounds being served, for fanout.max_concurrent.
	inFlight atomic.Int64
	// buffers is what the rounds in flight buffer, for
	// fanout.max_buffered_bytes.
	buffers membudget.Budget
	// replicas is what the fan-out remembers of its replica groups
	// (replicastate.go), started afresh by Update.
	replicas atomic.Pointer[replicaStates]
	// rng draws the replicas a round asks; it is safe for concurrent use.
	rng *rand.Rand
}

// settings is one configuration generation of the fan-out.
type settings struct {
	fanout config.Fanout
	merger merge.Merger
	// hedges is the token bucket that pays for hedges, one for the
	// whole fan-out.
	hedges *hedge.Bucket
}

// New returns the fan-out handler over backends. metrics may be nil; a nil
// logger logs nothing and a nil now is time.Now.
func New(backends *pool.Pool, cfg config.Fanout, metrics *Metrics, logger log.Logger, now func() time.Time) *Fanout {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if now == nil {
		now = time.Now
	}
	f := &Fanout{pool: backends, metrics: metrics, logger: logger, now: now, replica: defaultReplica, rng: newRand()}
	f.Update(cfg)
	if metrics != nil {
		metrics.backendDuration.fanout.Store(f)
		metrics.stragglers.fanout.Store(f)
		metrics.hedges.fanout.Store(f)
		metrics.failovers.fanout.Store(f)
	}
	return f
}

// defaultReplica is the name in Via of a Fanout not told its own.
const defaultReplica = "probegate"

// SetReplicaName sets the name this probegate goes by in the Via of what
// it forwards, and by which it recognises a request it forwarded itself.
// Call it before serving.
func (f *Fanout) SetReplicaName(name string) {
	if name != "" {
		f.replica = name
	}
}

// Update applies reloaded fan-out settings to the rounds that start after
// it. A zero timeout, max_request_bytes or max_response_bytes means no
// limit (config.Load always sets them). An unknown merge format, which
// config.Load rejects, is logged and the current format (json_array at
// first) kept.
func (f *Fanout) Update(cfg config.Fanout) {
	merger, err := merge.Lookup(cfg.Merge)
	if err != nil {
		merger, _ = merge.Lookup("")
		if current := f.settings.Load(); current != nil {
			merger = current.merger
		}
		level.Error(f.logger).Log("msg", "Keeping the fan-out merge format", "merge", merger.Name(), "err", err)
	}
	// The groups' state is kept by the hedge settings it was built for.
	f.replicas.Store(newReplicaStates(cfg.Hedge.Enabled && cfg.Hedge.After.Auto))
	f.settings.Store(&settings{fanout: cfg, merger: merger, hedges: hedge.NewBucket(cfg.Hedge.MaxPercent)})
	if f.metrics != nil {
		f.metrics.enabled.Store(cfg.Enabled)
		f.metrics.hedging.Store(cfg.Enabled && cfg.Hedge.Enabled)
	}
}

// LastRound is the summary of the latest finished round, nil before the
// first. Rounds the client abandoned are not summarised.
func (f *Fanout) LastRound() *RoundSummary {
	return f.lastRound.Load()
}

// ServeHTTP runs one fan-out round.
func (f *Fanout) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := f.now()
	sandbox(w.Header())
	s := f.settings.Load()
	if !s.fanout.Enabled {
		jsonanswer.Write(w, r, http.StatusNotFound, fanoutError{Error: "the fan-out is not enabled: set fanout.enabled: true in the configuration"})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		f.refuse(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: use GET, HEAD or POST", r.Method))
		return
	}
	target, err := backendTarget(r.URL)
	if err != nil {
		f.refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	if why := loopRefusal(r, f.replica, s.fanout.MaxHops); why != "" {
		f.refuseLoop(w, why)
		return
	}
	demand, err := demandOf(r.Header)
	if err != nil {
		f.refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	header, size := forwardedHeader(r, s.fanout.ForwardHeaders, f.replica)
	if limit := int(s.fanout.MaxRequestHeaderBytes); limit > 0 && size > limit {
		f.refuse(w, http.StatusRequestHeaderFieldsTooLarge,
			fmt.Sprintf("the forwarded request headers take %d bytes, more than fanout.max_request_header_bytes (%d)", size, limit))
		return
	}
	// Everything the round buffers, its request body included, is given
	// back once its answer is written.
	mem := f.buffers.Round(int64(s.fanout.MaxBufferedBytes))
	defer mem.Release()
	body, ok := f.readClientBody(w, r, s, mem)
	if !ok {
		return
	}
	if !f.acquire(s.fanout.MaxConcurrent) {
		f.rejectLocally(w, s.fanout.MaxConcurrent)
		return
	}
	defer f.inFlight.Add(-1)

	selection, grouped, _ := f.pool.GroupSelection()
	units := roundUnits(selection)
	configuredQuorum := max(s.fanout.MinContributors.Of(units), 1)
	quorum := demand.quorum(configuredQuorum, units)
	groups := f.newRoundGroups(selection)
	rd := f.ask(r, groups, target, header, body, s, mem, demand.stragglerRule(s, quorum))

	// The merge is in the groups' order, whichever replica answered.
	contributed := 0
	bodies := make([][]byte, 0, len(groups))
	for i := range groups {
		if k := groups[i].winner; k >= 0 {
			contributed++
			bodies = append(bodies, rd.attempts[k].answer.body)
		}
	}
	var relay *backendAnswer
	for a := range rd.ordered {
		if a.answer.relayable {
			relay = &a.answer
			break
		}
	}
	abandoned := r.Context().Err() != nil
	missing := missingBackends(rd)
	f.observe(start, contributed, units, abandoned, rd, grouped, missing)
	if abandoned {
		return
	}

	w.Header().Set("X-Backends", backendsHeader(contributed, units))
	if s.fanout.ExposeMissing && len(missing) > 0 {
		// A round that misses nobody sends no header: an empty one
		// would be a value for clients to parse.
		w.Header().Set("X-Backends-Missing", missingHeader(missing))
	}
	if s.fanout.ExposeMissing && grouped && contributed > 0 {
		w.Header().Set("X-Backends-Served-By", servedByHeader(rd))
	}
	// A client that does not read its answer holds it for no longer than
	// the backends were given. The kernel measures a socket's deadline
	// on the real clock, never on the injected one, which may be skewed.
	if timeout := time.Duration(s.fanout.Timeout); timeout > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout))
	}
	switch {
	case contributed >= quorum:
		w.Header().Set("Content-Type", s.merger.ContentType())
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		// Written piece by piece from the answers' buffers: a merged
		// copy would double what the round holds.
		merged := s.merger.Merge(bodies)
		w.Header().Set("Content-Length", strconv.Itoa(merged.Len()))
		w.WriteHeader(http.StatusOK)
		_, _ = merged.WriteTo(w)
	case contributed == 0 && relay != nil:
		// Nobody contributed and a backend refused the request: the
		// query is the client's to fix, so it gets the refusal as is,
		// whatever the quorum.
		copyRelayedHeader(w.Header(), relay.header)
		if r.Method != http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(relay.body)))
		}
		w.WriteHeader(relay.status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(relay.body)
		}
	case contributed == 0 && quorum == 1:
		writeNoAnswer(w, r, missing)
	default:
		if f.metrics != nil {
			f.metrics.quorumFailures.Inc()
		}
		asker := fmt.Sprintf("fanout.min_contributors (%s)", s.fanout.MinContributors)
		if demand.raised(configuredQuorum, units) {
			asker = "the " + proxyheader.MinContributors + " header"
		}
		writeNoQuorum(w, r, contributed, units, quorum, asker, missing)
	}
}

// charge hands the finished round's answers, by group, to the pool
// (Pool.RecordRound), which decides whether its failures are correlated
// and charges, or not, each backend; a correlated round is counted here.
func (f *Fanout) charge(rd *round) {
	samples := make([]pool.RoundSample, 0, rd.n)
	for at := range rd.ordered {
		a := &at.answer
		samples = append(samples, pool.RoundSample{Backend: a.backend, Outcome: a.outcome, Latency: a.latency})
		// A local outcome measured probegate, not the backend.
		if f.metrics != nil && !(a.outcome.Erred && a.outcome.Reason == traffic.Local) {
			f.metrics.observeDuration(a.backend.Name, a.latency)
		}
	}
	if f.pool.RecordRound(samples) && f.metrics != nil {
		f.metrics.correlatedFailures.Inc()
	}
}

// observe counts a finished round and remembers it for /healthz. A round
// the client abandoned counts as a request but neither partial nor failed:
// the backends had no chance to finish.
func (f *Fanout) observe(start time.Time, contributed, configured int, abandoned bool, rd *round, grouped bool, missing []missingBackend) {
	if m := f.metrics; m != nil {
		m.Requests.Inc()
		m.Duration.Observe(f.now().Sub(start).Seconds())
		if !abandoned && contributed < configured {
			m.Partial.Inc()
			switch planned, cut := missingByDesign(missing); {
			case planned && cut:
				m.partialStragglers.Inc()
			case planned:
				m.partialMaintenance.Inc()
			}
		}
		if !abandoned && contributed == 0 {
			m.Failed.Inc()
		}
	}
	if !abandoned {
		f.lastRound.Store(&RoundSummary{
			Time:        start,
			Contributed: contributed,
			Configured:  configured,
			Partial:     contributed < configured,
			Backends:    roundBackends(rd, grouped),
		})
	}
}

// acquire takes one of limit round slots, or reports false when every one
// is taken. A limit of 0 or less is no limit.
func (f *Fanout) acquire(limit int) bool {
	if n := f.inFlight.Add(1); limit > 0 && n > int64(limit) {
		f.inFlight.Add(-1)
		return false
	}
	return true
}

// refuseLoop answers 508 Loop Detected to a request that came back
// through this probegate or has passed fanout.max_hops of them. It asks no
// backend, and counts as a request so that the loop shows in the request
// rate.
func (f *Fanout) refuseLoop(w http.ResponseWriter, why string) {
	if f.metrics != nil {
		f.metrics.Requests.Inc()
		f.metrics.rejectedLoop.Inc()
	}
	f.refuse(w, http.StatusLoopDetected, why)
}

// rejectLocally answers a round refused because fanout.max_concurrent
// rounds are in flight: 503 with Retry-After, no backend asked, and each
// backend that would have been asked charged a local error, which passive
// health ignores.
func (f *Fanout) rejectLocally(w http.ResponseWriter, limit int) {
	if f.metrics != nil {
		f.metrics.rejectedMaxConcurrent.Inc()
	}
	selected, _, _, _ := f.pool.Selection()
	samples := make([]pool.RoundSample, len(selected))
	for i, b := range selected {
		samples[i] = pool.RoundSample{Backend: b, Outcome: traffic.Outcome{Erred: true, Reason: traffic.Local}}
	}
	f.pool.RecordRound(samples)
	w.Header().Set("Retry-After", "1")
	f.refuse(w, http.StatusServiceUnavailable, fmt.Sprintf("%d fan-out rounds are in flight, the most fanout.max_concurrent allows: retry shortly", limit))
}
