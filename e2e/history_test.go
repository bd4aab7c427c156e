package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/probegate/probegate/collector/maintenance"
)

// The history of a fault test and its invariant. A history records what
// every replica shows (sampled every 50 ms), every maintenance request the
// test sends and its answer, and every change of the store as a client of
// its own watches it; violations then holds the record to the invariant:
//
//   - at no instant does the union of the entries the replicas show, not
//     yet ended by the store, hold more backends out than the budget allows
//     with every backend in service;
//   - no granted entry is lost before its end: the store keeps it until its
//     ttl, a DELETE or a hand's deletion of the key ends it, and no replica
//     stops showing it before the store ended it;
//   - no replica shows an entry more than 1 s after the store ended it,
//     unless it is cut from the store by a fault (and then until 1 s after
//     it reports the store healthy again).

// sampleEvery is the invariant's sampling period.
const sampleEvery = 50 * time.Millisecond

// selection is what one replica answered about its backends.
type selection struct {
	// ok is false when the replica did not answer (stopped, restarting).
	ok           bool
	storeHealthy bool
	// shown maps each backend the replica holds in maintenance to the
	// identity of its entry.
	shown map[string]string
	// unserved are the backends out of service for their health
	// (unhealthy, ejected), not for an entry.
	unserved map[string]bool
}

// replicaSample is one reading of one replica's selection.
type replicaSample struct {
	replica    string
	start, end time.Time
	selection
}

// request is one maintenance request the test sent.
type request struct {
	replica, backend, method string
	ttl                      time.Duration
	start, end               time.Time
	// code is the answer's status, 0 when none came.
	code int
	// identity is the granted entry's, for a POST answered 200.
	identity string
}

// storedEntry is one entry as the store held it.
type storedEntry struct {
	backend, identity string
	// ended is when the store ended it, zero while it is in force.
	ended time.Time
}

// faultWindow is a span during which a replica cannot hear the store.
type faultWindow struct {
	replica    string
	from, heal time.Time
}

// history records one test's run; startHistory starts recording.
type history struct {
	t       testing.TB
	prefix  string
	allowed int
	client  *http.Client

	mu       sync.Mutex
	samples  []replicaSample
	requests []request
	stored   map[string]*storedEntry // by identity
	// document and leaseKeys are the store's keys as last seen: the
	// entries and, by backend, the lease each lease key is under.
	document  []documentEntry
	leaseKeys map[string]int64
	windows   []faultWindow
	// handEnds are the times the test deleted the entries key by hand,
	// which ends every entry.
	handEnds []time.Time
	// storeEvents narrate the store's changes for a failure's log.
	storeEvents []string

	stop context.CancelFunc
	done sync.WaitGroup
}

// identityOf names one entry: its backend and its start as stored.
func identityOf(backend string, since time.Time) string {
	return backend + "@" + since.UTC().Format(time.RFC3339Nano)
}

// startHistory records the replicas' selections and the store's changes
// under prefix until the test ends. allowed is how many backends the
// budget lets entries hold out when every backend is in service.
func startHistory(t testing.TB, cluster *etcdCluster, prefix string, allowed int, replicas []*replica) *history {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &history{t: t, prefix: prefix, allowed: allowed, stop: cancel,
		client: &http.Client{Timeout: 3 * time.Second}, stored: map[string]*storedEntry{}, leaseKeys: map[string]int64{}}
	cli := cluster.client()
	rev := h.readStore(ctx, cli)
	h.done.Go(func() { h.watchStore(ctx, cli, rev) })
	for _, r := range replicas {
		name, url := r.name, r.admin+maintenance.BackendsPath
		h.done.Go(func() { h.sampleReplica(ctx, name, url) })
	}
	t.Cleanup(h.finish)
	return h
}

// finish stops recording; it is safe to call more than once.
func (h *history) finish() {
	h.stop()
	h.done.Wait()
}

// readStore applies the store's current state and returns its revision.
func (h *history) readStore(ctx context.Context, cli *clientv3.Client) int64 {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, h.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		h.t.Fatalf("read the store: %v", err)
	}
	for _, kv := range resp.Kvs {
		h.storeEvent(&clientv3.Event{Type: clientv3.EventTypePut, Kv: kv})
	}
	h.settle(time.Now())
	return resp.Header.Revision
}

// watchStore follows every key under the prefix from rev on, one
// revision at a time.
func (h *history) watchStore(ctx context.Context, cli *clientv3.Client, rev int64) {
	for ctx.Err() == nil {
		for resp := range cli.Watch(ctx, h.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if resp.Err() != nil {
				break
			}
			now := time.Now()
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision
				h.storeEvent(ev)
			}
			h.settle(now)
		}
		sleepOrDone(ctx, 100*time.Millisecond)
	}
}

// storeEvent applies one change of a key under the prefix to the model
// of the store: the entries document and the lease keys.
func (h *history) storeEvent(ev *clientv3.Event) {
	key := string(ev.Kv.Key)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case key == h.prefix+"/maintenance" && ev.Type == clientv3.EventTypeDelete:
		h.document = nil
		h.storeEvents = append(h.storeEvents, time.Now().Format(time.StampMilli)+" the entries key was deleted")
	case key == h.prefix+"/maintenance":
		h.parseDocument(ev.Kv.Value)
	case strings.HasPrefix(key, h.prefix+"/leases/"):
		backend := strings.TrimPrefix(key, h.prefix+"/leases/")
		if ev.Type == clientv3.EventTypeDelete {
			delete(h.leaseKeys, backend)
		} else {
			h.leaseKeys[backend] = ev.Kv.Lease
		}
	}
}

// documentEntry is what the model keeps of one stored entry.
type documentEntry struct {
	backend, identity string
	lease             int64
}

// parseDocument makes value the entries document. A value that does not
// parse changes nothing here: a replica must fail closed on it.
func (h *history) parseDocument(value []byte) {
	var doc struct {
		Maintenance []struct {
			Backend string    `json:"backend"`
			Since   time.Time `json:"since"`
			Lease   int64     `json:"lease"`
		} `json:"maintenance"`
	}
	at := time.Now().Format(time.StampMilli)
	if err := json.Unmarshal(value, &doc); err != nil {
		h.storeEvents = append(h.storeEvents, fmt.Sprintf("%s unreadable value (%v)", at, err))
		return
	}
	h.document = h.document[:0]
	for _, m := range doc.Maintenance {
		h.document = append(h.document, documentEntry{backend: m.Backend, identity: identityOf(m.Backend, m.Since), lease: m.Lease})
	}
}

// settle works out, after a revision, which entries are in force: those
// of the document that bind no lease, or whose lease key holds the lease
// they bind (an entry's ttl is an etcd lease, and its key goes when the
// lease expires).
func (h *history) settle(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := map[string]bool{}
	var names []string
	for _, d := range h.document {
		if d.lease != 0 && h.leaseKeys[d.backend] != d.lease {
			continue
		}
		held[d.identity] = true
		names = append(names, d.identity)
		switch e := h.stored[d.identity]; {
		case e == nil:
			h.stored[d.identity] = &storedEntry{backend: d.backend, identity: d.identity}
		case !e.ended.IsZero():
			// Back in force, as after a write that timed out committed:
			// the model follows the store.
			e.ended = time.Time{}
		}
	}
	for _, e := range h.stored {
		if e.ended.IsZero() && !held[e.identity] {
			e.ended = at
		}
	}
	h.storeEvents = append(h.storeEvents, fmt.Sprintf("%s in force %v", at.Format(time.StampMilli), names))
}

// sampleReplica reads one replica's selection every 50 ms.
func (h *history) sampleReplica(ctx context.Context, name, url string) {
	client := &http.Client{Timeout: 300 * time.Millisecond}
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	for {
		s := replicaSample{replica: name, start: time.Now()}
		s.selection = readSelection(ctx, client, url)
		s.end = time.Now()
		h.mu.Lock()
		h.samples = append(h.samples, s)
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// readSelection reads which backends one replica holds out of service,
// and why.
func readSelection(ctx context.Context, client *http.Client, url string) selection {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return selection{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return selection{}
	}
	defer resp.Body.Close()
	var l maintenance.List
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&l) != nil {
		return selection{}
	}
	sel := selection{ok: true, storeHealthy: l.Store.Healthy, shown: map[string]string{}, unserved: map[string]bool{}}
	for _, b := range l.Backends {
		switch {
		case b.State == "maintenance" && b.Maintenance != nil:
			sel.shown[b.Name] = identityOf(b.Name, b.Maintenance.Since)
		case !b.InService:
			sel.unserved[b.Name] = true
		}
	}
	return sel
}

// faultOn marks the named replicas as unable to hear the store from now
// on; the function it returns marks the fault healed.
func (h *history) faultOn(names ...string) (heal func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	from := len(h.windows)
	for _, n := range names {
		h.windows = append(h.windows, faultWindow{replica: n, from: time.Now()})
	}
	to := len(h.windows)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i := from; i < to; i++ {
			h.windows[i].heal = time.Now()
		}
	}
}

// note adds a line to the run's story, such as a fault and its heal.
func (h *history) note(format string, args ...any) {
	h.mu.Lock()
	h.storeEvents = append(h.storeEvents, time.Now().Format(time.StampMilli)+" "+fmt.Sprintf(format, args...))
	h.mu.Unlock()
}

// handEnd records that the test deletes the entries key.
func (h *history) handEnd() {
	h.mu.Lock()
	h.handEnds = append(h.handEnds, time.Now())
	h.mu.Unlock()
}

// send sends one maintenance request to a replica and records it; a
// replica that does not answer within 3 s (its request timeout is 2 s)
// records code 0.
func (h *history) send(r *replica, method, backend string, ttl time.Duration) (int, string) {
	body := `{"reason":"fault test"}`
	if ttl > 0 {
		body = fmt.Sprintf(`{"reason":"fault test","ttl":%q}`, ttl.String())
	}
	q := request{replica: r.name, backend: backend, method: method, ttl: ttl, start: time.Now()}
	var text string
	req, err := http.NewRequest(method, r.admin+maintenance.MaintenancePath(backend), strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if resp, err := h.client.Do(req); err == nil {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		q.code, text = resp.StatusCode, string(data)
	}
	q.end = time.Now()
	if method == http.MethodPost && q.code == http.StatusOK {
		var e maintenance.Entered
		if err := json.Unmarshal([]byte(text), &e); err == nil {
			q.identity = identityOf(backend, e.Maintenance.Since)
		}
	}
	h.mu.Lock()
	h.requests = append(h.requests, q)
	h.mu.Unlock()
	return q.code, text
}

// grant and end are send's POST and DELETE.
func (h *history) grant(r *replica, backend string, ttl time.Duration) (int, string) {
	return h.send(r, http.MethodPost, backend, ttl)
}

func (h *history) end(r *replica, backend string) (int, string) {
	return h.send(r, http.MethodDelete, backend, 0)
}

// inForce is the backends whose entries the store holds in force now.
func (h *history) inForce() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.stored {
		if e.ended.IsZero() {
			out = append(out, e.backend)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// waitConverged waits until every replica answers, reports the store
// healthy and holds exactly the store's entries in force, and returns how
// long that took; ok is false when it did not within the deadline.
func (h *history) waitConverged(replicas []*replica, deadline time.Duration) (time.Duration, bool) {
	client := &http.Client{Timeout: 300 * time.Millisecond}
	start := time.Now()
	for time.Since(start) < deadline {
		want := h.inForce()
		agree := true
		for _, r := range replicas {
			sel := readSelection(context.Background(), client, r.admin+maintenance.BackendsPath)
			got := slices.Sorted(maps.Keys(sel.shown))
			if !sel.ok || !sel.storeHealthy || !slices.Equal(got, want) {
				agree = false
				break
			}
		}
		if agree {
			return time.Since(start), true
		}
		time.Sleep(sampleEvery)
	}
	return time.Since(start), false
}

// violations checks the record against the invariant and returns what
// breaks it, at most limit messages, and how many breaches there were.
func (h *history) violations(limit int) ([]string, int) {
	h.finish()
	h.mu.Lock()
	defer h.mu.Unlock()
	var msgs []string
	count := 0
	report := func(format string, args ...any) {
		count++
		if len(msgs) < limit {
			msgs = append(msgs, fmt.Sprintf(format, args...))
		}
	}
	samples := slices.Clone(h.samples)
	slices.SortFunc(samples, func(a, b replicaSample) int { return a.end.Compare(b.end) })
	endedBefore := func(id string, at time.Time) bool {
		e := h.stored[id]
		return e != nil && !e.ended.IsZero() && e.ended.Before(at)
	}

	// The budget: the entries in force on any replica at one instant. An
	// entry granted for a backend the granting replica saw out of service
	// for its health spends no budget (Kubernetes' eviction rule; the
	// replicas' health views may differ), so it is not counted.
	free := h.freeEntries(samples)
	latest := map[string]replicaSample{}
	lastOver := ""
	for _, s := range samples {
		if !s.ok {
			delete(latest, s.replica)
			continue
		}
		latest[s.replica] = s
		out := map[string]bool{}
		for _, l := range latest {
			if s.end.Sub(l.end) > 3*sampleEvery {
				continue
			}
			for b, id := range l.shown {
				if !free[id] && !endedBefore(id, l.start) {
					out[b] = true
				}
			}
		}
		// One breach per stretch over budget with the same backends out.
		over := ""
		if len(out) > h.allowed {
			over = strings.Join(keys(out), " ")
		}
		if over != "" && over != lastOver {
			report("budget: from %s the replicas hold %d backends out ([%s]), the budget allows %d",
				s.end.Format(time.StampMilli), len(out), over, h.allowed)
		}
		lastOver = over
	}

	// No granted entry lost: the store keeps it until its end.
	grants := map[string][]request{} // by identity, in the order sent
	for _, q := range h.requests {
		if q.identity != "" {
			grants[q.identity] = append(grants[q.identity], q)
		}
	}
	for id, qs := range grants {
		slices.SortFunc(qs, func(a, b request) int { return a.start.Compare(b.start) })
		e := h.stored[id]
		switch {
		case e == nil:
			report("lost: %s granted %s at %s, and the store never held it", qs[0].replica, id, qs[0].end.Format(time.StampMilli))
		case !e.ended.IsZero():
			if earliest := h.earliestEnd(qs, e.ended); e.ended.Before(earliest) {
				report("lost: the store ended %s at %s, before its earliest end %s", id,
					e.ended.Format(time.StampMilli), earliest.Format(time.StampMilli))
			}
		}
	}
	// … and no replica drops an entry the store still holds.
	shownBy := map[string]map[string]bool{} // what each replica shows, by identity
	for _, s := range samples {
		if !s.ok {
			continue
		}
		seen := shownBy[s.replica]
		if seen == nil {
			seen = map[string]bool{}
			shownBy[s.replica] = seen
		}
		for id := range seen {
			backend, _, _ := strings.Cut(id, "@")
			if s.shown[backend] == id {
				continue
			}
			delete(seen, id)
			if e := h.stored[id]; e == nil || e.ended.IsZero() || e.ended.After(s.end.Add(200*time.Millisecond)) {
				report("lost: %s stopped showing %s at %s while the store held it", s.replica, id, s.end.Format(time.StampMilli))
			}
		}
		for _, id := range s.shown {
			seen[id] = true
		}
	}

	// No entry in force more than 1 s after the store ended it.
	late := map[string]bool{}
	exempt := h.exemptions(samples)
	for _, s := range samples {
		if !s.ok || within(exempt[s.replica], s.start) {
			continue
		}
		for _, id := range s.shown {
			e := h.stored[id]
			if e != nil && !e.ended.IsZero() && s.start.Sub(e.ended) > time.Second && !late[s.replica+id] {
				late[s.replica+id] = true
				report("late: %s still shows %s at %s, %s after the store ended it", s.replica, id,
					s.start.Format(time.StampMilli), s.start.Sub(e.ended).Round(time.Millisecond))
			}
		}
	}
	return msgs, count
}

// freeEntries are the identities whose first grant found the backend out
// of service on the granting replica, by its last sample before the
// request: unhealthy or ejected, or still under an earlier entry (whose
// end readmits the backend only after a good probe).
func (h *history) freeEntries(samples []replicaSample) map[string]bool {
	free := map[string]bool{}
	for _, q := range h.requests {
		if q.identity == "" || free[q.identity] {
			continue
		}
		var before *replicaSample
		for i := range samples {
			if s := &samples[i]; s.replica == q.replica && s.ok && !s.end.After(q.start) {
				before = s
			}
		}
		if before == nil {
			continue
		}
		if id, held := before.shown[q.backend]; before.unserved[q.backend] || (held && id != q.identity) {
			free[q.identity] = true
		}
	}
	return free
}

// earliestEnd is the first moment the store may end an entry granted by
// qs (a POST of a backend already in maintenance renews its entry: the
// last one to land before the end decides its ttl): that ttl, a DELETE of its
// backend that may have landed after the first grant was sent, or a
// hand's deletion of the key.
func (h *history) earliestEnd(qs []request, ended time.Time) time.Time {
	earliest := time.Now().Add(time.Hour)
	consider := func(t time.Time) {
		if t.Before(earliest) {
			earliest = t
		}
	}
	// Renewals sent together commit in an order no client sees: each
	// one still in flight when the last was sent may be the last to land,
	// and any of their ttls may be the one in force.
	var lastSent time.Time
	for _, q := range qs {
		if q.start.Before(ended) && q.start.After(lastSent) {
			lastSent = q.start
		}
	}
	for _, q := range qs {
		if q.start.Before(ended) && q.ttl > 0 && !h.mayLandAfter(q).Before(lastSent) {
			consider(q.start.Add(q.ttl - 100*time.Millisecond))
		}
	}
	for _, d := range h.requests {
		if d.method == http.MethodDelete && d.backend == qs[0].backend && h.mayLandAfter(d).After(qs[0].start) {
			consider(d.start)
		}
	}
	for _, at := range h.handEnds {
		if at.After(qs[0].start) {
			consider(at)
		}
	}
	return earliest
}

// mayLandAfter is how late a request may still take effect: when it is
// answered; but one that timed out (no answer, or 503) may land until 2 s
// after the fault it was sent in healed, as a frozen replica's request or
// a stalled store's write does (2 s after its end when no fault of its
// replica was on).
func (h *history) mayLandAfter(q request) time.Time {
	if q.code != 0 && q.code != http.StatusServiceUnavailable {
		return q.end
	}
	latest := q.end.Add(2 * time.Second)
	for _, w := range h.windows {
		if w.replica != q.replica || q.start.Before(w.from) || (!w.heal.IsZero() && w.heal.Before(q.start)) {
			continue
		}
		if w.heal.IsZero() {
			return time.Now().Add(time.Hour)
		}
		if landed := w.heal.Add(2 * time.Second); landed.After(latest) {
			latest = landed
		}
	}
	return latest
}

// exemptions are the spans in which each replica could not hear the
// store: a fault window, and after its heal until 1 s after the replica's
// first sample reporting the store healthy again (for good, if none did).
func (h *history) exemptions(samples []replicaSample) map[string][][2]time.Time {
	out := map[string][][2]time.Time{}
	for _, w := range h.windows {
		until := time.Now().Add(time.Hour)
		if !w.heal.IsZero() {
			for _, s := range samples {
				if s.replica == w.replica && s.ok && s.storeHealthy && s.start.After(w.heal) {
					until = s.end.Add(time.Second)
					break
				}
			}
		}
		out[w.replica] = append(out[w.replica], [2]time.Time{w.from, until})
	}
	return out
}

// within reports whether at falls in one of the spans.
func within(spans [][2]time.Time, at time.Time) bool {
	return slices.ContainsFunc(spans, func(s [2]time.Time) bool { return !at.Before(s[0]) && at.Before(s[1]) })
}

// requireInvariant fails the test with the breaches of the invariant and
// the story of the run.
func (h *history) requireInvariant() {
	h.t.Helper()
	msgs, count := h.violations(20)
	if count == 0 {
		return
	}
	h.t.Errorf("%d breaches of the invariant:\n%s\n%s", count, strings.Join(msgs, "\n"), h.story())
}

// story is the run told in order: the store's changes and the requests
// with their answers.
func (h *history) story() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	lines := slices.Clone(h.storeEvents)
	for _, q := range h.requests {
		what := fmt.Sprintf("%s %s %s %s", q.end.Format(time.StampMilli), q.replica, q.method, q.backend)
		if q.ttl > 0 {
			what += " ttl " + q.ttl.String()
		}
		lines = append(lines, fmt.Sprintf("%s → %d %s (sent %s)", what, q.code, q.identity, q.start.Format(time.StampMilli)))
	}
	slices.Sort(lines)
	return "the run:\n" + strings.Join(lines, "\n")
}

// sleepOrDone waits d or until ctx ends.
func sleepOrDone(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
