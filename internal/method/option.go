package method

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Option declares one scenario option of a method: its name, the values
// it accepts, its default and a line of help. Declarations are the single
// source of truth: scenario validation, Setup, "tunbench methods
// --options" and docs/methods.md all read them.
//
// An option is enumerated when Values is set, an absolute path when Path
// is set, else an integer from Min to Max.
type Option struct {
	Name    string
	Help    string
	Default string
	// Path makes the option an absolute path on the endpoints' hosts.
	Path bool
	// Values lists the accepted values of an enumerated option.
	Values []string
	// Fold accepts Values in any letter case (the value is stored as
	// declared).
	Fold bool
	// Min and Max bound an integer option.
	Min, Max uint64
}

// Valid describes the accepted values, e.g. "an integer from 1 to 65535"
// or "one of udp, tcp".
func (o Option) Valid() string {
	if o.Values != nil {
		return "one of " + strings.Join(o.Values, ", ")
	}
	if o.Path {
		return "an absolute path"
	}
	return fmt.Sprintf("an integer from %d to %d", o.Min, o.Max)
}

// Type is "enum" or "integer".
func (o Option) Type() string {
	if o.Values != nil {
		return "enum"
	}
	if o.Path {
		return "path"
	}
	return "integer"
}

// Normalize returns v as the option stores it, or an error naming the
// option and what it accepts.
func (o Option) Normalize(v string) (string, error) {
	if o.Values != nil {
		for _, want := range o.Values {
			if v == want || (o.Fold && strings.EqualFold(v, want)) {
				return want, nil
			}
		}
	} else if o.Path {
		if strings.HasPrefix(v, "/") && !strings.ContainsAny(v, "\x00\n") {
			return path.Clean(v), nil
		}
	} else if n, err := strconv.ParseUint(v, 10, 64); err == nil && n >= o.Min && n <= o.Max {
		return strconv.FormatUint(n, 10), nil
	}
	return "", fmt.Errorf("option %s=%q: want %s", o.Name, v, o.Valid())
}

// Values are a method's options after ParseOptions: every declared option
// has a valid value, the given one or its default.
type Values struct {
	v     map[string]string
	given map[string]bool
}

// String returns the value of option name.
func (v Values) String(name string) string { return v.v[name] }

// Int returns the value of integer option name.
func (v Values) Int(name string) int {
	n, _ := strconv.Atoi(v.v[name])
	return n
}

// Uint64 returns the value of integer option name.
func (v Values) Uint64(name string) uint64 {
	n, _ := strconv.ParseUint(v.v[name], 10, 64)
	return n
}

// On reports whether an on/off option is "on".
func (v Values) On(name string) bool { return v.v[name] == "on" }

// Given reports whether the scenario set option name (rather than its
// default applying).
func (v Values) Given(name string) bool { return v.given[name] }

// OptionMover is implemented by methods one of whose former options
// became something else (the ebpf methods' rules, now the tunnels
// dimension): MovedOption says, for such a name, what to give instead,
// and ParseOptions refuses the option with that rather than as unknown.
type OptionMover interface {
	MovedOption(name string) (instead string, ok bool)
}

// OptionChecker is implemented by methods whose options constrain each
// other; ParseOptions calls it after checking each option on its own.
type OptionChecker interface {
	CheckOptions(Values) error
}

// ParseOptions checks given against m's declared options and fills in
// defaults. An unknown key is an error that lists the valid ones; a bad
// value names the range. Errors start with the method's name.
func ParseOptions(m Method, given map[string]string) (Values, error) {
	if mv, ok := m.(OptionMover); ok {
		for _, k := range slices.Sorted(maps.Keys(given)) {
			if instead, ok := mv.MovedOption(k); ok {
				return Values{}, fmt.Errorf("%s: option %q is gone: %s", m.Name(), k, instead)
			}
		}
	}
	vals, err := ParseDeclared(m.Name(), m.Options(), given)
	if err != nil {
		return vals, err
	}
	if c, ok := m.(OptionChecker); ok {
		if err := c.CheckOptions(vals); err != nil {
			return vals, fmt.Errorf("%s: %w", m.Name(), err)
		}
	}
	return vals, nil
}

// ParseDeclared checks given against decl, the options of the method
// called name, and fills in defaults.
func ParseDeclared(name string, decl []Option, given map[string]string) (Values, error) {
	vals := Values{v: map[string]string{}, given: map[string]bool{}}
	for _, o := range decl {
		vals.v[o.Name] = o.Default
	}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := slices.IndexFunc(decl, func(o Option) bool { return o.Name == k })
		if i < 0 {
			return vals, fmt.Errorf("%s: unknown option %q: %s", name, k, validNames(decl))
		}
		v, err := decl[i].Normalize(given[k])
		if err != nil {
			return vals, fmt.Errorf("%s: %w", name, err)
		}
		vals.v[k], vals.given[k] = v, true
	}
	return vals, nil
}

func validNames(decl []Option) string {
	if len(decl) == 0 {
		return "it takes no options"
	}
	names := make([]string, len(decl))
	for i, o := range decl {
		names[i] = o.Name
	}
	slices.Sort(names)
	return "valid options are " + strings.Join(names, ", ")
}

// Option declarations shared by several methods.
var (
	VNIOption = Option{Name: "vni", Default: "42", Min: 1, Max: 1<<24 - 1,
		Help: "VXLAN network identifier (Geneve: virtual network identifier)"}
	GREKeyOption = Option{Name: "key", Default: "42", Min: 1, Max: 1<<32 - 1,
		Help: "GRE key (0 is refused: the kernel reads it as no key, which changes the overhead)"}
	WGPortOption = Option{Name: "port", Default: "51820", Min: 1, Max: 65535,
		Help: "UDP listen port of both sides"}
)
