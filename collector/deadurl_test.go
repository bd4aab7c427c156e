package collector

import (
	"testing"

	"github.com/probegate/probegate/internal/deadport"
)

// deadURL is a loopback URL that refuses connections for the rest of the
// test. Its port is held, so no server another test starts can take it and
// answer in the dead backend's place.
func deadURL(t *testing.T) string {
	t.Helper()
	url, release, err := deadport.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	return url
}
