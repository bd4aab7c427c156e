package fanout

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// This file holds what crosses between the client, probegate and a backend
// in a fan-out round: bodies read under their limits, and the headers that
// are forwarded, dropped or added.

// errResponseTooLarge is a backend answer over fanout.max_response_bytes.
var errResponseTooLarge = errors.New("response body exceeds fanout.max_response_bytes")

// errGzipBody is a body that claims to be gzip but is not.
var errGzipBody = errors.New("body is not valid gzip")

// readDecoded reads a 2xx body for the merge. probegate does not ask for
// compression (the transport's compression is off, and the client's
// Accept-Encoding is not forwarded), but a backend may gzip anyway: such a
// body is decoded, and the limit applies to the decoded bytes, so a gzip
// bomb is cut off like any other oversized answer.
func readDecoded(resp *http.Response, limit int64) ([]byte, error) {
	if resp.Uncompressed || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return readLimited(resp.Body, resp.ContentLength, limit)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errGzipBody, err)
	}
	return readLimited(zr, -1, limit)
}

// readLimited reads a body of at most limit bytes (0: no limit), whose
// length is contentLength or -1 when unknown. It stops reading at the
// limit, so a backend streaming without end costs limit bytes of memory,
// not what it sends.
func readLimited(body io.Reader, contentLength, limit int64) ([]byte, error) {
	if limit > 0 && contentLength > limit {
		return nil, errResponseTooLarge
	}
	if limit > 0 {
		body = io.LimitReader(body, limit+1)
	}
	// With the length known, one allocation with room for the final read
	// that sees the end of the body.
	size := 512
	if contentLength >= 0 {
		size = int(contentLength) + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if limit > 0 && int64(len(buf)) > limit {
			return nil, errResponseTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readRequestBody buffers a POST body of at most limit bytes (0: no limit)
// so that it can be sent to every backend.
func readRequestBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := r.Body
	if limit > 0 {
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("request body exceeds fanout.max_request_bytes (%d bytes): %w", limit, err)
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return data, nil
}

// forwardedHeader is the header every backend's request carries: the
// client's, without the hop-by-hop headers, with the client's address
// appended to X-Forwarded-For, and without what notForwarded names:
// the merge needs bodies it can read, and the client gets the merged body,
// not any backend's encoding.
func forwardedHeader(r *http.Request) http.Header {
	h := make(http.Header, len(r.Header)+1)
	for name, values := range r.Header {
		if !isHopByHop(name) && !notForwarded(name) {
			h[name] = values
		}
	}
	dropConnectionListed(h, r.Header)
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		h.Set("X-Forwarded-For", ip)
	}
	return h
}

// notForwarded reports whether a client header that is not hop-by-hop
// still must not reach the backends. The body is buffered whole, so its
// length is the backend request's own and there is nothing to wait for a
// 100 Continue about; Accept-Encoding is probegate's to negotiate.
func notForwarded(name string) bool {
	return name == "Accept-Encoding" || name == "Content-Length" || name == "Expect"
}

// copyEndToEndHeader copies a backend's response header to the client's,
// without hop-by-hop headers and the length, which the relay sets.
func copyEndToEndHeader(dst, src http.Header) {
	for name, values := range src {
		if !isHopByHop(name) && name != "Content-Length" {
			dst[name] = values
		}
	}
	dropConnectionListed(dst, src)
}

// isHopByHop reports whether a canonical header name describes one
// connection rather than the message (RFC 9110 section 7.6.1), so that a
// proxy must not forward it.
func isHopByHop(name string) bool {
	switch name {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// dropConnectionListed removes from dst the headers that src's Connection
// header names as hop-by-hop.
func dropConnectionListed(dst, src http.Header) {
	for _, value := range src.Values("Connection") {
		for token := range strings.SplitSeq(value, ",") {
			if token = strings.TrimSpace(token); token != "" {
				delete(dst, textproto.CanonicalMIMEHeaderKey(token))
			}
		}
	}
}

// backendsHeader is the X-Backends value: contributed/configured.
func backendsHeader(contributed, configured int) string {
	return strconv.Itoa(contributed) + "/" + strconv.Itoa(configured)
}
