package fanout

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// slowBody is a request body that has started to arrive and sends the
// rest only when released: a client trickling its body.
type slowBody struct {
	started chan struct{}
	once    sync.Once
	release <-chan struct{}
	rest    io.Reader
}

func (b *slowBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return b.rest.Read(p)
}

// TestFanoutSlowBodiesHoldNoSlot: POST bodies still arriving do not hold
// fanout.max_concurrent slots. With every slot's worth of clients
// trickling their bodies, another client's round is still served; each
// slow round is served once its body is in.
func TestFanoutSlowBodiesHoldNoSlot(t *testing.T) {
	b := serve(t, answer(200, `[]`))
	const slots = 2
	rig := setup(t, options{fanout: config.Fanout{MaxConcurrent: slots}}, b)
	release := make(chan struct{})
	var wg sync.WaitGroup
	codes := make([]int, slots)
	for i := range slots {
		body := &slowBody{started: make(chan struct{}), release: release, rest: strings.NewReader(`{}`)}
		req := httptest.NewRequest("POST", "/fanout/q", body)
		rec := httptest.NewRecorder()
		wg.Go(func() {
			rig.fanout.ServeHTTP(rec, req)
			codes[i] = rec.Code
		})
		<-body.started
	}
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[]")
	close(release)
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusOK {
			t.Errorf("slow client %d got %d once its body was in; want 200", i, code)
		}
	}
}

// TestFanoutBodyDeadlineEndsWithTheBody: the read deadline that bounds a
// POST body is lifted once the body is in, so a round slower than
// request_read_timeout is answered, whether its body was empty (net/http
// then reads the connection in the background from the start, and a
// deadline firing there cancels the request) or not; and the deadline is
// on the real clock, not on the fan-out's skewed one. The kernel measures
// the deadline on the real clock, so the backend takes real time.
func TestFanoutBodyDeadlineEndsWithTheBody(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	slow := serve(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(4 * readTimeout)
		w.Write([]byte(`[1]`))
	})
	behind := func() time.Time { return time.Now().Add(-20 * time.Minute) }
	rig := setup(t, options{now: behind, fanout: config.Fanout{RequestReadTimeout: model.Duration(readTimeout)}}, slow)
	srv := httptest.NewServer(rig.fanout)
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	// A body beyond net/http's 4 KiB buffer is read from the connection,
	// under the deadline.
	for _, body := range []string{"", `{"q":"` + strings.Repeat("a", 64<<10) + `"}`} {
		resp, err := client.Post(srv.URL+"/fanout/q", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST of %d bytes with a round slower than request_read_timeout: %v", len(body), err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(got) != `[1]` {
			t.Errorf("POST of %d bytes with a round slower than request_read_timeout: %d %q, %v; want 200 [1]", len(body), resp.StatusCode, got, err)
		}
	}
}
