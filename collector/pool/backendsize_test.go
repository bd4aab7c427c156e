package pool

import (
	"testing"
	"unsafe"
)

// maxBackendBytes is the allocator's size class a Backend fits: every
// backend of a pool holds one, whichever features are on. It was 4 KiB
// while the windows of outlier detection and passive health, the probe
// history's answer slots and its 16-byte records were inline.
const maxBackendBytes = 2048

// TestBackendFitsItsSizeClass pins what a backend costs before anything
// it allocates as it is used.
func TestBackendFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Backend{}); size > maxBackendBytes {
		t.Errorf("a Backend is %d bytes, want at most %d", size, maxBackendBytes)
	}
}
