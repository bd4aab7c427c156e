package history

import (
	"math"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// ProbeLength is how many of its last probe results a backend keeps for
// the status page.
const ProbeLength = 60

// Probe is one probe result as the history keeps it: enough to draw and
// describe it, without its error text.
type Probe struct {
	Time     time.Time
	Duration time.Duration
	Class    health.Class
	Reason   health.Reason
	// StatusCode is the HTTP status, 0 without one; Status the answer of
	// a kind without HTTP status, as Result.Status.
	StatusCode int
	Status     string
}

// statusSlots is how many distinct answers of kinds without HTTP status
// one history keeps. A backend is probed by one kind, whose answers are
// few (tcp has one, grpc six); an answer once every slot is taken is kept
// as none, and its reason then describes it.
const statusSlots = 7

// entry is a Probe packed into 16 bytes: a backend keeps ProbeLength of
// them in a fixed array, 960 bytes, whatever happens. Its time is kept to
// the millisecond (the status page shows seconds) and in unsigned 32-bit
// Unix seconds, which last until 2106; its duration in microseconds up to
// 71 minutes, far above any probe timeout.
type entry struct {
	seconds uint32
	micros  uint32
	millis  uint16
	code    uint16
	class   health.Class
	reason  health.Reason
	status  uint8
}

// Probes is a fixed ring of a backend's last ProbeLength probe results.
// Its zero value is empty and ready. It is not safe for concurrent use:
// the backend's mutex guards it.
type Probes struct {
	entries [ProbeLength]entry
	// statuses are the answers of kinds without HTTP status this history
	// has seen; an entry names its answer by index+1, 0 for none. Keeping
	// the strings here rather than in each entry keeps an entry at 24
	// bytes, and the names of the kinds' answers out of this package.
	statuses [statusSlots]string
	// next is the slot the next result goes to; n how many slots hold one.
	next, n uint8
}

// Add records r, overwriting the oldest result once the ring is full. It
// does not allocate.
func (h *Probes) Add(r health.Result) {
	e := entry{
		seconds: uint32(min(max(r.Time.Unix(), 0), math.MaxUint32)),
		millis:  uint16(r.Time.Nanosecond() / int(time.Millisecond)),
		micros:  uint32(min(max(r.Duration.Microseconds(), 0), math.MaxUint32)),
		code:    uint16(min(max(r.StatusCode, 0), math.MaxUint16)),
		class:   r.Class,
		reason:  r.Reason,
	}
	e.status = h.statusIndex(r.Status)
	h.entries[h.next] = e
	h.next = (h.next + 1) % ProbeLength
	h.n = min(h.n+1, ProbeLength)
}

// statusIndex is the index+1 of status in h.statuses, taking a free slot
// for a new one; 0 for none, and for a new one once the slots are full.
func (h *Probes) statusIndex(status string) uint8 {
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
func (h *Probes) status(e entry) string {
	if e.status == 0 {
		return ""
	}
	return h.statuses[e.status-1]
}

// Records returns the results, oldest first, in a new slice.
func (h *Probes) Records() []Probe {
	out := make([]Probe, 0, h.n)
	start := (int(h.next) + ProbeLength - int(h.n)) % ProbeLength
	for i := range int(h.n) {
		e := h.entries[(start+i)%ProbeLength]
		out = append(out, Probe{
			Time: time.Unix(int64(e.seconds), int64(e.millis)*int64(time.Millisecond)), Duration: time.Duration(e.micros) * time.Microsecond,
			Class: e.class, Reason: e.reason, StatusCode: int(e.code), Status: h.status(e),
		})
	}
	return out
}
