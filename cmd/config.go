package cmd

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// config looks settings up by key: a flag set on the command line, else the
// first non-empty environment variable bound to the key, else the config
// file. Keys are case-insensitive, and a key inside a map of the file is
// dotted (`run.ttl`). These are the rules lockctl read its settings by when
// viper did it; viper is now the oracle of config_oracle_test.go only, as
// its dependencies' initialisers cost every command at start-up.
type config struct {
	path   string         // the config file, once read or tried
	file   map[string]any // its content, every key lowercased
	flags  map[string]*pflag.Flag
	env    map[string][]string // key: the variables bound to it, in order of preference
	getenv func(string) string
}

// bindFlags makes every flag of fs a source for the key of its name.
func (c *config) bindFlags(fs *pflag.FlagSet) {
	if c.flags == nil {
		c.flags = map[string]*pflag.Flag{}
	}
	fs.VisitAll(func(fl *pflag.Flag) { c.flags[strings.ToLower(fl.Name)] = fl })
}

// bindEnv makes the environment variables vars, in that order, a source
// for key.
func (c *config) bindEnv(key string, vars ...string) {
	if c.env == nil {
		c.env = map[string][]string{}
	}
	key = strings.ToLower(key)
	c.env[key] = append(c.env[key], vars...)
}

// read reads the YAML config file at path. A file that cannot be read
// returns the *os.PathError; one that is not YAML with a map at the top,
// a *configSyntaxError.
func (c *config) read(path string) error {
	c.path = path
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	file := map[string]any{}
	if err := yaml.Unmarshal(b, &file); err != nil {
		return &configSyntaxError{err}
	}
	c.file = lowerKeys(file).(map[string]any)
	return nil
}

// configSyntaxError is a config file that does not parse.
type configSyntaxError struct{ err error }

func (e *configSyntaxError) Error() string { return "While parsing config: " + e.err.Error() }
func (e *configSyntaxError) Unwrap() error { return e.err }

// fileUsed is the config file read or tried, "" when none was.
func (c *config) fileUsed() string { return c.path }

// isSet reports whether a flag on the command line, the environment or the
// config file sets key (a flag's default does not count).
func (c *config) isSet(key string) bool { return c.find(key, false) != nil }

// get is key's value: from a flag set on the command line (typed as the
// flag), the environment (a string), the config file (typed as YAML
// decodes it: string, int, float64, bool, []any, map[string]any), else the
// default of a flag of that name; nil when none has it.
func (c *config) get(key string) any { return c.find(key, true) }

// getString is get as a string: a scalar spelt out, "" for nil, a list or
// a map.
func (c *config) getString(key string) string { return scalarString(c.get(key)) }

// inFile reports whether the config file holds a value for key.
func (c *config) inFile(key string) bool { return c.fileValue(key) != nil }

// fileValue is key's value in the config file alone, nil when it has none.
func (c *config) fileValue(key string) any {
	return searchPrefixes(c.file, strings.Split(strings.ToLower(key), "."))
}

// fileKeys lists the dotted keys of the config file's values, sorted. A
// map's keys stand for it; an empty map has none.
func (c *config) fileKeys() []string {
	seen := flattenKeys(map[string]bool{}, c.file, "")
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// find looks key up in the flags set on the command line, the environment
// and the config file, in that order; with flagDefault, a flag's default
// comes last. A flag or a value in the file at a prefix of a dotted key (a
// flag `run` for `run.ttl`) hides the key from the sources after it; a
// variable bound to a prefix does not (as in viper, whose check for that
// skips its map of variables).
func (c *config) find(key string, flagDefault bool) any {
	key = strings.ToLower(key)
	path := strings.Split(key, ".")
	nested := len(path) > 1
	if fl := c.flags[key]; fl != nil && fl.Changed {
		return flagValue(fl)
	}
	if nested && shadowedInFlat(path, c.flags) {
		return nil
	}
	for _, name := range c.env[key] {
		if c.getenv != nil {
			if v := c.getenv(name); v != "" {
				return v
			}
		}
	}
	if v := searchPrefixes(c.file, path); v != nil {
		return v
	}
	if nested && shadowedInDeep(path, c.file) {
		return nil
	}
	if fl := c.flags[key]; flagDefault && fl != nil {
		return flagValue(fl)
	}
	return nil
}

// flagValue is a flag's value typed by its type: int for the integer
// types, bool, []string for string lists, else the flag's text.
func flagValue(fl *pflag.Flag) any {
	s := fl.Value.String()
	switch fl.Value.Type() {
	case "int", "int8", "int16", "int32", "int64":
		n, _ := strconv.ParseInt(s, 0, 0)
		return int(n)
	case "bool":
		b, _ := strconv.ParseBool(s)
		return b
	case "stringSlice", "stringArray":
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		if s == "" {
			return []string{}
		}
		items, _ := csv.NewReader(strings.NewReader(s)).Read()
		return items
	}
	return s
}

// shadowedInFlat reports whether a proper prefix of path is a key of m.
func shadowedInFlat(path []string, m map[string]*pflag.Flag) bool {
	for i := 1; i < len(path); i++ {
		if _, ok := m[strings.Join(path[:i], ".")]; ok {
			return true
		}
	}
	return false
}

// shadowedInDeep reports whether a proper prefix of path leads, through
// nested maps, to a value that is not a map.
func shadowedInDeep(path []string, m map[string]any) bool {
	for i := 1; i < len(path); i++ {
		switch searchMap(m, path[:i]).(type) {
		case nil:
			return false
		case map[string]any:
			continue
		default:
			return true
		}
	}
	return false
}

// searchMap follows path through nested maps, one key per element.
func searchMap(m map[string]any, path []string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok = mm[k]; !ok {
			return nil
		}
	}
	return v
}

// searchPrefixes follows path through nested maps and lists (an element
// that is a number indexes a list), trying the longest run of elements
// first as one key: a key spelt `run.ttl` in the file wins over `ttl`
// inside `run`. A key whose value is null counts as absent.
func searchPrefixes(source any, path []string) any {
	if len(path) == 0 {
		return source
	}
	for i := len(path); i > 0; i-- {
		prefix := strings.Join(path[:i], ".")
		var next any
		switch s := source.(type) {
		case map[string]any:
			v, ok := s[prefix]
			if !ok {
				continue
			}
			next = v
		case []any:
			n, err := strconv.Atoi(prefix)
			if err != nil || n < 0 || n >= len(s) {
				continue
			}
			next = s[n]
		default:
			continue
		}
		if i == len(path) {
			if next != nil {
				return next
			}
			continue
		}
		switch next.(type) {
		case map[string]any, []any:
			if v := searchPrefixes(next, path[i:]); v != nil {
				return v
			}
		}
	}
	return nil
}

// flattenKeys adds to seen the dotted keys of m's values below prefix,
// unless a key already seen hides them.
func flattenKeys(seen map[string]bool, m map[string]any, prefix string) map[string]bool {
	if prefix != "" && seen[prefix] {
		return seen
	}
	if prefix != "" {
		prefix += "."
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if sub, ok := m[k].(map[string]any); ok {
			seen = flattenKeys(seen, sub, prefix+k)
		} else {
			seen[prefix+k] = true
		}
	}
	return seen
}

// lowerKeys lowercases the keys of every map in v, in maps and in lists,
// and spells out the keys of maps that YAML decoded with keys that are not
// strings (`1: x`). Of keys that differ only in case, one spelt with
// capitals wins over the lowercase one; of several spelt with capitals,
// the last in byte order.
func lowerKeys(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			m[scalarString(k)] = val
		}
		return lowerKeys(m)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		m := make(map[string]any, len(x))
		for _, k := range keys {
			lower := strings.ToLower(k)
			if _, taken := m[lower]; taken && k == lower {
				continue
			}
			m[lower] = lowerKeys(x[k])
		}
		return m
	case []any:
		for i := range x {
			x[i] = lowerKeys(x[i])
		}
	}
	return v
}

// scalarString spells a scalar out: numbers in plain decimal notation,
// time stamps as time.Time.String does; "" for nil, lists and maps.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	case error:
		return x.Error()
	}
	return ""
}
