package lint

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// durationVariables are the Grafana built-in variables a query may use
// where PromQL wants a duration, such as rate(x[$__rate_interval]), with
// the duration that stands in for each while Prometheus's parser reads the
// query. Each stand-in is an odd count of milliseconds nobody writes, so a
// range that parses to one of them was the variable. Padded with spaces it
// is exactly as long as the reference it replaces, so the positions in the
// parser's errors stay those of the query as written, and its text can be
// turned back into the variable in a matcher value or an error message.
// Any other variable may appear only inside a string, as in job=~"$job",
// where the parser takes it as text.
var durationVariables = map[string]time.Duration{
	"__interval":      999_991 * time.Millisecond,
	"__rate_interval": 999_993 * time.Millisecond,
	"__range":         999_997 * time.Millisecond,
}

var (
	// variablePattern matches a Grafana variable reference, $name or
	// ${name}.
	variablePattern = regexp.MustCompile(`\$\w+|\$\{\w+\}`)
	// standInPattern matches what may be a stand-in: milliseconds and
	// their padding.
	standInPattern = regexp.MustCompile(`\b(\d+)ms( *)`)
)

// standIn is the text of a stand-in duration, padded with spaces to at
// least width characters.
func standIn(d time.Duration, width int) string {
	text := strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	return text + strings.Repeat(" ", max(0, width-len(text)))
}

// substituteVariables replaces the duration variables of expr with their
// stand-ins. Other variables are left as they are: inside a string they are
// text, and outside one the parser rejects them.
func substituteVariables(expr string) string {
	return variablePattern.ReplaceAllStringFunc(expr, func(ref string) string {
		if d, ok := durationVariables[strings.Trim(ref, "${}")]; ok {
			return standIn(d, len(ref))
		}
		return ref
	})
}

// restoreVariables turns the stand-ins in s, a matcher value or an error
// message, back into the references they replaced. The padding tells
// ${name} from $name; an error message quotes a stand-in without it, and
// gets $name.
func restoreVariables(s string) string {
	return standInPattern.ReplaceAllStringFunc(s, func(text string) string {
		m := standInPattern.FindStringSubmatch(text)
		ms, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return text
		}
		ref, ok := variableFor(time.Duration(ms) * time.Millisecond)
		if !ok {
			return text
		}
		pad := len(m[2])
		braced := "${" + strings.TrimPrefix(ref, "$") + "}"
		if w := len(braced) - len(m[1]) - len("ms"); pad >= w {
			return braced + strings.Repeat(" ", pad-w)
		}
		w := max(0, len(ref)-len(m[1])-len("ms"))
		return ref + strings.Repeat(" ", max(0, pad-w))
	})
}

// durationText renders a parsed duration as its variable's name when it is
// a stand-in, and as a PromQL duration otherwise.
func durationText(d time.Duration) string {
	if name, ok := variableFor(d); ok {
		return name
	}
	return model.Duration(d).String()
}

// durationVariableNames lists the references durationVariables accepts,
// sorted, for an error message.
func durationVariableNames() string {
	var names []string
	for name := range durationVariables {
		names = append(names, "$"+name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// variableFor returns the reference of the variable d stands in for, if
// it is a stand-in.
func variableFor(d time.Duration) (string, bool) {
	for name, standIn := range durationVariables {
		if d == standIn {
			return "$" + name, true
		}
	}
	return "", false
}
