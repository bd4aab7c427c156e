package syncbuffer

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWritesAllLand: writes from many goroutines, read while
// they go on, all end up in the buffer (run under -race).
func TestConcurrentWritesAllLand(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("%d bytes written, want 800", len(got))
	}
}
