package fanout

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
