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
// Listener's connections scan the request heads they carry, and Handler
// answers 400 and closes the connection when the head of the request it
// serves had both fields. Any request with a Transfer-Encoding closes its
// connection after its answer, so that the scan never needs to follow a
// chunked body, and a smuggled request is never read over a TLS listener
// either, where the bytes the listener sees are encrypted.
package framing

import (
	"context"
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
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.scan.feed(p[:n]) {
		c.ambiguous.Store(true)
	}
	return n, err
}

type connKey struct{}

// ConnContext is an http.Server's ConnContext that makes the connection
// known to Handler.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*conn); ok {
		return context.WithValue(ctx, connKey{}, fc)
	}
	return ctx
}

// Handler serves next, except that a request with a Transfer-Encoding
// closes its connection after its answer, and one whose head also had a
// Content-Length is answered 400 without reaching next.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if c, ok := r.Context().Value(connKey{}).(*conn); ok && c.ambiguous.Load() {
			http.Error(w, "400 Bad Request: the request has both Content-Length and Transfer-Encoding, so its body's end is ambiguous", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
