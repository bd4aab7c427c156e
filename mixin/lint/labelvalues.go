package lint

import (
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
)

// LabelValues splits Grafana's label_values(selector, label) variable query
// into its selector and label; a selector is required.
func LabelValues(query string) (selector, label string, err error) {
	query = strings.TrimSpace(query)
	inner, ok := strings.CutPrefix(query, "label_values(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return "", "", fmt.Errorf("query %q is not label_values(selector, label)", query)
	}
	inner = strings.TrimSuffix(inner, ")")
	comma := strings.LastIndexByte(inner, ',')
	if comma < 0 {
		return "", "", fmt.Errorf("query %q has no selector", query)
	}
	selector, label = strings.TrimSpace(inner[:comma]), strings.TrimSpace(inner[comma+1:])
	if !model.LegacyValidation.IsValidLabelName(label) {
		return "", "", fmt.Errorf("query %q: %q is not a label name", query, label)
	}
	return selector, label, nil
}
