package scenario

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Section is one testbed's own part of a scenario, a top-level mapping
// this package does not know (ssh:, kubernetes:): kept as the document
// gave it, and decoded by the testbed's folder (Decode), which validation
// asks through the catalog (Bed.Section). A mapping no testbed claims is
// refused as an unknown field, with its line.
type Section struct {
	// entry is the key and its mapping, as parsed (with their lines).
	entry *ast.MappingValueNode
}

// Decode decodes the section into v (a pointer to the testbed's type)
// strictly: a field v lacks is an error naming it with its line, as the
// rest of the scenario's are. An empty section leaves v as it is.
func (x *Section) Decode(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scenario: cannot decode the %s section (the YAML decoder failed: %v): check its tags (!...) and indentation", x.key(), r)
		}
	}()
	if x.entry.Value.Type() == ast.NullType {
		return nil // "ssh:" alone: the section says nothing
	}
	if err := yaml.NodeToValue(x.entry.Value, v, yaml.DisallowUnknownField(), yaml.Strict()); err != nil {
		return fmt.Errorf("scenario: %s", yaml.FormatError(err, false, true))
	}
	return nil
}

func (x *Section) key() string { return x.entry.Key.String() }

// Equal reports whether two sections say the same, whatever their YAML
// style.
func (x *Section) Equal(y *Section) bool {
	if x == nil || y == nil {
		return x == y
	}
	a, ea := x.value()
	b, eb := y.value()
	return ea == nil && eb == nil && reflect.DeepEqual(a, b)
}

// value is what the section says: "ssh:" alone says what "ssh: {}" does
// (nothing), as Decode takes them, and the stored YAML writes the latter.
func (x *Section) value() (any, error) {
	if x.entry.Value.Type() == ast.NullType {
		return map[string]any{}, nil
	}
	var v any
	if err := yaml.NodeToValue(x.entry.Value, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// unknown is the error the strict decoder gives a field no one takes:
// "scenario: [3:1] unknown field "x"" and the document around it.
func (x *Section) unknown() error {
	// The mapping needs a token: without one the decoder takes it for
	// an inline struct's and lets unknown fields pass.
	m := ast.Mapping(x.entry.GetToken(), false, x.entry)
	var none struct{}
	err := yaml.NodeToValue(m, &none, yaml.DisallowUnknownField())
	if err == nil {
		return fmt.Errorf("scenario: unknown field %q", x.key())
	}
	return fmt.Errorf("scenario: %s", yaml.FormatError(err, false, true))
}

// Section returns the scenario's section called key (a testbed's: "ssh"),
// nil when it has none.
func (s Scenario) Section(key string) *Section { return s.Sections[key] }

// WithSection returns s with its section key set to v, a testbed's
// section value encoded as the document would give it (nil removes
// it). s itself is left as it is.
func (s Scenario) WithSection(key string, v any) (Scenario, error) {
	m := maps.Clone(s.Sections)
	if m == nil {
		m = map[string]*Section{}
	}
	if v == nil || reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		delete(m, key)
		s.Sections = m
		return s, nil
	}
	out, err := yaml.Marshal(map[string]any{key: v})
	if err != nil {
		return s, fmt.Errorf("scenario: section %s: %w", key, err)
	}
	f, err := parser.ParseBytes(out, 0)
	if err != nil || len(f.Docs) != 1 {
		return s, fmt.Errorf("scenario: section %s: %v", key, err)
	}
	mn, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok || len(mn.Values) != 1 {
		return s, fmt.Errorf("scenario: section %s: %T is not a mapping", key, v)
	}
	m[key] = &Section{entry: mn.Values[0]}
	s.Sections = m
	return s, nil
}

// SectionKeys are the keys of the scenario's sections, sorted.
func (s Scenario) SectionKeys() []string { return slices.Sorted(maps.Keys(s.Sections)) }

// fieldNames are the YAML keys of Scenario's own fields.
var fieldNames = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[Scenario]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" && t.Field(i).Name != "Sections" {
			out[name] = true
		}
	}
	return out
}()

// splitSections takes the top-level mappings (or empty values, "ssh:")
// that are none of Scenario's fields out of the parsed document body, as
// sections.
func splitSections(body ast.Node) map[string]*Section {
	m, ok := body.(*ast.MappingNode)
	if !ok {
		return nil
	}
	var sections map[string]*Section
	var keep []*ast.MappingValueNode
	for _, mv := range m.Values {
		k, isString := mv.Key.(*ast.StringNode)
		if !isString || fieldNames[k.Value] || mv.Value == nil || mv.Value.Type() != ast.MappingType && mv.Value.Type() != ast.NullType {
			keep = append(keep, mv)
			continue
		}
		if sections == nil {
			sections = map[string]*Section{}
		}
		if _, dup := sections[k.Value]; dup {
			keep = append(keep, mv) // the decoder names the duplicate
			continue
		}
		sections[k.Value] = &Section{entry: mv}
	}
	m.Values = keep
	return sections
}

// sectionsYAML renders the sections after the scenario's own fields, in
// key order, as the document gave them.
func (s Scenario) sectionsYAML() (string, error) {
	var b strings.Builder
	for _, k := range s.SectionKeys() {
		var v yaml.MapSlice
		if n := s.Sections[k].entry.Value; n.Type() != ast.NullType {
			if err := yaml.NodeToValue(n, &v, yaml.UseOrderedMap()); err != nil {
				return "", err
			}
		}
		out, err := yaml.Marshal(yaml.MapSlice{{Key: k, Value: v}})
		if err != nil {
			return "", err
		}
		b.Write(out)
	}
	return b.String(), nil
}
