package fanout

import (
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/probegate/probegate/collector/fanout/internal/membudget"
	"github.com/probegate/probegate/internal/proxyheader"
)

// This file holds what crosses between the client, probegate and a backend
// in a fan-out round: bodies read under their limits, and the headers that
// are forwarded, dropped or added.

// errGzipBody is a body that claims to be gzip but is not.
var errGzipBody = errors.New("body is not valid gzip")

// readDecoded reads a 2xx body for the merge. probegate does not ask for
// compression (the transport's compression is off, and the client's
// Accept-Encoding is not forwarded), but a backend may gzip anyway: such a
// body is decoded, and the limit applies to the decoded bytes, so a gzip
// bomb is cut off like any other oversized answer.
func readDecoded(resp *http.Response, limit int64, mem *membudget.Round) ([]byte, error) {
	if resp.Uncompressed || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return mem.Read(resp.Body, resp.ContentLength, limit)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errGzipBody, err)
	}
	return mem.Read(zr, -1, limit)
}

// readRequestBody buffers a POST body of at most limit bytes (0: no limit)
// so that it can be sent to every backend. The buffer comes from the
// round's budget like the answers'.
func readRequestBody(w http.ResponseWriter, r *http.Request, limit int64, mem *membudget.Round) ([]byte, error) {
	body := r.Body
	if limit > 0 {
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	data, err := mem.Read(body, r.ContentLength, 0)
	if errors.Is(err, membudget.ErrBudget) {
		return nil, err
	}
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
		if len(values) == 0 || proxyheader.IsHopByHop(name) || proxyheader.IsForProbegate(name) {
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
