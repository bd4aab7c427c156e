package pool

import (
	"math"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// HistoryLength is how many of its last probe results a backend keeps for
// the status page.
const HistoryLength = 60

// ProbeRecord is one probe result as the history keeps it: enough to draw
// and describe it, without its error text.
type ProbeRecord struct {
	Time     time.Time
	Duration time.Duration
	Class    health.Class
	Reason   health.Reason
	// StatusCode is the HTTP status, 0 without one; Status the answer of
	// a kind without HTTP status, as Result.Status.
	StatusCode int
	Status     string
}

// historyStatusSlots is how many distinct answers of kinds without HTTP
// status one history keeps. A backend is probed by one kind, whose answers
// are few (tcp has one, grpc six); an answer once every slot is taken is
// kept as none, and its reason then describes it.
const historyStatusSlots = 7

// historyEntry is a ProbeRecord packed into 24 bytes: a backend keeps
// HistoryLength of them in a fixed array, 1.4 KiB, whatever happens.
type historyEntry struct {
	unixNano int64
	micros   uint32
	code     uint16
	class    health.Class
	reason   health.Reason
	status   uint8
}

// probeHistory is a fixed ring of a backend's last HistoryLength probe
// results. Adding one writes a slot and allocates nothing.
type probeHistory struct {
	entries [HistoryLength]historyEntry
	// statuses are the answers of kinds without HTTP status this history
	// has seen; an entry names its answer by index+1, 0 for none. Keeping
	// the strings here rather than in each entry keeps an entry at 24
	// bytes, and the names of the kinds' answers out of the pool.
	statuses [historyStatusSlots]string
	// next is the slot the next result goes to; n how many slots hold one.
	next, n uint8
}

// add records r, overwriting the oldest result once the ring is full.
func (h *probeHistory) add(r health.Result) {
	e := historyEntry{
		unixNano: r.Time.UnixNano(),
		micros:   uint32(min(max(r.Duration.Microseconds(), 0), math.MaxUint32)),
		code:     uint16(min(max(r.StatusCode, 0), math.MaxUint16)),
		class:    r.Class,
		reason:   r.Reason,
	}
	e.status = h.statusIndex(r.Status)
	h.entries[h.next] = e
	h.next = (h.next + 1) % HistoryLength
	h.n = min(h.n+1, HistoryLength)
}

// statusIndex is the index+1 of status in h.statuses, taking a free slot
// for a new one; 0 for none, and for a new one once the slots are full.
func (h *probeHistory) statusIndex(status string) uint8 {
	if status == "" {
		return 0
	}
	for i, s := range h.statuses {
		if s == "" {
			h.statuses[i] = status
		}
		if h.statuses[i] == status {
			return uint8(i + 1)
		}
	}
	return 0
}

// status is the answer an entry names.
func (h *probeHistory) status(e historyEntry) string {
	if e.status == 0 {
		return ""
	}
	return h.statuses[e.status-1]
}

// records returns the results, oldest first.
func (h *probeHistory) records() []ProbeRecord {
	out := make([]ProbeRecord, 0, h.n)
	start := (int(h.next) + HistoryLength - int(h.n)) % HistoryLength
	for i := range int(h.n) {
		e := h.entries[(start+i)%HistoryLength]
		out = append(out, ProbeRecord{
			Time: time.Unix(0, e.unixNano), Duration: time.Duration(e.micros) * time.Microsecond,
			Class: e.class, Reason: e.reason, StatusCode: int(e.code), Status: h.status(e),
		})
	}
	return out
}

// snapshotWithHistory is Snapshot with the History filled.
func (b *Backend) snapshotWithHistory() BackendSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.snapshotLocked()
	s.History = b.stats.history.records()
	return s
}

// SnapshotWithHistory is Snapshot with every backend's History and the
// pool's last state changes (Transitions) filled, for the status page.
// Snapshot leaves them out: /metrics and /healthz have no use for them.
func (p *Pool) SnapshotWithHistory() Snapshot {
	s := p.snapshot(true)
	s.Transitions = p.transitionLog.newestFirst()
	return s
}
