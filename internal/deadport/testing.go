package deadport

import "testing"

// URL is a loopback URL that refuses connections for the rest of the test.
// Its port is held, so no server another test starts can take it and
// answer in the dead backend's place.
func URL(t testing.TB) string {
	t.Helper()
	url, release, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	return url
}
