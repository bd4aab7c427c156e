package maintenance

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/pool"
)

// sameEntries reports whether two lists of entries are the same, times
// compared as instants (a decoded time's location is a new value each
// time).
func sameEntries(a, b []pool.Maintenance) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Backend != y.Backend || x.Reason != y.Reason || x.By != y.By || !x.Since.Equal(y.Since) || !x.Until.Equal(y.Until) {
			return false
		}
	}
	return true
}

// FuzzStoreReader: the reader of both stores never panics on any input,
// and whatever it accepts is saved as a state it reads back the same: an
// entry that can be read can always be written again.
func FuzzStoreReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := DecodeState(data)
		if err != nil {
			return
		}
		again, err := encodeState(entries)
		if err != nil {
			t.Fatalf("accepted %q but cannot save it again: %v", data, err)
		}
		back, err := DecodeState(again)
		if err != nil {
			t.Fatalf("accepted %q but cannot read its saved form %q: %v", data, again, err)
		}
		if !sameEntries(entries, back) {
			t.Fatalf("read %+v from %q, %+v from its saved form", entries, data, back)
		}
	})
}

// FuzzMaintenanceRequest: the request parser never panics, and a request
// it accepts yields an entry with a reason, and with a ttl an Until after
// now by exactly the ttl, never after now+maxTTL (maxTTL 0: no limit).
func FuzzMaintenanceRequest(f *testing.F) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, maxTTLSeconds int64) {
		req, err := ParseRequest(bytes.NewReader(body))
		if err != nil {
			return
		}
		maxTTL := time.Duration(0)
		if maxTTLSeconds > 0 {
			maxTTL = time.Duration(min(maxTTLSeconds, math.MaxInt64/int64(time.Second))) * time.Second
		}
		e, err := req.Entry(now, maxTTL)
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
