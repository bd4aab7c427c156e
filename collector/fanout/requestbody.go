package fanout

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/probegate/probegate/collector/fanout/internal/membudget"
)

// A round's slot is taken only once its request is in: a client that
// sends its body slowly would otherwise hold one of fanout.max_concurrent
// slots for as long as it likes, and a few hundred such clients refuse
// every other round. So a POST body is read whole first, bounded in size
// by fanout.max_request_bytes and in time by fanout.request_read_timeout.

// readClientBody reads a POST request's body for the round before the
// round takes a slot, and reports false when it has answered the request
// itself: 413 for a body beyond max_request_bytes, 408 for one not in
// within request_read_timeout (the connection is closed: the rest of the
// body would be read as the next request), 503 when the buffers of the
// rounds in flight are full, 400 for any other read error. Other methods
// have no body to read.
func (f *Fanout) readClientBody(w http.ResponseWriter, r *http.Request, s *settings, mem *membudget.Round) ([]byte, bool) {
	if r.Method != http.MethodPost {
		return nil, true
	}
	rc := http.NewResponseController(w)
	if timeout := time.Duration(s.fanout.RequestReadTimeout); timeout > 0 {
		// A writer that cannot set deadlines (a test's recorder) reads
		// without one: there is no connection to hold. The kernel
		// measures the deadline on the real clock, never on the injected
		// one, which may be skewed.
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
	}
	body, err := readRequestBody(w, r, int64(s.fanout.MaxRequestBytes), mem)
	if err == nil {
		// Once the body is in (at once when it is empty), net/http reads
		// the connection in the background to notice the client leaving;
		// the deadline firing there would cancel the round. The deadline
		// was for the body alone.
		_ = rc.SetReadDeadline(time.Time{})
		return body, true
	}
	status := http.StatusBadRequest
	switch tooLarge := (*http.MaxBytesError)(nil); {
	case errors.As(err, &tooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, membudget.ErrBudget):
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	case errors.Is(err, os.ErrDeadlineExceeded):
		status = http.StatusRequestTimeout
		w.Header().Set("Connection", "close")
		err = fmt.Errorf("the request body was not in within fanout.request_read_timeout (%s)", s.fanout.RequestReadTimeout)
	}
	f.refuse(w, status, err.Error())
	return nil, false
}
