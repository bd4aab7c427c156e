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

// entry is a Probe packed into 12 bytes: a backend keeps ProbeLength of
// them in a fixed array, 720 bytes, whatever happens. Its time is kept to
// the millisecond (the status page shows seconds) and in unsigned 32-bit
// Unix seconds, which last until 2106; its duration in microseconds up to
// 71 minutes, far above any probe timeout. The rest shares one word
// (packedFields).
type entry struct {
	seconds uint32
	micros  uint32
	packed  uint32
}

// The fields packed into an entry's third word, from its lowest bit: the
// milliseconds of its time, its status code (three digits, as net/http
// reads them), its class, its reason and the index+1 of its answer
// (statusIndex).
const (
	millisBits = 10
	codeBits   = 10
	classBits  = 3
	reasonBits = 5
	statusBits = 4

	codeShift   = millisBits
	classShift  = codeShift + codeBits
	reasonShift = classShift + classBits
	statusShift = reasonShift + reasonBits
)

// The packing must hold every value of the fields it packs.
var (
	_ [1<<classBits - int(health.NumClasses)]struct{}
	_ [1<<reasonBits - int(health.NumReasons)]struct{}
	_ [1<<statusBits - statusSlots - 1]struct{}
	_ [1<<codeBits - 1000]struct{}
	_ [32 - statusShift - statusBits]struct{}
)

func field(word uint32, shift, bits int) uint32 { return word >> shift & (1<<bits - 1) }

// Probes is a fixed ring of a backend's last ProbeLength probe results.
// Its zero value is empty and ready. It is not safe for concurrent use:
// the backend's mutex guards it.
type Probes struct {
	entries [ProbeLength]entry
	// statuses are the answers of kinds without HTTP status this history
	// has seen, nil until the first; an entry names its answer by
	// index+1, 0 for none. Keeping the strings here rather than in each
	// entry keeps an entry small, the names of the kinds' answers out of
	// this package, and the slots out of the histories of HTTP probes.
	statuses *[statusSlots]string
	// next is the slot the next result goes to; n how many slots hold one.
	next, n uint8
}

// Add records r, overwriting the oldest result once the ring is full. It
// does not allocate, but for the first answer of a kind without HTTP
// status.
func (h *Probes) Add(r health.Result) {
	code := uint32(r.StatusCode)
	if r.StatusCode < 0 || r.StatusCode > 999 {
		code = 0
	}
	h.entries[h.next] = entry{
		seconds: uint32(min(max(r.Time.Unix(), 0), math.MaxUint32)),
		micros:  uint32(min(max(r.Duration.Microseconds(), 0), math.MaxUint32)),
		packed: uint32(r.Time.Nanosecond()/int(time.Millisecond)) | code<<codeShift |
			uint32(r.Class)<<classShift | uint32(r.Reason)<<reasonShift | uint32(h.statusIndex(r.Status))<<statusShift,
	}
	h.next = (h.next + 1) % ProbeLength
	h.n = min(h.n+1, ProbeLength)
}

// clone is a copy of the ring that shares no answer slots with it.
func (h *Probes) clone() Probes {
	c := *h
	if h.statuses != nil {
		statuses := *h.statuses
		c.statuses = &statuses
	}
	return c
}

// statusIndex is the index+1 of status in h.statuses, taking a free slot
// for a new one; 0 for none, and for a new one once the slots are full.
func (h *Probes) statusIndex(status string) uint8 {
	if status == "" {
		return 0
	}
	if h.statuses == nil {
		h.statuses = new([statusSlots]string)
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
	i := field(e.packed, statusShift, statusBits)
	if i == 0 || h.statuses == nil {
		return ""
	}
	return h.statuses[i-1]
}

// Records returns the results, oldest first, in a new slice.
func (h *Probes) Records() []Probe {
	out := make([]Probe, 0, h.n)
	start := (int(h.next) + ProbeLength - int(h.n)) % ProbeLength
	for i := range int(h.n) {
		e := h.entries[(start+i)%ProbeLength]
		millis := field(e.packed, 0, millisBits)
		out = append(out, Probe{
			Time: time.Unix(int64(e.seconds), int64(millis)*int64(time.Millisecond)), Duration: time.Duration(e.micros) * time.Microsecond,
			Class:      health.Class(field(e.packed, classShift, classBits)),
			Reason:     health.Reason(field(e.packed, reasonShift, reasonBits)),
			StatusCode: int(field(e.packed, codeShift, codeBits)), Status: h.status(e),
		})
	}
	return out
}
