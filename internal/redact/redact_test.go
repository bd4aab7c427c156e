package redact

import "testing"

// TestUserinfo: the password of a URL or a bare authority is
// replaced wherever it stands in the text, as url.URL.Redacted replaces
// it; text without one is unchanged.
func TestUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"alice:hunter2@127.0.0.1:28001":                    "alice:xxxxx@127.0.0.1:28001",
		"http://alice:hunter2@h:1/p?q=a@b":                 "http://alice:xxxxx@h:1/p?q=a@b",
		"https://alice:p@ss:w@rd@h/x":                      "https://alice:xxxxx@h/x",
		`{__address__="alice:hunter2@h:1", env="a b"}`:     `{__address__="alice:xxxxx@h:1", env="a b"}`,
		"fetch http://u:pw@a/ and u2:pw2@[::1]:80 too":     "fetch http://u:xxxxx@a/ and u2:xxxxx@[::1]:80 too",
		`__address__ "alice:hunter2@h:1" is not host:port`: `__address__ "alice:xxxxx@h:1" is not host:port`,
		"alice@example.com":                                "alice@example.com",
		"http://token@h/":                                  "http://token@h/",
		"h:1/a@b":                                          "h:1/a@b",
		"no credentials here":                              "no credentials here",
		"":                                                 "",
	} {
		if got := Userinfo(in); got != want {
			t.Errorf("Userinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestURL: a password is hidden also in a URL that does not parse.
func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://admin:hunter2@127.0.0.1:8081/x": "http://admin:xxxxx@127.0.0.1:8081/x",
		"http://127.0.0.1:8081":                 "http://127.0.0.1:8081",
		"http://admin:hunter2@127.0.0.1:80x81/": "http://xxxxx@127.0.0.1:80x81/",
		"http://a:b@c@host:bad":                 "http://xxxxx@host:bad",
		"no scheme at all":                      "no scheme at all",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
