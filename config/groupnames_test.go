package config

import (
	"strings"
	"testing"
)

// TestGroupNamesClash: a group may not be named like a backend outside
// it, nor a backend like a group it is not in, whichever comes first; a
// backend named like its own group, and any number of members of one
// group, are fine.
func TestGroupNamesClash(t *testing.T) {
	type backend struct{ name, group string }
	for _, tc := range []struct {
		name     string
		backends []backend
		want     GroupClash // of the last backend; zero for none
	}{
		{"ungrouped, then a group of its name", []backend{{"db", ""}, {"db-a", "db"}}, GroupClash{Name: "db", Other: "db", ByGroup: true}},
		{"a group, then a backend of its name", []backend{{"db-a", "db"}, {"db", ""}}, GroupClash{Name: "db", Other: "db-a"}},
		{"grouped elsewhere, then a group of its name", []backend{{"db", "x"}, {"db-a", "db"}}, GroupClash{Name: "db", Other: "db", ByGroup: true}},
		{"a group, then a backend of its name in another group", []backend{{"db-a", "db"}, {"db", "x"}}, GroupClash{Name: "db", Other: "db-a"}},
		{"a backend named like its own group", []backend{{"db", "db"}, {"db-a", "db"}, {"db-b", "db"}}, GroupClash{}},
		{"a member, then one named like the group", []backend{{"db-a", "db"}, {"db", "db"}}, GroupClash{}},
		{"no groups", []backend{{"a", ""}, {"b", ""}}, GroupClash{}},
		{"distinct groups", []backend{{"a-1", "a"}, {"b-1", "b"}, {"a-2", "a"}}, GroupClash{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var names GroupNames
			last := tc.backends[len(tc.backends)-1]
			for _, b := range tc.backends[:len(tc.backends)-1] {
				names.Add(b.name, b.group)
			}
			got, clash := names.Clash(last.name, last.group)
			if clash != (tc.want != GroupClash{}) || got != tc.want {
				t.Errorf("Clash(%q, %q) = %+v, %v; want %+v", last.name, last.group, got, clash, tc.want)
			}
		})
	}
}

// TestGroupNamedLikeBackendRefused: the pool of the review, a backend db
// beside a group db of two others, is refused once per member of the
// group, each problem naming both backends and where they are.
func TestGroupNamedLikeBackendRefused(t *testing.T) {
	data := "backends:\n" +
		"  - {name: db, url: http://127.0.0.1:8081}\n" +
		"  - {name: db-a, url: http://127.0.0.1:8082, group: db}\n" +
		"  - {name: db-b, url: http://127.0.0.1:8083, group: db}\n"
	_, err := parse([]byte(data), "probegate.yml")
	clash := `group "db" is also the name of backends[0] (backends[0].name at line 2), which is not in it; ` +
		`a client could not tell the group from the backend: rename one of them, or put backends[0] in the group`
	want := strings.Join([]string{
		"probegate.yml:3: backends[1].group: " + clash,
		"probegate.yml:4: backends[2].group: " + clash,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	fine := "backends:\n" +
		"  - {name: db, url: http://127.0.0.1:8081, group: db}\n" +
		"  - {name: db-a, url: http://127.0.0.1:8082, group: db}\n" +
		"  - {name: other, url: http://127.0.0.1:8083}\n"
	if _, err := parse([]byte(fine), "probegate.yml"); err != nil {
		t.Errorf("a backend named like its own group: %v", err)
	}
}
