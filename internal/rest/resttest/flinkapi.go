// Package resttest holds answers of faultline's REST API to the schemas
// Apache Flink's documentation gives its REST API (README.md): for the
// tests only.
package resttest

import (
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

//go:embed flink-2.1-rest_v1_dispatcher.yml
var flinkDoc []byte

// API is Flink's own description of its REST API (README.md).
type API struct {
	paths   map[string]any
	schemas map[string]any
}

func Load(t testing.TB) API {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(flinkDoc, &doc); err != nil {
		t.Fatal(err)
	}
	return API{paths: doc["paths"].(map[string]any), schemas: doc["components"].(map[string]any)["schemas"].(map[string]any)}
}

// Obj is v as a JSON object (nil when it is none).
func Obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// resolve follows a schema's $ref.
func (api API) resolve(s map[string]any) map[string]any {
	for s["$ref"] != nil {
		s = Obj(api.schemas[strings.TrimPrefix(s["$ref"].(string), "#/components/schemas/")])
	}
	return s
}

// properties are a schema's properties with those of its allOf parts.
func (api API) properties(s map[string]any) map[string]any {
	s = api.resolve(s)
	props := maps.Clone(Obj(s["properties"]))
	if props == nil {
		props = map[string]any{}
	}
	parts, _ := s["allOf"].([]any)
	for _, part := range parts {
		maps.Copy(props, api.properties(Obj(part)))
	}
	return props
}

// Response is the schema Flink documents for method on path's answer.
func (api API) Response(t testing.TB, method, path string) map[string]any {
	t.Helper()
	op := Obj(Obj(api.paths[path])[method])
	if op == nil {
		t.Fatalf("Flink documents no %s %s", method, path)
	}
	for _, r := range Obj(op["responses"]) {
		if s := Obj(Obj(Obj(Obj(r)["content"])["application/json"])["schema"]); s != nil {
			return s
		}
	}
	t.Fatalf("Flink documents no JSON answer to %s %s", method, path)
	return nil
}

// Check holds v, a decoded JSON answer at where, to schema s: every field
// is one of Flink's for it, every enum value and id pattern Flink's.
func (api API) Check(t testing.TB, where string, v any, s map[string]any) {
	t.Helper()
	s = api.resolve(s)
	if d := Obj(s["discriminator"]); d != nil {
		name, _ := Obj(v)["className"].(string)
		target, ok := Obj(d["mapping"])[name].(string)
		if !ok {
			t.Errorf("%s: className %q is not one of Flink's %v", where, name, slices.Sorted(maps.Keys(Obj(d["mapping"]))))
			return
		}
		s = map[string]any{"$ref": target}
	}
	switch v := v.(type) {
	case map[string]any:
		props, extra := api.properties(s), s["additionalProperties"]
		for k, fv := range v {
			switch p := props[k]; {
			case p != nil:
				api.Check(t, where+"."+k, fv, Obj(p))
			case Obj(extra) != nil:
				api.Check(t, where+"["+k+"]", fv, Obj(extra))
			case extra == true || (len(props) == 0 && s["type"] == "object" && s["additionalProperties"] != nil):
			default:
				t.Errorf("%s: field %q is not one of Flink's %v", where, k, slices.Sorted(maps.Keys(props)))
			}
		}
	case []any:
		for i, e := range v {
			api.Check(t, fmt.Sprintf("%s[%d]", where, i), e, Obj(s["items"]))
		}
	case string:
		if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, any(v)) {
			t.Errorf("%s: %q is not one of Flink's %v", where, v, enum)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile("^"+p+"$").MatchString(v) {
			t.Errorf("%s: %q does not match Flink's pattern %s", where, v, p)
		}
	case float64:
		if s["type"] == "integer" && v != float64(int64(v)) {
			t.Errorf("%s: %v is not a whole number, as Flink's is", where, v)
		}
	}
}
