package exporter

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/markdown"
)

// jsonFields are the JSON names of the fields of t and of every struct it
// holds, however deep.
func jsonFields(t reflect.Type, into map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			if !into[name] {
				into[name] = true
				jsonFields(f.Type, into)
			}
		}
	}
}

// TestReadmeHealthzFieldsAreServed: every field the README's endpoint
// table gives for /healthz is one /healthz serves, and every field of a
// backend, the pool, the budget, the store, a vantage point and a
// dissenter is given.
func TestReadmeHealthzFieldsAreServed(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cell string
	for _, table := range markdown.Tables(string(data)) {
		for _, row := range table.Rows {
			if len(row) > 1 && row[0] == "`/healthz`" {
				cell = row[1]
			}
		}
	}
	if cell == "" {
		t.Fatal("README.md's endpoint table has no /healthz row")
	}
	served := map[string]bool{}
	jsonFields(reflect.TypeFor[healthzReport](), served)
	named := map[string]bool{}
	word := regexp.MustCompile(`[a-z_]+`)
	for _, span := range markdown.CodeSpans(cell) {
		for _, w := range word.FindAllString(span, -1) {
			named[w] = true
			if !served[w] {
				t.Errorf("README.md gives /healthz a field %s, which it does not serve", w)
			}
		}
	}
	for _, group := range []reflect.Type{reflect.TypeFor[healthzReport](), reflect.TypeFor[healthzBackend](), reflect.TypeFor[healthzLastProbe](),
		reflect.TypeFor[healthzPool](), reflect.TypeFor[healthzReadiness](), reflect.TypeFor[HealthzStore](), reflect.TypeFor[healthzGroup](),
		reflect.TypeFor[healthzDissenter](), reflect.TypeFor[pool.VantagePointView]()} {
		for i := range group.NumField() {
			if name, _, _ := strings.Cut(group.Field(i).Tag.Get("json"), ","); name != "" && !named[name] {
				t.Errorf("README.md does not give /healthz's field %s (%s)", name, group.Name())
			}
		}
	}
}
