package jsonanswer

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestWrite: an answer is one line of JSON with its type, length and
// no-store; HEAD gets the same head and no body.
func TestWrite(t *testing.T) {
	const want = `{"error":"no backend named \"x\""}` + "\n"
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		WriteError(rec, httptest.NewRequest(method, "/", nil), http.StatusNotFound, `no backend named "x"`)
		h := rec.Header()
		if rec.Code != http.StatusNotFound || h.Get("Content-Type") != "application/json" ||
			h.Get("Content-Length") != strconv.Itoa(len(want)) || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d with headers %v", method, rec.Code, h)
		}
		body := want
		if method == http.MethodHead {
			body = ""
		}
		if rec.Body.String() != body {
			t.Errorf("%s: body %q; want %q", method, rec.Body.String(), body)
		}
	}
	rec := httptest.NewRecorder()
	Write(rec, nil, http.StatusOK, []int{1})
	if rec.Body.String() != "[1]\n" {
		t.Errorf("without a request: body %q; want the body", rec.Body.String())
	}
}

// TestWriteRefusesWhatCannotBeEncoded: a value JSON cannot carry is a
// 500 saying so, not a 200 with half a document.
func TestWriteRefusesWhatCannotBeEncoded(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, nil, http.StatusOK, map[string]float64{"ratio": math.Inf(1)})
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Content-Type") == "application/json" {
		t.Errorf("non-finite float: %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
}
