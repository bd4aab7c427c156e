package collector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/config"
)

// FanoutPath is where the fan-out handler is mounted: it serves FanoutPath
// itself and every path under FanoutPath + "/", and what follows FanoutPath
// goes to the backends.
const FanoutPath = "/fanout"

// errorBodyDrainBytes is how much of a body that is thrown away is still
// read, so that a short error page does not cost the keep-alive connection.
const errorBodyDrainBytes = 4 << 10

// Fanout serves /fanout/<path>?<query> (SPEC section 6): it sends the
// request concurrently to every selected backend, merges the answers of
// those that contributed, and feeds each backend's outcome to passive
// health. It is safe for concurrent use; Update swaps its settings on
// reload without disturbing rounds in flight. Run readmits the backends
// whose passive ejection ends with the window, also without traffic.
type Fanout struct {
	pool    *Pool
	metrics *Metrics
	logger  log.Logger
	now     func() time.Time

	settings  atomic.Pointer[fanoutSettings]
	lastRound atomic.Pointer[RoundSummary]

	// ejectMu makes counting the ejected backends and ejecting one more a
	// single step, so that max_ejected_percent holds under concurrent
	// rounds. It also guards the readmission scan.
	ejectMu sync.Mutex
	// readmitDue is the Unix time in nanoseconds at which the earliest
	// ejected backend that probes cannot readmit is due for readmission, 0
	// when there is none. Rounds before it skip the readmission scan.
	readmitDue atomic.Int64
	// readmitWake tells Run that readmitDue moved earlier. It holds one
	// signal, which is all Run needs: it reloads readmitDue when woken.
	readmitWake chan struct{}
}

// fanoutSettings is one configuration generation of the fan-out.
type fanoutSettings struct {
	fanout  config.Fanout
	merge   MergeFormat
	passive config.PassiveHealth
}

// NewFanout returns the fan-out handler over pool. metrics may be nil; a
// nil logger logs nothing and a nil now is time.Now.
func NewFanout(pool *Pool, cfg config.Fanout, passive config.PassiveHealth, metrics *Metrics, logger log.Logger, now func() time.Time) *Fanout {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if now == nil {
		now = time.Now
	}
	f := &Fanout{pool: pool, metrics: metrics, logger: logger, now: now, readmitWake: make(chan struct{}, 1)}
	f.Update(cfg, passive)
	return f
}

// Update applies reloaded fan-out and passive-health settings to the rounds
// that start after it. A zero timeout, max_request_bytes or
// max_response_bytes means no limit (config.Load always sets them). An
// unknown merge format, which config.Load rejects, is logged and the
// current format (json_array at first) kept.
func (f *Fanout) Update(cfg config.Fanout, passive config.PassiveHealth) {
	merge, err := ParseMergeFormat(cfg.Merge)
	if err != nil {
		if current := f.settings.Load(); current != nil {
			merge = current.merge
		}
		level.Error(f.logger).Log("msg", "Keeping the fan-out merge format", "merge", merge, "err", err)
	}
	f.settings.Store(&fanoutSettings{fanout: cfg, merge: merge, passive: passive})
	// A new window moves the readmission of backends ejected until it ends:
	// have the readmission scan look at them again now.
	f.ejectMu.Lock()
	if f.readmitDue.Load() != 0 {
		f.readmitDue.Store(1)
		f.wakeReadmission()
	}
	f.ejectMu.Unlock()
}

// LastRound is the summary of the latest finished round, nil before the
// first. Rounds the client abandoned are not summarised.
func (f *Fanout) LastRound() *RoundSummary {
	return f.lastRound.Load()
}

// backendAnswer is what one backend's part of a round came to.
type backendAnswer struct {
	backend *Backend
	// cancelled is set when the client went away before the backend
	// answered: that says nothing about the backend.
	cancelled   bool
	outcome     trafficOutcome
	contributed bool
	status      int
	// header and body are kept for a contribution, and for a 4xx answer
	// read whole (relayable), which the round relays when nobody
	// contributed.
	header    http.Header
	body      []byte
	relayable bool
}

// ServeHTTP runs one fan-out round.
func (f *Fanout) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := f.now()
	s := f.settings.Load()
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
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		if body, err = readRequestBody(w, r, int64(s.fanout.MaxRequestBytes)); err != nil {
			status := http.StatusBadRequest
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				status = http.StatusRequestEntityTooLarge
			}
			f.refuse(w, status, err.Error())
			return
		}
	}

	// Run readmits on time; this check, one atomic load until something
	// is due, makes a round that arrives at the due time see the
	// readmitted backend even before Run's timer goroutine has run.
	f.readmitElapsed(start, time.Duration(s.passive.Window))
	selected, _ := f.pool.Select()
	configured := f.pool.configuredCount()
	answers := f.ask(r, selected, target, body, s)

	contributed := 0
	bodies := make([][]byte, 0, len(answers))
	var relay *backendAnswer
	for i := range answers {
		a := &answers[i]
		switch {
		case a.contributed:
			contributed++
			bodies = append(bodies, a.body)
		case a.relayable && relay == nil:
			relay = a
		}
	}
	abandoned := r.Context().Err() != nil
	f.observe(start, contributed, configured, abandoned)
	if abandoned {
		return
	}

	w.Header().Set("X-Backends", backendsHeader(contributed, configured))
	switch {
	case contributed > 0:
		w.Header().Set("Content-Type", s.merge.ContentType())
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		merged := s.merge.Merge(bodies)
		w.Header().Set("Content-Length", strconv.Itoa(len(merged)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(merged)
	case relay != nil:
		// Nobody contributed and a backend refused the request: the
		// query is the client's to fix, so it gets the refusal as is.
		copyEndToEndHeader(w.Header(), relay.header)
		w.Header().Set("X-Backends", backendsHeader(contributed, configured))
		if r.Method != http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(relay.body)))
		}
		w.WriteHeader(relay.status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(relay.body)
		}
	default:
		writeNoAnswer(w, r, answers)
	}
}

// ask sends the request to every selected backend at once and waits for all
// of them, bounded by fanout.timeout and the client's context. Each answer
// is counted and fed to passive health as soon as it is in. The answers are
// in the order of selected, which is config order.
func (f *Fanout) ask(r *http.Request, selected []*Backend, target string, body []byte, s *fanoutSettings) []backendAnswer {
	var ctx context.Context
	var cancel context.CancelFunc
	if timeout := time.Duration(s.fanout.Timeout); timeout > 0 {
		ctx, cancel = context.WithTimeout(r.Context(), timeout)
	} else {
		ctx, cancel = context.WithCancel(r.Context())
	}
	defer cancel()
	header := forwardedHeader(r)
	answers := make([]backendAnswer, len(selected))
	var wg sync.WaitGroup
	for i, b := range selected {
		wg.Go(func() {
			// A panic handling one backend's answer must cost that answer,
			// not the process: this goroutine is outside net/http's recover.
			defer func() {
				if p := recover(); p != nil {
					level.Error(f.logger).Log("msg", "Fan-out request panicked", "backend", b.Name, "url", b.URL, "panic", p)
					answers[i] = backendAnswer{backend: b, outcome: trafficOutcome{Erred: true, Reason: FanoutTransport}}
				}
			}()
			answers[i] = f.askOne(ctx, r, b, target, header, body, s)
			if answers[i].cancelled {
				return
			}
			if b.recordTraffic(answers[i].outcome, f.now(), &s.passive) {
				f.eject(b, s)
			}
		})
	}
	wg.Wait()
	return answers
}

// backendTarget returns the part of the client's URL that is appended to
// every backend's URL: the path after FanoutPath as the client escaped it,
// and the query. A path that is not FanoutPath or under FanoutPath + "/" as sent
// (FanoutPath with an escaped slash or letter) is refused, and so is one
// with a ".." segment: resolved by the backend, or anything in front of
// it, it would leave the backend URL's base path. The segments are checked
// decoded, so %2e%2e and a%2F..%2Fb are refused too, and split at
// backslashes as well as slashes, which some servers take for one. Empty
// segments (a//b) are forwarded as they are: they cannot leave the base
// path, and collapsing them would change what a backend that tells them
// apart is asked.
func backendTarget(u *url.URL) (string, error) {
	escaped := u.EscapedPath()
	target, ok := strings.CutPrefix(escaped, FanoutPath)
	if !ok || (target != "" && target[0] != '/') {
		return "", fmt.Errorf("fan-out path %q is neither %s nor under %s/", escaped, FanoutPath, FanoutPath)
	}
	isSeparator := func(r rune) bool { return r == '/' || r == '\\' }
	for _, segment := range strings.FieldsFunc(u.Path, isSeparator) {
		if segment == ".." {
			return "", fmt.Errorf("fan-out path %q has a \"..\" segment, which would leave the backends' base path", escaped)
		}
	}
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	return target, nil
}

// askOne sends the request to one backend and judges its answer.
func (f *Fanout) askOne(ctx context.Context, client *http.Request, b *Backend, target string, header http.Header, body []byte, s *fanoutSettings) backendAnswer {
	var reqBody io.Reader
	if client.Method == http.MethodPost {
		reqBody = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, client.Method, b.URL+target, reqBody)
	if err != nil {
		return errorAnswer(client, b, err)
	}
	// The header is shared by every backend's request: round trippers
	// never modify a request, they clone it first.
	req.Header = header
	// The client's transport directly: a fan-out never follows redirects,
	// and http.Client.Do copies every request's header in case it does.
	transport := b.Client.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return errorAnswer(client, b, err)
	}
	defer resp.Body.Close()

	a := backendAnswer{backend: b, status: resp.StatusCode}
	class, _ := ClassifyStatus(resp.StatusCode)
	a.outcome.Failed = class == ClassFailed
	limit := int64(s.fanout.MaxResponseBytes)
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if client.Method == http.MethodHead {
			a.contributed = true
			return a
		}
		data, err := readDecoded(resp, limit)
		if err != nil {
			return bodyErrorAnswer(client, a, err)
		}
		if err := s.merge.Validate(data); err != nil {
			a.outcome.Erred, a.outcome.Reason = true, FanoutInvalidBody
			return a
		}
		a.contributed, a.body = true, data
	case code >= 400 && code <= 499 && code != http.StatusTooManyRequests:
		a.outcome.Erred, a.outcome.Reason = true, FanoutHTTP4xx
		// Relayed as is, so read as sent: a compressed refusal stays
		// compressed, with its Content-Encoding.
		if data, err := readLimited(resp.Body, resp.ContentLength, limit); err == nil {
			a.header, a.body, a.relayable = resp.Header, data, true
		}
	default:
		a.outcome.Erred, a.outcome.Reason = true, statusReason(code)
		_, _ = io.CopyN(io.Discard, resp.Body, errorBodyDrainBytes)
	}
	return a
}

// statusReason is why an answer that is neither 2xx nor a relayable 4xx
// did not contribute.
func statusReason(code int) FanoutReason {
	switch class, reason := ClassifyStatus(code); {
	case reason == ReasonHTTP429:
		return FanoutHTTP429
	case reason == ReasonHTTP5xx || class == ClassRefused:
		// 501 is a refusal of the probe path in SPEC section 2, but
		// here it is a backend that cannot serve the query: a 5xx.
		return FanoutHTTP5xx
	case class == ClassOK:
		return FanoutHTTP3xx
	default:
		return FanoutTransport
	}
}

// errorAnswer is the answer of a backend whose request failed before any
// HTTP status arrived.
func errorAnswer(client *http.Request, b *Backend, err error) backendAnswer {
	if client.Context().Err() != nil {
		return backendAnswer{backend: b, cancelled: true}
	}
	return backendAnswer{backend: b, outcome: trafficOutcome{Erred: true, Reason: errorReason(err), Failed: true}}
}

// bodyErrorAnswer turns an answer whose body could not be read into a
// non-contribution: too large or not gzip as announced (the backend did
// answer 2xx, which passive health counts as a success), or a timeout or
// transport error mid-body.
func bodyErrorAnswer(client *http.Request, a backendAnswer, err error) backendAnswer {
	switch {
	case errors.Is(err, errResponseTooLarge):
		a.outcome.Erred, a.outcome.Reason = true, FanoutTooLarge
		return a
	case errors.Is(err, errGzipBody):
		a.outcome.Erred, a.outcome.Reason = true, FanoutInvalidBody
		return a
	}
	if client.Context().Err() != nil {
		return backendAnswer{backend: a.backend, cancelled: true}
	}
	a.outcome = trafficOutcome{Erred: true, Reason: errorReason(err), Failed: true}
	return a
}

// errorReason tells a timeout from any other transport error.
func errorReason(err error) FanoutReason {
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return FanoutTimeout
	}
	return FanoutTransport
}

// observe counts a finished round and remembers it for /healthz. A round
// the client abandoned counts as a request but neither partial nor failed:
// the backends had no chance to finish.
func (f *Fanout) observe(start time.Time, contributed, configured int, abandoned bool) {
	if m := f.metrics; m != nil {
		m.FanoutRequests.Inc()
		m.FanoutDuration.Observe(f.now().Sub(start).Seconds())
		if !abandoned && contributed < configured {
			m.FanoutPartial.Inc()
		}
		if !abandoned && contributed == 0 {
			m.FanoutFailed.Inc()
		}
	}
	if !abandoned {
		f.lastRound.Store(&RoundSummary{
			Time:        start,
			Contributed: contributed,
			Configured:  configured,
			Partial:     contributed < configured,
		})
	}
}

// fanoutError is the JSON body of a fan-out answer that is probegate's own.
type fanoutError struct {
	Error    string                `json:"error"`
	Backends []fanoutBackendResult `json:"backends,omitempty"`
}

// fanoutBackendResult says why one backend did not contribute.
type fanoutBackendResult struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
	Status  int    `json:"status,omitempty"`
}

// refuse answers a request that starts no round.
func (f *Fanout) refuse(w http.ResponseWriter, status int, message string) {
	w.Header().Set("X-Backends", backendsHeader(0, f.pool.configuredCount()))
	writeFanoutError(w, status, fanoutError{Error: message})
}

// writeNoAnswer is the 502 of a round to which nobody contributed and
// nobody refused the query: it names each backend and why.
func writeNoAnswer(w http.ResponseWriter, r *http.Request, answers []backendAnswer) {
	e := fanoutError{Error: "no backend contributed to the fan-out"}
	if len(answers) == 0 {
		e.Error = "no backends are configured"
	}
	for _, a := range answers {
		e.Backends = append(e.Backends, fanoutBackendResult{
			Backend: a.backend.Name, Reason: a.outcome.Reason.String(), Status: a.status,
		})
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	writeFanoutError(w, http.StatusBadGateway, e)
}

// writeFanoutError answers with probegate's own JSON error.
func writeFanoutError(w http.ResponseWriter, status int, e fanoutError) {
	body, _ := json.Marshal(e) // Strings and ints only: it cannot fail.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
