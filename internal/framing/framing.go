// Package framing refuses requests whose body framing is ambiguous: a
// head with both Content-Length and Transfer-Encoding. A front proxy
// that frames such a request by its Content-Length, while net/http frames
// it by its Transfer-Encoding, leaves bytes of its body to be read as a
// second request the client never showed the proxy (request smuggling).
// RFC 9112, section 6.1, lets a server reject such a request and requires
// it to close the connection after answering it.
//
// net/http accepts such a request and deletes its Content-Length before a
// handler sees it, so the head is watched as the server reads it: a
// Listener's connections scan the request heads they carry and end their
// stream right after a head with both fields, and Handler answers 400 and
// closes the connection when the head of the request it serves had both.
// The scan follows heads and Content-Length bodies only: once it meets a
// head it cannot follow past (one with a Transfer-Encoding, or a
// Content-Length it cannot read), Handler closes the connection after the
// request it serves, so no head is read unwatched. A handler in front of
// Handler that answers such a request itself (exporter-toolkit's basic
// auth, with 401) keeps the connection, and the heads after it are not
// watched.
//
// Over TLS the listener sees encrypted bytes, and net/http decrypts them
// where nothing can watch, so there is no scan: a request with both fields
// is framed by its Transfer-Encoding and served, but its connection is
// closed after it, as is that of any request with a Transfer-Encoding and
// of any HTTP/1.0 request (net/http ignores an HTTP/1.0 request's
// Transfer-Encoding and drops the field, so it cannot be seen).
package framing

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync/atomic"
)

// Listener wraps l so that every connection it accepts watches its
// request heads. Serve its connections with Handler, and with ConnContext
// as the server's ConnContext.
func Listener(l net.Listener) net.Listener {
	return &listener{Listener: l}
}

type listener struct{ net.Listener }

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c}, nil
}

// conn is a connection whose reads go through a head scanner.
type conn struct {
	net.Conn
	scan scanner
	// ambiguous is set once a head with both framing fields was read;
	// the handler of that request reads it.
	ambiguous atomic.Bool
	// unwatched is set once the scan has stopped, or when the connection
	// carries TLS and is never scanned.
	unwatched atomic.Bool
	// encrypted is set when the connection carries TLS.
	encrypted atomic.Bool
}

func (c *conn) Read(p []byte) (int, error) {
	if c.ambiguous.Load() {
		// Nothing after a head with both framing fields reaches the
		// server, whoever answers that request: a handler in front of
		// Handler (basic auth) may answer it and keep the connection.
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	if n > 0 && !c.unwatched.Load() {
		if end := c.scan.feed(p[:n]); end >= 0 {
			c.ambiguous.Store(true)
			n, err = end, nil
		}
		if c.scan.stopped() {
			c.unwatched.Store(true)
		}
	}
	return n, err
}

type connKey struct{}

// ConnContext is an http.Server's ConnContext that makes the connection
// known to Handler. The server calls it before it reads anything, with
// the *tls.Conn over a Listener's connection when it serves TLS.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	tc, encrypted := c.(*tls.Conn)
	if encrypted {
		c = tc.NetConn()
	}
	fc, ok := c.(*conn)
	if !ok {
		return ctx
	}
	if encrypted {
		fc.encrypted.Store(true)
		fc.unwatched.Store(true)
	}
	return context.WithValue(ctx, connKey{}, fc)
}

// Handler serves next, except that a request whose head had both
// Content-Length and Transfer-Encoding is answered 400 without reaching
// next, and a request after which a head could be read unwatched closes
// its connection after its answer: one with a Transfer-Encoding, one on a
// connection whose scan has stopped, and an HTTP/1.0 one over TLS.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, known := r.Context().Value(connKey{}).(*conn)
		if len(r.TransferEncoding) > 0 || known && c.unwatched.Load() && (!c.encrypted.Load() || !r.ProtoAtLeast(1, 1)) {
			w.Header().Set("Connection", "close")
		}
		if known && len(r.TransferEncoding) > 0 && c.ambiguous.Load() {
			http.Error(w, "400 Bad Request: the request has both Content-Length and Transfer-Encoding, so its body's end is ambiguous", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
