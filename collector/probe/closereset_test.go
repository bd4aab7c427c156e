package probe

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// TestProbeClosesAnsweredConnection: a connection the probe does not keep
// after a complete answer is closed with a reset, as HAProxy closes its
// checks, so that no side is left in TIME_WAIT for every probe, unless
// the backend closed its side first and the probe read that end, when
// the close is orderly.
func TestProbeClosesAnsweredConnection(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		keepAlive bool
		// answer is written after the request is read; closeWrite then
		// ends the backend's side.
		answer     string
		closeWrite bool
		wantReset  bool
	}{
		{"keep_alive false", false, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, true},
		{"the answer asks to close", true, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false, true},
		{"the backend closed first", false, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nok", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// What the backend read once it had answered: io.EOF for an
			// orderly close, ECONNRESET for a reset.
			ended := make(chan error, 1)
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() {
				conn, err := l.Accept()
				if err != nil {
					ended <- err
					return
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
					ended <- err
					return
				}
				io.WriteString(conn, c.answer)
				if c.closeWrite {
					conn.(*net.TCPConn).CloseWrite()
				}
				_, err = conn.Read(make([]byte, 1))
				ended <- err
			})

			b := &pool.Backend{URL: "http://" + l.Addr().String(), Client: newClient(t), Probe: config.HealthProbe{
				Enabled: true, Timeout: model.Duration(5 * time.Second), KeepAlive: new(c.keepAlive),
			}}
			target := newProbeTarget(b, newFunc)
			defer target.release()
			if r := target.run(t.Context(), time.Now); r.Class != health.ClassOK {
				t.Fatalf("probe: %+v", r)
			}
			err = <-ended
			if reset := errors.Is(err, syscall.ECONNRESET); reset != c.wantReset {
				t.Errorf("the backend read %v after its answer, want a reset: %v", err, c.wantReset)
			}
			if !c.wantReset && err != io.EOF {
				t.Errorf("the backend read %v after its answer, want the end of an orderly close", err)
			}
		})
	}
}
