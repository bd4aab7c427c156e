package probe

import (
	"time"

	"github.com/probegate/probegate/collector/pool"
)

// defaultProbeInterval stands in for an interval that is not positive, which
// config validation rejects; it is the documented default so a hand-built config
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
	// rate is the probes per second the entries ask for, the sum of
	// their inverse intervals, from which slot sizes the dispatcher's
	// slot.
	rate float64
	// newFunc builds a backend's probe: the package's newFunc, unless a
	// test swaps in one that never touches the network.
	newFunc func(*pool.Backend) (built, error)
	// releases are the release functions of retired targets that no probe
	// uses any more, for the Prober to call outside its lock.
	releases []func()
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
	backend *pool.Backend
	// probe sends one probe; buildErr is set instead when the backend's
	// probe cannot be built (its probe URL does not parse, say).
	probe Func
	// timed, when set, is probe keeping its own deadline, which run calls
	// instead.
	timed    TimedFunc
	buildErr error
	timeout  time.Duration
	// release frees what probe holds (a gRPC connection); nil when it
	// holds nothing. It is called once the target is retired (replaced
	// or removed) and no probe of it is in flight.
	release func()
	// inFlight and retired are guarded by the lock that guards the
	// schedule; everything above is immutable.
	inFlight, retired bool
}

// probeJob is one probe handed to a worker: the entry to report back to,
// the target as it was when the probe was due, and its due time.
type probeJob struct {
	entry  *probeEntry
	target *probeTarget
	due    time.Duration
}

func newSchedule(epoch time.Time, phase func(time.Duration) time.Duration) *schedule {
	return &schedule{epoch: epoch, phase: phase, entries: map[string]*probeEntry{}, newFunc: newFunc}
}

func newProbeTarget(b *pool.Backend, build func(*pool.Backend) (built, error)) *probeTarget {
	t := &probeTarget{backend: b, timeout: time.Duration(b.Probe.Timeout)}
	made, err := build(b)
	t.probe, t.timed, t.release, t.buildErr = made.probe, made.timed, made.release, err
	if t.timeout <= 0 {
		t.timeout = probeInterval(b)
	}
	return t
}

func probeInterval(b *pool.Backend) time.Duration {
	if interval := time.Duration(b.Probe.Interval); interval > 0 {
		return interval
	}
	return defaultProbeInterval
}

// offset is a time as a duration since the epoch.
func (s *schedule) offset(t time.Time) time.Duration { return t.Sub(s.epoch) }

// sync makes the schedule probe exactly the backends given that have
// probing enabled and that this replica probes itself (not those whose
// vantage points probe them for it, under shared probing). A backend already scheduled under the same object, or
// replaced by a reload that kept its identity, keeps its place; a new one
// gets its first probe within min(interval, 1s) of now; a removed one is
// never probed again (a probe in flight finishes but is not rescheduled).
func (s *schedule) sync(backends []*pool.Backend, now time.Time) (added, removed int) {
	seen := make(map[string]struct{}, len(backends))
	for _, b := range backends {
		if !b.Probe.Enabled || !b.ProbedHere() {
			continue
		}
		seen[b.Name] = struct{}{}
		e := s.entries[b.Name]
		switch {
		case e != nil && e.target.backend == b:
			continue
		case e != nil && e.target.backend.SameIdentity(b):
			s.retire(e.target)
			e.target = newProbeTarget(b, s.newFunc)
			continue
		case e != nil:
			s.remove(e)
			removed++
		}
		s.add(b, now)
		added++
	}
	for name, e := range s.entries {
		if _, ok := seen[name]; !ok {
			s.remove(e)
			removed++
		}
	}
	return added, removed
}

func (s *schedule) add(b *pool.Backend, now time.Time) {
	interval := probeInterval(b)
	phase := s.phase(interval)
	start := s.offset(now)
	e := &probeEntry{
		target:   newProbeTarget(b, s.newFunc),
		interval: interval,
		anchor:   start + phase,
		due:      start + phase%min(interval, maxFirstProbeDelay),
	}
	s.entries[b.Name] = e
	s.rate += perSecond(interval)
	s.push(e)
}

func (s *schedule) remove(e *probeEntry) {
	e.removed = true
	delete(s.entries, e.target.backend.Name)
	s.rate -= perSecond(e.interval)
	s.retire(e.target)
}

// retire marks a target as no longer scheduled. What it holds is released
// now if no probe of it is in flight, or when that probe is done.
func (s *schedule) retire(t *probeTarget) {
	t.retired = true
	if !t.inFlight && t.release != nil {
		s.releases = append(s.releases, t.release)
	}
}

// done marks the probe of a target as finished, and releases the target
// if it was retired meanwhile.
func (s *schedule) done(t *probeTarget) {
	t.inFlight = false
	if t.retired && t.release != nil {
		s.releases = append(s.releases, t.release)
	}
}

// retireAll retires every target, for a Prober that stops. The entries
// stay, so the schedule can still be inspected.
func (s *schedule) retireAll() {
	for _, e := range s.entries {
		s.retire(e.target)
	}
}

// takeReleases returns the pending release functions and forgets them.
func (s *schedule) takeReleases() []func() {
	r := s.releases
	s.releases = nil
	return r
}

// popDue takes every entry due at or before now out of the queue and
// appends a job for each to jobs. The entries stay out of the queue until
// finish, which is what keeps two probes of one backend from overlapping.
func (s *schedule) popDue(now time.Time, jobs []probeJob) []probeJob {
	at := s.offset(now)
	for len(s.queue) > 0 && s.queue[0].due <= at {
		if e := s.popMin(); !e.removed {
			e.target.inFlight = true
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

// slot is how long the dispatcher gathers due probes before it fires
// them: probeSlot, or as long as the schedule takes to ask for
// probesPerSlot probes when that is shorter, but never below minProbeSlot.
func (s *schedule) slot() time.Duration {
	if len(s.entries) == 0 || s.rate <= 0 {
		return probeSlot
	}
	return max(minProbeSlot, min(probeSlot, time.Duration(probesPerSlot/s.rate*float64(time.Second))))
}

// perSecond is how many probes per second an interval asks for.
func perSecond(interval time.Duration) float64 {
	return float64(time.Second) / float64(interval)
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
