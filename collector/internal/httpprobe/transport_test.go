package httpprobe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rawServer is a loopback server that answers each request it reads with
// what answer writes, counting connections.
type rawServer struct {
	url string
	mu  sync.Mutex
	// connections counts accepted connections.
	connections int
}

func listenRaw(t *testing.T, answer func(w io.Writer) error) *rawServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + l.Addr().String()}
	var wg sync.WaitGroup
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.connections++
			conns = append(conns, c)
			s.mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if err := answer(c); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
	})
	return s
}

// serveRaw answers with the canned responses in turn, the last repeating.
func serveRaw(t *testing.T, responses ...string) *rawServer {
	t.Helper()
	var mu sync.Mutex
	next := 0
	return listenRaw(t, func(w io.Writer) error {
		mu.Lock()
		resp := responses[min(next, len(responses)-1)]
		next++
		mu.Unlock()
		_, err := io.WriteString(w, resp)
		return err
	})
}

func (s *rawServer) connectionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// get sends a GET through tr, reads the whole body and closes it.
func get(t *testing.T, tr *Transport, ctx context.Context, url string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body), err
}

func TestTransportKeepsConnectionAlive(t *testing.T) {
	cases := []struct {
		name            string
		response        string
		body            string
		wantConnections int
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", 1},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", "ok", 1},
		{"no body", "HTTP/1.1 204 No Content\r\n\r\n", "", 1},
		{"after 100 Continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", 1},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "ok", 3},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", 3},
		{"bytes after the body", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", "ok", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := serveRaw(t, tc.response)
			tr := &Transport{}
			defer tr.CloseIdleConnections()
			for i := range 3 {
				resp, body, err := get(t, tr, context.Background(), srv.url+"/healthz")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if resp.StatusCode/100 != 2 || body != tc.body {
					t.Fatalf("request %d: status %d body %q, want 2xx %q", i, resp.StatusCode, body, tc.body)
				}
			}
			if n := srv.connectionCount(); n != tc.wantConnections {
				t.Errorf("3 requests used %d connections, want %d", n, tc.wantConnections)
			}
		})
	}
}

// A body closed before its end leaves unread bytes on the connection,
// here still on their way: the connection must not serve another request.
func TestTransportClosesConnectionOfUnfinishedBody(t *testing.T) {
	srv := listenRaw(t, func(w io.Writer) error {
		if _, err := io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		_, err := io.WriteString(w, "0123456789")
		return err
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, srv.url, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, body, err := get(t, tr, context.Background(), srv.url); err != nil || body != "0123456789" {
		t.Fatalf("the request after an unfinished body got %q, %v", body, err)
	}
	if n := srv.connectionCount(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestTransportIdleConnectionReuseRules(t *testing.T) {
	srv := serveRaw(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	other := serveRaw(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	tr := &Transport{IdleConnTimeout: 50 * time.Millisecond}
	defer tr.CloseIdleConnections()
	mustGet := func(url string) {
		t.Helper()
		if _, _, err := get(t, tr, context.Background(), url); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(srv.url)
	mustGet(other.url)
	mustGet(srv.url)
	if a, b := srv.connectionCount(), other.connectionCount(); a != 2 || b != 1 {
		t.Fatalf("alternating hosts used %d and %d connections, want 2 and 1: a connection serves only its host", a, b)
	}
	time.Sleep(100 * time.Millisecond)
	mustGet(srv.url)
	if n := srv.connectionCount(); n != 3 {
		t.Errorf("after the idle timeout %d connections, want a third", n)
	}
	tr.CloseIdleConnections()
	mustGet(srv.url)
	if n := srv.connectionCount(); n != 4 {
		t.Errorf("after CloseIdleConnections %d connections, want a fourth", n)
	}
}

func TestTransportContextBoundsExchange(t *testing.T) {
	// The server accepts and reads but never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(io.Discard, c)
	}()
	tr := &Transport{}
	url := "http://" + l.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := get(t, tr, ctx, url); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline exceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the request took %v past its 100ms deadline", d)
	}

	// Cancellation must interrupt the read well before this deadline.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	ctx, cancel = context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	if _, _, err := get(t, tr, ctx, url); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want cancellation", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the request took %v to notice its cancellation after 100ms", d)
	}
}

func TestTransportRejectsWhatItDoesNotDo(t *testing.T) {
	tr := &Transport{}
	cases := []struct {
		name, url string
		body      io.Reader
		want      string
	}{
		{"scheme", "ftp://127.0.0.1:1/", nil, "scheme"},
		{"body", "http://127.0.0.1:1/", strings.NewReader("x"), "body"},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(http.MethodPost, tc.url, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error about the %s", tc.name, err, tc.want)
		}
	}
}

func TestTransportLimitsResponseHeaders(t *testing.T) {
	srv := serveRaw(t, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 2000)+"\r\nContent-Length: 0\r\n\r\n")
	tr := &Transport{MaxResponseHeaderBytes: 1000}
	if _, _, err := get(t, tr, context.Background(), srv.url); err == nil || !strings.Contains(err.Error(), "exceeded 1000 bytes") {
		t.Fatalf("got %v, want the header limit named", err)
	}
	tr = &Transport{MaxResponseHeaderBytes: 4000}
	defer tr.CloseIdleConnections()
	if _, _, err := get(t, tr, context.Background(), srv.url); err != nil {
		t.Fatalf("a head within the limit failed: %v", err)
	}
}

// The transport keeps the bytes of the last request; a request changed in
// place, as a template's header or URL could be, must still go out as it
// is now.
func TestTransportSendsChangedRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path+" "+r.Header.Get("X-Probe"))
	}))
	defer srv.Close()
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(want string) {
		t.Helper()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Fatalf("the server saw %q, want %q", body, want)
		}
	}
	req.Header.Set("X-Probe", "one")
	send("/a one")
	send("/a one")
	req.Header.Set("X-Probe", "two")
	send("/a two")
	req.URL.Path = "/b"
	send("/b two")
}

// TestTransportDoesNotReadAnUnaskedAnswer: a server that writes a 408 on an
// idle keep-alive connection before closing it (as some servers and load
// balancers do) must not have that 408 taken for the next probe's answer.
func TestTransportDoesNotReadAnUnaskedAnswer(t *testing.T) {
	srv := listenRaw(t, func(w io.Writer) error {
		if _, err := io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		return errors.New("closed after the 408")
	})
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for i := range 3 {
		resp, _, err := get(t, tr, context.Background(), srv.url+"/healthz")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200 (the unasked 408 was read as the answer)", i, resp.StatusCode)
		}
		time.Sleep(60 * time.Millisecond)
	}
}

// TestTransportBodyIsAPlainReaderAndCloser: reading past the end returns
// EOF at once, and closing an old response again leaves the connection's
// next response alone.
func TestTransportBodyIsAPlainReaderAndCloser(t *testing.T) {
	srv := serveRaw(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/healthz", nil)
	first, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(first.Body); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if n, err := first.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF || time.Since(start) > time.Second {
		t.Errorf("read after the end: %d, %v after %s; want 0, EOF at once", n, err, time.Since(start))
	}
	first.Body.Close()

	second, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	first.Body.Close()
	body, err := io.ReadAll(second.Body)
	second.Body.Close()
	if err != nil || string(body) != "ok" {
		t.Errorf("second response after closing the first twice: %q, %v; want ok", body, err)
	}
}

// TestTransportReusesConnectionAfterItsDeadlinePassed: probes carry a
// deadline, and the next probe comes after it has passed; the idle
// connection is still reused.
func TestTransportReusesConnectionAfterItsDeadlinePassed(t *testing.T) {
	srv := serveRaw(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		_, _, err := get(t, tr, ctx, srv.url+"/healthz")
		cancel()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := srv.connectionCount(); n != 1 {
		t.Errorf("3 probes with passed deadlines used %d connections, want 1", n)
	}
}
