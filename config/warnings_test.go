package config

import (
	"strings"
	"testing"
)

func TestWarningsNameABackendThatProbesTheSameAsAnother(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"same url and probe", "backends:\n  - name: a\n    url: http://127.0.0.1:8081\n  - name: b\n    url: http://127.0.0.1:8081\n",
			[]string{"probegate.yml:5: backends[1].url: backend \"b\" has the same url and health probe as backend \"a\" (backends[0])"}},
		{"the same server spelt otherwise", "backends:\n  - name: a\n    url: HTTP://Pdb-1.example:80/\n  - name: b\n    url: http://pdb-1.example\n",
			[]string{"probegate.yml:5: backends[1].url: backend \"b\" has the same url and health probe as backend \"a\" (backends[0])"}},
		{"three of one", "backends:\n  - {name: a, url: http://127.0.0.1:1}\n  - {name: b, url: http://127.0.0.1:1}\n  - {name: c, url: http://127.0.0.1:1}\n",
			[]string{"probegate.yml:3: backends[1].url: backend \"b\" has the same url and health probe as backend \"a\" (backends[0])",
				"probegate.yml:4: backends[2].url: backend \"c\" has the same url and health probe as backend \"a\" (backends[0])"}},
		{"another probe path", "backends:\n  - name: a\n    url: http://127.0.0.1:8081\n  - name: b\n    url: http://127.0.0.1:8081\n    health_probe: {path: /other}\n", nil},
		{"another port", "backends:\n  - name: a\n    url: http://127.0.0.1:8081\n  - name: b\n    url: http://127.0.0.1:8082\n", nil},
		{"another path", "backends:\n  - name: a\n    url: http://127.0.0.1:8081/one\n  - name: b\n    url: http://127.0.0.1:8081/two\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parse([]byte(tc.yaml), "probegate.yml")
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Warnings()
			if len(got) != len(tc.want) {
				t.Fatalf("%d warnings %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range got {
				if !strings.HasPrefix(w.String(), tc.want[i]) {
					t.Errorf("warning %q, want it to start with %q", w, tc.want[i])
				}
			}
		})
	}
}
