package tour

// An event a tour waits for or checks: its name and the fields it must
// have, held to the events the job emits.

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/faultline-dev/faultline/runtime/view"
)

func (p *parser) where(n *yaml.Node, field string) (map[string]string, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n.Line, field, "must be a mapping of event fields to values, got %s", describe(n))
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return nil, p.errf(v.Line, join(field, k.Value), "must be a single value, got %s", describe(v))
		}
		out[k.Value] = v.Value
	}
	return out, nil
}

// knownEvent checks that event (when given) is one the job emits and
// that where names fields it has: a misspelt name would never match, and
// the tour would wait for it until its timeout.
func (p *parser) knownEvent(f fields, path, event string, where map[string]string) error {
	if event == "" {
		return nil
	}
	have, ok := view.EventFields(event)
	if !ok {
		return p.errf(f.keyLine("event"), join(path, "event"), "no event is called %q (events: %s)", event, strings.Join(view.EventNames(), ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(where)) {
		if !slices.Contains(have, k) {
			return p.errf(f.keyLine("where"), join(join(path, "where"), k), "%s events have no field %q (fields: %s)", event, k, strings.Join(have, ", "))
		}
	}
	return nil
}
