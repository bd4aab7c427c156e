package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/config/internal/yamlpos"
)

// Load reads, decodes and validates the configuration file at path. It
// returns either a valid configuration or an error, never both.
func Load(path string) (*Config, error) {
	cfg, err := DecodeFile(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parse decodes and validates a configuration; filename is the name its
// errors carry and the directory relative file paths are resolved against.
func parse(data []byte, filename string) (*Config, error) {
	cfg, err := decode(data, filename)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// DecodeFile reads the file at path and decodes it over the defaults,
// checking its shape: YAML syntax, unknown keys, value types. It does not
// check the values; Validate does, and names the lines of this file when
// it does. Relative file paths in http_client_config blocks and
// file_sd_configs are resolved against the directory of path. An empty
// file is the defaults. A missing file is an error that matches
// fs.ErrNotExist.
func DecodeFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return decode(data, path)
}

// decode is DecodeFile for data read from filename.
func decode(data []byte, filename string) (*Config, error) {
	src := &source{file: filename}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, src.error(yamlpos.Syntax(data, err))
	}
	cfg := Default()
	cfg.src = src
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	src.doc = yamlpos.New(doc.Content[0], reflect.TypeFor[Config](), shapes())

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return nil, src.error(src.doc.Problems(err)...)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, src.error(yamlpos.Syntax(data, err))
	default:
		return nil, src.error(yamlpos.Problem{Line: next.Line,
			Message: "a second YAML document: the configuration is one document"})
	}

	dir := filepath.Dir(filename)
	cfg.HTTPClientConfig.SetDirectory(dir)
	for i := range cfg.Backends {
		cfg.Backends[i].HTTPClientConfig.SetDirectory(dir)
	}
	for _, sd := range cfg.FileSDConfigs {
		sd.SetDirectory(dir)
	}
	return cfg, nil
}

// File is the name of the file the configuration was decoded from, empty
// when it was built in code.
func (c *Config) File() string {
	if c.src == nil {
		return ""
	}
	return c.src.file
}

// source is the file a configuration was decoded from: its name, and its
// YAML document, which knows the line of every key.
type source struct {
	file string
	// doc is nil for an empty document.
	doc *yamlpos.Doc
}

// lineOf is the line of the field at path; see yamlpos.Doc.Line.
func (s *source) lineOf(path string) (line int, exact bool) {
	if s == nil {
		return 0, false
	}
	return s.doc.Line(path)
}

// error is an *Error of problems found in the file.
func (s *source) error(problems ...yamlpos.Problem) *Error {
	e := &Error{Problems: make([]Problem, len(problems))}
	for i, p := range problems {
		e.Problems[i] = Problem{File: s.file, Line: p.Line, Field: p.Field, Message: p.Message}
	}
	return e
}

// shapes says what the values of the types that decode themselves look
// like, for the problems of a file that gives them something else.
func shapes() map[reflect.Type]yamlpos.Shape {
	return map[reflect.Type]yamlpos.Shape{
		reflect.TypeFor[model.Duration](): {Words: "a duration such as 5s",
			Hint: "want a duration such as 500ms, 5s, 1m or 1h30m"},
		reflect.TypeFor[Bytes]():        {Words: "a size such as 1MiB"},
		reflect.TypeFor[IntOrPercent](): {Words: `an integer or a percentage such as "50%"`},
	}
}
