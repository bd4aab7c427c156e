package collector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// probeSlot is how long due probes are gathered before they are fired
// together. Waking up once per probe costs several times the CPU of the
// probe itself; waking once per slot lets the workers fire a slot's probes
// back to back on threads that are already awake. It is also the most a
// probe is late by design, far below the 100 ms budget for schedule lag.
const probeSlot = 10 * time.Millisecond

// minProbeWorkers is the number of workers kept even when idle.
const minProbeWorkers = 4

// workerTrimPeriod is how often workers beyond the peak need of the last
// period are let go. A pool of slow backends needs a worker per hanging
// probe while it hangs, and not for ever after.
const workerTrimPeriod = 30 * time.Second

// Prober probes every backend of a pool that has probing enabled on its
// interval, feeding each result to the backend's state machine.
//
// It is built for thousands of backends: one dispatcher goroutine keeps a
// schedule (a heap of due times, each backend on its own jittered phase),
// wakes at most once per probeSlot, and hands that slot's due probes to a
// set of worker goroutines. There is no goroutine or timer per backend.
// Every probe in flight holds one worker, and a worker is added whenever
// every worker is busy, so a backend hanging until its timeout delays no
// other. A backend is never probed twice at once: its next probe is only
// scheduled once the last one finished.
type Prober struct {
	pool    *Pool
	logger  log.Logger
	observe func(Result)
	// now is the clock. The schedule itself never reads it: it is handed
	// the time, which is how its tests run on synthetic time.
	now func() time.Time
	// onLag, when set, receives how late each probe started (tests and the
	// benchmark use it).
	onLag func(time.Duration)

	syncs chan struct{}
	wakes chan struct{}

	mu    sync.Mutex
	sched *schedule
	// wakeAt is when the dispatcher wakes next; a probe rescheduled before
	// then must wake it early.
	wakeAt time.Time

	work    chan probeJob
	busy    atomic.Int64
	workers sync.WaitGroup
}

// NewProber returns a prober for the pool. observe, when not nil, is called
// with every result after the backend recorded it (probegate feeds the
// probe duration histogram with it); it must be safe for concurrent use.
func NewProber(pool *Pool, logger log.Logger, observe func(Result)) *Prober {
	return &Prober{
		pool:    pool,
		logger:  logger,
		observe: observe,
		now:     time.Now,
		syncs:   make(chan struct{}, 1),
		wakes:   make(chan struct{}, 1),
		work:    make(chan probeJob, 1024),
	}
}

// Sync makes a running prober pick up the pool's backends after
// Pool.Apply: added backends get their first probe within min(interval,
// 1s), removed ones are no longer probed, and unchanged ones keep their
// schedule. It returns at once; Run applies the change.
func (p *Prober) Sync() {
	select {
	case p.syncs <- struct{}{}:
	default:
		// A sync is already pending, and it will read the pool afresh.
	}
}

// Run probes until ctx is done, then cancels the probes in flight and
// returns once every one of them has finished. Results of probes cut short
// by the cancellation are dropped: they say nothing about the backend.
// Run is called once per Prober.
func (p *Prober) Run(ctx context.Context) {
	start := p.now()
	p.mu.Lock()
	p.sched = newSchedule(start, randomPhase)
	p.mu.Unlock()
	p.sync(start)

	// Marked once here rather than in every probe.
	d := dispatcher{Prober: p, ctx: withProbeMark(ctx), trimAt: start.Add(workerTrimPeriod)}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := p.now()
		wakeAt := d.dispatch(now)
		timer.Reset(wakeAt.Sub(now))
		select {
		case <-ctx.Done():
			close(p.work)
			p.workers.Wait()
			return
		case <-p.syncs:
			p.sync(p.now())
		case <-p.wakes:
		case <-timer.C:
		}
	}
}

func (p *Prober) sync(now time.Time) {
	backends := p.pool.Backends()
	p.mu.Lock()
	added, removed, retired := p.sched.sync(backends, now)
	probed := p.sched.len()
	p.mu.Unlock()
	// A retired backend's probe connection would otherwise stay open until
	// the idle timeout; one in flight is closed when its probe ends.
	for _, b := range retired {
		b.Client.CloseIdleConnections()
	}
	if added > 0 || removed > 0 {
		level.Debug(p.logger).Log("msg", "Probed backends changed", "added", added, "removed", removed, "probed", probed)
	}
}

// randomPhase is the default jitter: uniform over the interval.
func randomPhase(interval time.Duration) time.Duration {
	return rand.N(interval)
}

// dispatcher is the state of Run's loop: it fires due probes and sizes the
// worker set.
type dispatcher struct {
	*Prober
	ctx context.Context
	// jobs is reused from slot to slot.
	jobs []probeJob
	// workerCount is the number of live workers as the dispatcher counts
	// them: a worker told to stop is uncounted at once.
	workerCount int
	// peakBusy is the most probes in flight seen since trimAt was last set.
	peakBusy int
	trimAt   time.Time
}

// dispatch hands every probe due at now to the workers and returns when
// the dispatcher should wake next: at the next due probe, but no earlier
// than one slot from now, so that probes falling due meanwhile are fired
// together.
func (d *dispatcher) dispatch(now time.Time) time.Time {
	d.mu.Lock()
	d.jobs = d.sched.popDue(now, d.jobs[:0])
	d.mu.Unlock()

	for i, job := range d.jobs {
		busy := int(d.busy.Add(1))
		if busy > d.workerCount {
			d.workerCount++
			d.workers.Add(1)
			go d.worker(d.ctx)
		}
		d.peakBusy = max(d.peakBusy, busy)
		d.work <- job
		d.jobs[i] = probeJob{}
	}
	if !now.Before(d.trimAt) {
		d.trimWorkers()
		d.trimAt = now.Add(workerTrimPeriod)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	wakeAt := now.Add(probeSlot)
	if next, ok := d.sched.next(); ok && next.After(wakeAt) {
		wakeAt = next
	}
	if d.sched.len() == 0 {
		// Nothing to probe: sleep until a sync wakes us.
		wakeAt = now.Add(24 * time.Hour)
	}
	d.wakeAt = wakeAt
	return wakeAt
}

// trimWorkers stops the workers the last period did not need. A stop
// token goes through the job channel, so whichever worker is free first
// takes it and no running probe is disturbed.
func (d *dispatcher) trimWorkers() {
	keep := max(minProbeWorkers, d.peakBusy, int(d.busy.Load()))
	for ; d.workerCount > keep; d.workerCount-- {
		d.work <- probeJob{}
	}
	d.peakBusy = 0
}

// worker runs probe jobs until the job channel closes or it receives a
// stop token.
func (p *Prober) worker(ctx context.Context) {
	defer p.workers.Done()
	for job := range p.work {
		if job.entry == nil {
			return
		}
		p.runJob(ctx, job)
		p.busy.Add(-1)
	}
}

// runJob probes one backend, records the result and schedules the next
// probe. A panic anywhere in it is logged and costs this one probe only.
func (p *Prober) runJob(ctx context.Context, job probeJob) {
	defer func() {
		if err := recover(); err != nil {
			level.Error(p.logger).Log("msg", "Probing a backend panicked; probing goes on", "backend", job.target.backend.Name, "err", fmt.Sprint(err))
		}
		p.reschedule(job)
	}()
	if ctx.Err() != nil {
		return
	}
	start := p.now()
	if p.onLag != nil {
		p.onLag(start.Sub(p.sched.epoch.Add(job.due)))
	}
	t := job.target
	var r Result
	if t.requestErr != nil {
		r = TransportResult(t.requestErr.Error())
		r.Time = start
	} else {
		r = ProbeRequest(ctx, t.backend.Client, t.request, t.timeout)
	}
	if ctx.Err() != nil {
		return
	}
	t.backend.Record(r)
	if p.observe != nil {
		p.observe(r)
	}
}

// reschedule puts a finished entry back in the schedule and wakes the
// dispatcher if the entry is now due before the dispatcher planned to wake.
func (p *Prober) reschedule(job probeJob) {
	now := p.now()
	p.mu.Lock()
	due, ok := p.sched.finish(job.entry, now)
	early := ok && due.Before(p.wakeAt)
	retired := job.target != job.entry.target
	p.mu.Unlock()
	if !ok || retired {
		// Removed or replaced while this probe ran.
		job.target.backend.Client.CloseIdleConnections()
	}
	if early {
		select {
		case p.wakes <- struct{}{}:
		default:
		}
	}
}

// defaultProbeInterval stands in for an interval that is not positive, which
// config validation rejects; it is SPEC's default so a hand-built config
// still probes at a sane rate instead of spinning.
const defaultProbeInterval = 5 * time.Second

// maxFirstProbeDelay bounds how long a new backend waits for its first
// probe, so a started or reloaded probegate leaves the unknown state fast.
const maxFirstProbeDelay = time.Second

// schedule decides which backend is probed when. It is pure: every method
// takes the time it acts at, nothing reads a clock, and it is not safe for
// concurrent use (the Prober guards it with a mutex).
//
// Each backend gets a random phase within its interval and is probed on the
// grid phase + k*interval, so backends sharing an interval spread evenly
// across it instead of firing together. The very first probe comes earlier,
// at the phase folded into min(interval, 1s), so that start-up and reload do
// not leave a backend unprobed for a whole long interval.
type schedule struct {
	epoch time.Time
	// phase returns a jitter offset in [0, interval).
	phase func(interval time.Duration) time.Duration
	// queue is a binary min-heap of the waiting entries by due time.
	// Entries whose probe is in flight are not in it; removed entries stay
	// until they come up and are dropped then, so that heap operations
	// never touch the entries themselves, only this array.
	queue   []queuedEntry
	entries map[string]*probeEntry
}

// probeEntry is one probed backend's place in the schedule.
type probeEntry struct {
	// target is what is probed; a reload that keeps the backend's identity
	// but changes its client swaps it while keeping the schedule.
	target   *probeTarget
	interval time.Duration
	// anchor is one point of the backend's phase grid, and due the time of
	// its waiting or in-flight probe, both as offsets from the epoch.
	anchor  time.Duration
	due     time.Duration
	removed bool
}

// queuedEntry is an entry in the queue with its due time next to it, so
// that ordering the heap reads one array instead of chasing pointers.
type queuedEntry struct {
	due   time.Duration
	entry *probeEntry
}

// probeTarget is everything a worker needs to probe one backend. It is
// immutable once built, so a worker can use it without locks.
type probeTarget struct {
	backend *Backend
	// request is the template every probe copies; requestErr is set instead
	// when the backend's probe URL cannot be parsed.
	request    *http.Request
	requestErr error
	timeout    time.Duration
}

// probeJob is one probe handed to a worker: the entry to report back to,
// the target as it was when the probe was due, and its due time.
type probeJob struct {
	entry  *probeEntry
	target *probeTarget
	due    time.Duration
}

func newSchedule(epoch time.Time, phase func(time.Duration) time.Duration) *schedule {
	return &schedule{epoch: epoch, phase: phase, entries: map[string]*probeEntry{}}
}

func newProbeTarget(b *Backend) *probeTarget {
	t := &probeTarget{backend: b, timeout: time.Duration(b.Probe.Timeout)}
	t.request, t.requestErr = NewProbeRequest(b.URL + b.Probe.Path)
	if t.timeout <= 0 {
		t.timeout = probeInterval(b)
	}
	return t
}

func probeInterval(b *Backend) time.Duration {
	if interval := time.Duration(b.Probe.Interval); interval > 0 {
		return interval
	}
	return defaultProbeInterval
}

// offset is a time as a duration since the epoch.
func (s *schedule) offset(t time.Time) time.Duration { return t.Sub(s.epoch) }

// sync makes the schedule probe exactly the backends given that have
// probing enabled. A backend already scheduled under the same object, or
// replaced by a reload that kept its identity, keeps its place; a new one
// gets its first probe within min(interval, 1s) of now; a removed one is
// never probed again (a probe in flight finishes but is not rescheduled).
// retired lists the backend objects no longer probed, replaced ones
// included, whose connections can go.
func (s *schedule) sync(backends []*Backend, now time.Time) (added, removed int, retired []*Backend) {
	seen := make(map[string]struct{}, len(backends))
	for _, b := range backends {
		if !b.Probe.Enabled {
			continue
		}
		seen[b.Name] = struct{}{}
		e := s.entries[b.Name]
		switch {
		case e != nil && e.target.backend == b:
			continue
		case e != nil && e.target.backend.sameIdentity(b):
			retired = append(retired, e.target.backend)
			e.target = newProbeTarget(b)
			continue
		case e != nil:
			retired = append(retired, e.target.backend)
			s.remove(e)
			removed++
		}
		s.add(b, now)
		added++
	}
	for name, e := range s.entries {
		if _, ok := seen[name]; !ok {
			retired = append(retired, e.target.backend)
			s.remove(e)
			removed++
		}
	}
	return added, removed, retired
}

func (s *schedule) add(b *Backend, now time.Time) {
	interval := probeInterval(b)
	phase := s.phase(interval)
	start := s.offset(now)
	e := &probeEntry{
		target:   newProbeTarget(b),
		interval: interval,
		anchor:   start + phase,
		due:      start + phase%min(interval, maxFirstProbeDelay),
	}
	s.entries[b.Name] = e
	s.push(e)
}

func (s *schedule) remove(e *probeEntry) {
	e.removed = true
	delete(s.entries, e.target.backend.Name)
}

// popDue takes every entry due at or before now out of the queue and
// appends a job for each to jobs. The entries stay out of the queue until
// finish, which is what keeps two probes of one backend from overlapping.
func (s *schedule) popDue(now time.Time, jobs []probeJob) []probeJob {
	at := s.offset(now)
	for len(s.queue) > 0 && s.queue[0].due <= at {
		if e := s.popMin(); !e.removed {
			jobs = append(jobs, probeJob{entry: e, target: e.target, due: e.due})
		}
	}
	return jobs
}

// finish puts an entry whose probe ended at finished back in the queue at
// the first point of its grid after both its last due time and finished:
// a probe that overran its interval skips the grid points it missed rather
// than firing late ones back to back. It returns the new due time, and
// false when the entry was removed meanwhile.
func (s *schedule) finish(e *probeEntry, finished time.Time) (time.Time, bool) {
	if e.removed {
		return time.Time{}, false
	}
	after := max(e.due, s.offset(finished))
	e.due = e.anchor + ((after-e.anchor)/e.interval+1)*e.interval
	if after < e.anchor {
		// Only the first probe, folded in before its anchor, gets here.
		e.due = e.anchor
	}
	s.push(e)
	return s.epoch.Add(e.due), true
}

// next returns when the earliest waiting entry is due.
func (s *schedule) next() (time.Time, bool) {
	if len(s.queue) == 0 {
		return time.Time{}, false
	}
	return s.epoch.Add(s.queue[0].due), true
}

// len is the number of scheduled backends, waiting or in flight.
func (s *schedule) len() int { return len(s.entries) }

func (s *schedule) push(e *probeEntry) {
	item := queuedEntry{due: e.due, entry: e}
	s.queue = append(s.queue, item)
	i := len(s.queue) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if s.queue[parent].due <= item.due {
			break
		}
		s.queue[i] = s.queue[parent]
		i = parent
	}
	s.queue[i] = item
}

// popMin takes the earliest entry out of the queue.
func (s *schedule) popMin() *probeEntry {
	top := s.queue[0].entry
	last := len(s.queue) - 1
	item := s.queue[last]
	s.queue[last] = queuedEntry{}
	s.queue = s.queue[:last]
	if last == 0 {
		return top
	}
	i := 0
	for {
		child := 2*i + 1
		if child >= last {
			break
		}
		if right := child + 1; right < last && s.queue[right].due < s.queue[child].due {
			child = right
		}
		if item.due <= s.queue[child].due {
			break
		}
		s.queue[i] = s.queue[child]
		i = child
	}
	s.queue[i] = item
	return top
}
