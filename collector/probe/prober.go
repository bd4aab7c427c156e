package probe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// probeSlot is how long due probes are gathered before they are fired
// together. Waking up once per probe costs several times the CPU of the
// probe itself; waking once per slot lets the workers fire a slot's probes
// back to back on threads that are already awake. It is also the most a
// probe is late by design, half the 100 ms budget for schedule lag. A
// probe that owns its connection costs so little that at 1,000 backends a
// 10 ms slot's wake-ups were most of its CPU (1.5 times HAProxy's per
// probe, against 0.96 times with 50 ms); the jitter still spreads the
// backends over the interval, a slot's share at a time.
const probeSlot = 50 * time.Millisecond

// probesPerSlot is how many probes a slot gathers before it is shortened,
// and minProbeSlot how short it gets. Where backends are many, a slot of
// probeSlot holds so many probes that the last of them waits for the
// whole batch on top of the slot: at 20,000 backends probed every second,
// 1,000 of them. A slot that gathers about as many probes as a 50 ms slot
// does at 5,000 backends spreads its wake-up over as many probes, and
// keeps both the wait by design and the batch behind it four times
// smaller at 20,000.
const (
	probesPerSlot = 250
	minProbeSlot  = 10 * time.Millisecond
)

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
// wakes at most once per slot (see probeSlot), and hands that slot's due
// probes to a set of worker goroutines. There is no goroutine or timer per backend.
// Every probe in flight holds one worker, and a worker is added whenever
// every worker is busy, so a backend hanging until its timeout delays no
// other. A backend is never probed twice at once: its next probe is only
// scheduled once the last one finished.
type Prober struct {
	pool    *pool.Pool
	logger  log.Logger
	observe func(health.Result)
	// now is the clock. The schedule itself never reads it: it is handed
	// the time, which is how its tests run on synthetic time.
	now func() time.Time
	// onLag, when set, receives how late each probe started (tests and the
	// benchmark use it).
	onLag func(time.Duration)
	// newFunc builds each backend's probe. It is the package's newFunc;
	// tests swap in probes that never touch the network, so that the
	// timing can be tested on synthetic time.
	newFunc func(*pool.Backend) (built, error)

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
func NewProber(backends *pool.Pool, logger log.Logger, observe func(health.Result)) *Prober {
	return &Prober{
		pool:    backends,
		logger:  logger,
		observe: observe,
		now:     time.Now,
		newFunc: newFunc,
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
	p.sched.newFunc = p.newFunc
	p.mu.Unlock()
	p.sync(start)

	// Marked once here rather than in every probe.
	d := dispatcher{Prober: p, ctx: ctx, trimAt: start.Add(workerTrimPeriod)}
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
			p.mu.Lock()
			p.sched.retireAll()
			p.mu.Unlock()
			p.release()
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
	added, removed := p.sched.sync(backends, now)
	probed := p.sched.len()
	p.mu.Unlock()
	p.release()
	if added > 0 || removed > 0 {
		level.Debug(p.logger).Log("msg", "Probed backends changed", "added", added, "removed", removed, "probed", probed)
	}
}

// release frees what the retired targets that no probe uses any more
// hold. It runs outside the lock: closing a connection may take a moment.
func (p *Prober) release() {
	p.mu.Lock()
	releases := p.sched.takeReleases()
	p.mu.Unlock()
	for _, r := range releases {
		r()
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
	wakeAt := now.Add(d.sched.slot())
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
	r := job.target.run(ctx, p.now)
	if ctx.Err() != nil {
		return
	}
	job.target.backend.RecordProbe(r)
	if p.observe != nil {
		p.observe(r)
	}
}

// reschedule puts a finished entry back in the schedule and wakes the
// dispatcher if the entry is now due before the dispatcher planned to wake.
func (p *Prober) reschedule(job probeJob) {
	now := p.now()
	p.mu.Lock()
	p.sched.done(job.target)
	due, ok := p.sched.finish(job.entry, now)
	early := ok && due.Before(p.wakeAt)
	p.mu.Unlock()
	p.release()
	if early {
		select {
		case p.wakes <- struct{}{}:
		default:
		}
	}
}
