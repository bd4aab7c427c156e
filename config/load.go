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
// returns either a valid configuration or an error naming every problem,
// never both.
func Load(path string) (*Config, error) {
	cfg, err := DecodeFile(path)
	return validated(cfg, err)
}

// parse decodes and validates a configuration; filename is the name its
// errors carry and the directory relative file paths are resolved against.
func parse(data []byte, filename string) (*Config, error) {
	cfg, err := decode(data, filename)
	return validated(cfg, err)
}

// validated is cfg when it decoded without a problem and is valid, or
// else an error naming the problems of both steps.
func validated(cfg *Config, decodeErr error) (*Config, error) {
	if cfg == nil {
		return nil, decodeErr
	}
	if err := JoinErrors(decodeErr, cfg.Validate()); err != nil {
		return nil, err
	}
	return cfg, nil
}

// JoinErrors is one error listing the problems of every error in errs,
// in order, or nil when all are nil. An *Error gives its problems; any
// other error is one problem with its message.
func JoinErrors(errs ...error) error {
	joined := &Error{}
	for _, err := range errs {
		var e *Error
		switch {
		case err == nil:
		case errors.As(err, &e):
			joined.Problems = append(joined.Problems, e.Problems...)
		default:
			joined.Problems = append(joined.Problems, Problem{Message: err.Error()})
		}
	}
	if len(joined.Problems) == 0 {
		return nil
	}
	return joined
}

// DecodeFile reads the file at path and decodes it over the defaults,
// checking its shape: YAML syntax, unknown keys, value types. It does not
// check the values; Validate does, and names the lines of this file when
// it does. Relative file paths in http_client_config blocks and
// file_sd_configs are resolved against the directory of path. An empty
// file is the defaults. A missing file is an error that matches
// fs.ErrNotExist.
//
// A file of valid YAML whose keys or values have the wrong shape (an
// unknown key, a bad duration) gives both: the configuration decoded
// without those keys, and an *Error naming each. Validating that
// configuration then finds the problems of the rest of the file, so that
// one run names them all.
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
	var next yaml.Node
	dec.Decode(&next) // The first document, which parsed above.
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, src.error(yamlpos.Syntax(data, err))
	default:
		return nil, src.error(yamlpos.Problem{Line: next.Line,
			Message: "a second YAML document: the configuration is one document"})
	}
	cfg, problems := decodeAll(data, src)
	cfg.src = src

	dir := filepath.Dir(filename)
	cfg.HTTPClientConfig.SetDirectory(dir)
	for i := range cfg.Backends {
		cfg.Backends[i].HTTPClientConfig.SetDirectory(dir)
	}
	for _, sd := range cfg.FileSDConfigs {
		sd.SetDirectory(dir)
	}
	if len(problems) > 0 {
		return cfg, src.error(problems...)
	}
	return cfg, nil
}

// maxDecodeRounds bounds how many keys decodeAll cuts from a document to
// go past the errors that stop the decoder: a file with more such
// problems gets the first ones named, and the rest after they are fixed.
const maxDecodeRounds = 50

// decodeAll decodes data, a configuration of one valid YAML document,
// strictly over the defaults, and returns what decoded and the problems
// of what did not. The YAML library collects unknown keys and mistyped
// values and decodes the rest, but an UnmarshalYAML error (a bad
// duration or size) stops it: then the key at fault is cut from the
// document and the rest decoded again, until nothing stops it. Problems
// found in a document cut down are placed by their field on the lines of
// the file.
func decodeAll(data []byte, src *source) (*Config, []yamlpos.Problem) {
	var problems []yamlpos.Problem
	work := data
	for round := 0; ; round++ {
		cfg := Default()
		dec := yaml.NewDecoder(bytes.NewReader(work))
		dec.KnownFields(true)
		err := dec.Decode(cfg)
		if err == nil {
			return cfg, problems
		}
		var doc yaml.Node
		if yaml.Unmarshal(work, &doc) != nil || len(doc.Content) == 0 {
			return cfg, append(problems, yamlpos.Problem{Message: err.Error()})
		}
		workDoc := yamlpos.New(doc.Content[0], reflect.TypeFor[Config](), shapes())
		var found []yamlpos.Problem
		var typeErr *yaml.TypeError
		cut := false
		if errors.As(err, &typeErr) || round == maxDecodeRounds {
			found = workDoc.Problems(err)
		} else {
			found, cut = workDoc.Cut(err)
		}
		for _, p := range found {
			if round > 0 && p.Field != "" {
				p.Line, _ = src.lineOf(p.Field)
			}
			problems = append(problems, p)
		}
		if !cut {
			// The decoder went through the whole document, or nothing
			// more can be cut: cfg holds everything that decoded.
			return cfg, problems
		}
		if work, err = yaml.Marshal(&doc); err != nil {
			return cfg, problems
		}
	}
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
