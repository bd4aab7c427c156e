package fanout

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWriteDeadlineIsOnTheRealClock: the fan-out's clock may be skewed
// (the hidden --testing.clock-offset, or any injected clock), but a
// socket's deadline is measured by the kernel on the real one. A clock
// 20 minutes behind must not put the write deadline in the past, which
// failed every answer's write.
func TestWriteDeadlineIsOnTheRealClock(t *testing.T) {
	behind := func() time.Time { return time.Now().Add(-20 * time.Minute) }
	rig := setup(t, options{now: behind},
		serve(t, answer(200, `[1]`)),
		serve(t, answer(200, `[2]`)),
	)
	srv := httptest.NewServer(rig.fanout)
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get(srv.URL + "/fanout/query")
	if err != nil {
		t.Fatalf("GET through a fan-out whose clock is 20 minutes behind: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || string(body) != `[1,2]` {
		t.Errorf("answer %d %q, %v; want 200 [1,2]", resp.StatusCode, body, err)
	}
}
