package pool

import (
	"testing"
	"unsafe"
)

// maxBackendBytes is the allocator's size class a Backend fits: every
// backend of a pool holds one, whichever features are on. It was 4 KiB
// while the windows of outlier detection and passive health, the probe
// history's answer slots and its 16-byte records, and a copy of the
// client settings were inline.
const maxBackendBytes = 1792

// TestBackendFitsItsSizeClass pins what a backend costs before anything
// it allocates as it is used.
func TestBackendFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Backend{}); size > maxBackendBytes {
		t.Errorf("a Backend is %d bytes, want at most %d", size, maxBackendBytes)
	}
}

// TestBackendsShareTheirClientSettings: backends with the same client
// settings share one copy of them, as they share the client; a backend
// with settings of its own has its own.
func TestBackendsShareTheirClientSettings(t *testing.T) {
	targets := numberedTargets(3)
	targets[2].ClientConfig.FollowRedirects = !targets[2].ClientConfig.FollowRedirects
	p := newPool(t, targets, Settings{})
	bs := p.Backends()
	if bs[0].clientConfig != bs[1].clientConfig || bs[0].Client != bs[1].Client {
		t.Error("two backends with the same client settings hold a copy each")
	}
	if bs[2].clientConfig == bs[0].clientConfig || bs[2].ClientConfig().FollowRedirects == bs[0].ClientConfig().FollowRedirects {
		t.Error("a backend with client settings of its own shares another's")
	}
}
