package maintenance

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// FuzzMaintenanceRequest: the request parser never panics, and a request
// it accepts yields an entry with a reason, and with a ttl an Until after
// now by exactly the ttl, never after now+maxTTL (maxTTL 0: no limit).
func FuzzMaintenanceRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, maxTTLSeconds int64) {
		req, err := parseRequest(bytes.NewReader(body))
		if err != nil {
			return
		}
		maxTTL := time.Duration(0)
		if maxTTLSeconds > 0 {
			maxTTL = time.Duration(min(maxTTLSeconds, math.MaxInt64/int64(time.Second))) * time.Second
		}
		e, ttl, err := req.entry(maxTTL)
		if err != nil {
			return
		}
		if e.Reason == "" || len(e.Reason) > maxReasonLength {
			t.Fatalf("accepted %q with reason %q", body, e.Reason)
		}
		if req.TTL == "" {
			if ttl != 0 {
				t.Fatalf("no ttl in %q, but ttl %v", body, ttl)
			}
			return
		}
		want, err := model.ParseDuration(req.TTL)
		if err != nil {
			t.Fatalf("accepted ttl %q that does not parse: %v", req.TTL, err)
		}
		if ttl <= 0 || ttl != time.Duration(want) {
			t.Fatalf("ttl %q gave %v", req.TTL, ttl)
		}
		if maxTTL > 0 && ttl > maxTTL {
			t.Fatalf("ttl %q gave %v, more than max_ttl %v", req.TTL, ttl, maxTTL)
		}
	})
}
