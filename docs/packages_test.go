package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/probegate/probegate/internal/markdown"
)

// packagesBlock is the info string that marks design.md's package list.
const packagesBlock = "text packages"

// modulePackages is every package of the module, by its folder relative
// to the repository's root ("." for the root), as `go list ./...` finds
// them.
func modulePackages(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for dir := range strings.FieldsSeq(goList(t, "-f", "{{.Dir}}", "./...")) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("go list gives %s, outside %s", dir, root)
		}
		dirs = append(dirs, filepath.ToSlash(rel))
	}
	if len(dirs) == 0 {
		t.Fatal("go list ./... finds no package")
	}
	return dirs
}

// goList runs `go list` with args at the repository's root and gives
// its output.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// designPackages reads the package list of design.md: the block fenced
// as packagesBlock, whose lines that do not start with a space each name
// one package by its folder, first on the line. It fails on a package
// named twice.
func designPackages(t *testing.T, design string) map[string]int {
	t.Helper()
	var list *markdown.CodeBlock
	for _, b := range markdown.CodeBlocks(design) {
		if b.Info == packagesBlock {
			if list != nil {
				t.Fatalf("design.md has two blocks fenced %q, at lines %d and %d", packagesBlock, list.Line, b.Line)
			}
			list = &b
		}
	}
	if list == nil {
		t.Fatalf("design.md has no block fenced %q: the package list", packagesBlock)
	}
	listed := map[string]int{}
	for i, line := range strings.Split(strings.TrimSuffix(list.Text, "\n"), "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		dir := strings.TrimSuffix(strings.Fields(line)[0], "/")
		at := list.Line + 1 + i
		if first, ok := listed[dir]; ok {
			t.Errorf("design.md:%d lists %s again (first at line %d)", at, dir, first)
		}
		listed[dir] = at
	}
	return listed
}

// TestDesignListsEveryPackage: the package list of docs/design.md names
// every package `go list ./...` finds, and nothing else, so that a package
// added, moved or removed changes the list in the same commit.
func TestDesignListsEveryPackage(t *testing.T) {
	data, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := designPackages(t, string(data))
	found := modulePackages(t)
	for _, dir := range found {
		if _, ok := listed[dir]; !ok {
			t.Errorf("design.md's package list lacks %s, which go list finds", dir)
		}
	}
	for dir, line := range listed {
		if !slices.Contains(found, dir) {
			t.Errorf("design.md:%d lists %s, which is no package of the module", line, dir)
		}
	}
}

// layoutPaths reads README.md's layout table (the one headed "path" and
// "what") and gives every path it names, relative to the repository's
// root, with the table's line. In the path column the first code span
// is a path from the root and a later one without a slash inside is a
// sibling of the first (`collector/budget/`, `history/`); in the what
// column a span with a slash is a path below the row's first.
func layoutPaths(t *testing.T, readme string) map[string]int {
	t.Helper()
	var layout *markdown.Table
	for _, table := range markdown.Tables(readme) {
		if slices.Equal(table.Header, []string{"path", "what"}) {
			layout = &table
		}
	}
	if layout == nil {
		t.Fatal(`README.md has no table headed "path" and "what": the layout`)
	}
	paths := map[string]int{}
	for _, row := range layout.Rows {
		spans := markdown.CodeSpans(row[0])
		if len(spans) == 0 {
			t.Errorf("README.md:%d: a layout row names no path: %q", layout.Line, row[0])
			continue
		}
		first := path.Clean(spans[0])
		paths[first] = layout.Line
		for _, s := range spans[1:] {
			if strings.Contains(strings.TrimSuffix(s, "/"), "/") {
				paths[path.Clean(s)] = layout.Line
			} else {
				paths[path.Join(path.Dir(first), s)] = layout.Line
			}
		}
		for _, s := range markdown.CodeSpans(row[1]) {
			if strings.Contains(s, "/") && !strings.HasPrefix(s, "/") && !strings.ContainsAny(s, " <") {
				paths[path.Join(first, s)] = layout.Line
			}
		}
	}
	return paths
}

// TestReadmeLayoutMatchesTheFolders: every path README.md's layout table
// names exists, and every package of collector/ outside an internal/
// folder has its folder named there, so that a package moved or added
// under collector/ changes the table in the same commit.
func TestReadmeLayoutMatchesTheFolders(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	paths := layoutPaths(t, string(data))
	for p, line := range paths {
		if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
			t.Errorf("README.md's layout table at line %d names %s, which does not exist", line, p)
		}
	}
	for _, dir := range modulePackages(t) {
		if !strings.HasPrefix(dir, "collector/") || slices.Contains(strings.Split(dir, "/"), "internal") {
			continue
		}
		if _, ok := paths[dir]; !ok {
			t.Errorf("README.md's layout table does not name %s/", dir)
		}
	}
}

// TestNoPackageImportsAnAncestor: no package of the module, its tests
// included, imports the package of a folder above its own. A parent that
// its children import is both a library below them and whatever else it
// does: it cannot be the place that wires or describes them, and its own
// work drags every child's users into depending on it. The module's root
// is the exception: it holds what belongs to the repository as a whole
// (its release version), which any package may read.
func TestNoPackageImportsAnAncestor(t *testing.T) {
	module := strings.TrimSpace(goList(t, "-m"))
	imports := goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	for line := range strings.Lines(imports) {
		fields := strings.Fields(line)
		pkg := fields[0]
		for _, imported := range fields[1:] {
			if imported != module && strings.HasPrefix(pkg, imported+"/") {
				t.Errorf("%s imports %s, the package of a folder above it", pkg, imported)
			}
		}
	}
}
