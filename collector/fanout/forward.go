package fanout

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/probegate/probegate/config"
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
// client headers fanout.forward_headers names, except any the client's
// Connection header declares hop-by-hop, and X-Forwarded-For, -Host and
// -Proto set afresh from this request (what httputil.ProxyRequest's
// SetXForwarded does), so that a client cannot forge them. Nothing else of
// the client's goes on: no cookie, no Forwarded or X-Real-IP, no
// credential unless listed. Via is the client's with this replica's hop
// appended (loop.go). size is the forwarded client headers' size, the
// client's Via included, counted as on the wire.
func forwardedHeader(r *http.Request, allowed []string, replica string) (header http.Header, size int) {
	header = make(http.Header, len(allowed)+4)
	for _, name := range allowed {
		name = textproto.CanonicalMIMEHeaderKey(name)
		values := r.Header[name]
		if len(values) == 0 || config.IsHopByHop(name) {
			continue
		}
		header[name] = values
		for _, v := range values {
			size += len(name) + len(": \r\n") + len(v)
		}
	}
	dropConnectionListed(header, r.Header)
	via := r.Header.Values("Via")
	for _, v := range via {
		size += len("Via: \r\n") + len(v)
	}
	header.Set("Via", forwardedVia(via, replica))
	out := &http.Request{Header: header}
	(&httputil.ProxyRequest{In: r, Out: out}).SetXForwarded()
	return header, size
}

// relayedHeaders are the only headers of a backend's 4xx that reach the
// client when it is relayed: what the client needs to read the body and
// to retry. The body is relayed as the backend sent it, so a compressed
// one keeps its Content-Encoding; without it the client would read gzip
// as text. Never Set-Cookie, Server, Location, WWW-Authenticate or
// anything else of the backend's.
var relayedHeaders = [...]string{"Content-Type", "Content-Encoding", "Content-Language", "Retry-After"}

// copyRelayedHeader copies the relayed headers of a backend's answer.
func copyRelayedHeader(dst, src http.Header) {
	for _, name := range relayedHeaders {
		if values := src[name]; len(values) > 0 {
			dst[name] = values
		}
	}
}

// withoutAuthorization is header without the client's Authorization, for
// a backend that authenticates with probegate's own credentials. header is
// shared by every backend's request, so it is copied, not changed.
func withoutAuthorization(header http.Header) http.Header {
	if _, ok := header["Authorization"]; !ok {
		return header
	}
	h := header.Clone()
	delete(h, "Authorization")
	return h
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
