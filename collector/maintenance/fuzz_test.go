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
	now := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, maxTTLSeconds int64) {
		req, err := parseRequest(bytes.NewReader(body))
		if err != nil {
			return
		}
		maxTTL := time.Duration(0)
		if maxTTLSeconds > 0 {
			maxTTL = time.Duration(min(maxTTLSeconds, math.MaxInt64/int64(time.Second))) * time.Second
		}
		e, err := req.entry(now, maxTTL)
		if err != nil {
			return
		}
		if e.Reason == "" || len(e.Reason) > maxReasonLength {
			t.Fatalf("accepted %q with reason %q", body, e.Reason)
		}
		if req.TTL == "" {
			if !e.Until.IsZero() {
				t.Fatalf("no ttl in %q, but until %v", body, e.Until)
			}
			return
		}
		ttl, err := model.ParseDuration(req.TTL)
		if err != nil {
			t.Fatalf("accepted ttl %q that does not parse: %v", req.TTL, err)
		}
		if !e.Until.After(now) || e.Until.Sub(now) != time.Duration(ttl) {
			t.Fatalf("ttl %q at %v gave until %v", req.TTL, now, e.Until)
		}
		if maxTTL > 0 && e.Until.After(now.Add(maxTTL)) {
			t.Fatalf("ttl %q gave until %v, after now+max_ttl %v", req.TTL, e.Until, now.Add(maxTTL))
		}
	})
}
