package status

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/config"
)

// TestAPIAnswersAsPrometheusDoes: the JSON introspection endpoints answer
// GET with {"status":"success","data":...}, HEAD with the headers alone,
// and any other method with 405 in the same shape.
func TestAPIAnswersAsPrometheusDoes(t *testing.T) {
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "a", URL: "http://user:hunter2@127.0.0.1:1"}}
	for name, h := range map[string]http.Handler{
		"config":    ConfigHandler(func() *config.Config { return cfg }),
		"discovery": DiscoveryAPIHandler(func(string) discovery.View { return discovery.View{} }),
	} {
		get := httptest.NewRecorder()
		h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/", nil))
		var answer struct {
			Status string          `json:"status"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(get.Body.Bytes(), &answer); err != nil || get.Code != http.StatusOK || answer.Status != "success" || len(answer.Data) == 0 {
			t.Errorf("%s: GET %d %s (%v)", name, get.Code, get.Body, err)
		}
		if got := get.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("%s: Content-Type %q", name, got)
		}
		head := httptest.NewRecorder()
		h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, "/", nil))
		if head.Code != http.StatusOK || head.Body.Len() != 0 {
			t.Errorf("%s: HEAD %d with %d bytes", name, head.Code, head.Body.Len())
		}
		post := httptest.NewRecorder()
		h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, "/", nil))
		if post.Code != http.StatusMethodNotAllowed || post.Header().Get("Allow") != "GET, HEAD" || !strings.Contains(post.Body.String(), `"errorType":"bad_data"`) {
			t.Errorf("%s: POST %d, Allow %q, %s", name, post.Code, post.Header().Get("Allow"), post.Body)
		}
	}
	get := httptest.NewRecorder()
	ConfigHandler(func() *config.Config { return cfg }).ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/", nil))
	if body := get.Body.String(); strings.Contains(body, "hunter2") || !strings.Contains(body, "127.0.0.1:1") {
		t.Errorf("the running configuration shows a password or not the backend: %s", body)
	}
}
