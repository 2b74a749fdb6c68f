package cmd

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

var configOracleSeed = flag.Uint64("config-oracle-seed", 0, "seed of TestConfigAsViper's cases (0: a new one)")

// TestConfigAsViper checks config, case by random case, against viper, which
// read lockctl's settings before config did and is kept as its oracle: with
// viper set up as resolve used to set it up (every flag of the command bound,
// globalEnv bound, the YAML file read), IsSet, Get (as configString sees it),
// GetString and InConfig answer as config's isSet, get, getString and inFile,
// and a viper that read the file alone answers AllKeys, Get and IsSet as
// fileKeys, fileValue and inFile (checkConfigFile, warnUnknownConfigKeys).
// A file that does not read or parse fails with the same message.
func TestConfigAsViper(t *testing.T) {
	seed := *configOracleSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	var vars []string
	for _, names := range globalEnv {
		vars = append(vars, names...)
	}
	vars = append(vars, "LOCKCTL_EVENTS")
	slices.Sort(vars)
	for _, name := range vars {
		t.Setenv(name, "") // restored after the test
		oracleSetenv(t, name, "", false)
	}
	dir := t.TempDir()
	paths := commandPaths(newOracleTree())
	cases := 1000
	if testing.Short() {
		cases = 100
	}
	for i := range cases {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		g := oracleCase{rng: rng, dir: dir}
		if msg := g.run(t, paths, vars); msg != "" {
			t.Fatalf("case %d (-config-oracle-seed=%d):\n%s\n%s", i, seed, g.describe(), msg)
		}
	}
}

// newOracleTree is a fresh command tree, with flags that nothing has set.
func newOracleTree() *cobra.Command {
	io, _, _, _ := ui.Test()
	f := NewFactory(io)
	return NewRootCmd(f)
}

// commandPaths lists every command below root as the names leading to it.
func commandPaths(root *cobra.Command) [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(slices.Clone(path), sub.Name())
			out = append(out, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	return out
}

type oracleCase struct {
	rng  *rand.Rand
	dir  string
	cmd  string
	file string
	text string
	env  []string
	set  []string
}

func (g *oracleCase) describe() string {
	return fmt.Sprintf("command: %s\nchanged flags: %q\nenvironment: %q\nfile %s:\n%s", g.cmd, g.set, g.env, g.file, g.text)
}

// run sets one case up and returns what differs from viper, "" when nothing.
func (g *oracleCase) run(t *testing.T, paths [][]string, vars []string) string {
	rng := g.rng
	root := newOracleTree()
	path := paths[rng.IntN(len(paths))]
	c, _, err := root.Find(path)
	if err != nil {
		t.Fatalf("%v: %v", path, err)
	}
	g.cmd = strings.Join(path, " ")
	c.InheritedFlags() // merges the root's flags into c.Flags()
	flags := c.Flags()
	section := topCommand(c).Name()
	sections := make([]string, 0, len(paths))
	for _, p := range paths {
		if len(p) == 1 {
			sections = append(sections, p[0])
		}
	}
	if rng.IntN(8) == 0 {
		// A flag named after a section hides the section's keys.
		name := sections[rng.IntN(len(sections))]
		if rng.IntN(2) == 0 {
			name = section
		}
		if flags.Lookup(name) == nil {
			flags.String(name, "", "")
		}
	}
	var names []string
	flags.VisitAll(func(fl *pflag.Flag) {
		names = append(names, fl.Name)
		if rng.IntN(7) == 0 {
			if v, ok := flagInput(rng, fl); ok && flags.Set(fl.Name, v) == nil {
				g.set = append(g.set, fl.Name+"="+v)
			}
		}
	})

	for _, name := range vars {
		switch rng.IntN(6) {
		case 0:
			oracleSetenv(t, name, "", true)
			g.env = append(g.env, name+"=")
		case 1, 2:
			v := pick(rng, envValues)
			oracleSetenv(t, name, v, true)
			g.env = append(g.env, name+"="+v)
		default:
			oracleSetenv(t, name, "", false)
		}
	}

	g.file = filepath.Join(g.dir, "config.yaml")
	keys := append([]string{"events", "events-key", "password", "url", "redlock"}, names...)
	switch n := rng.IntN(50); {
	case n == 0:
		g.file = filepath.Join(g.dir, "missing.yaml")
	case n == 1:
		g.file = g.dir
	case n < 6:
		g.text = pick(rng, fixedYAML)
	default:
		doc := genDoc(rng, names, sections)
		g.text = doc.render("")
		keys = append(keys, doc.paths("")...)
	}
	if g.file == filepath.Join(g.dir, "config.yaml") {
		if err := os.WriteFile(g.file, []byte(g.text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		keys = append(keys, section+"."+n, pick(rng, sections)+"."+n)
	}
	for _, k := range slices.Clone(keys) {
		keys = append(keys, strings.ToUpper(k), mixCase(rng, k))
		if i := strings.LastIndexByte(k, '.'); i > 0 {
			keys = append(keys, k[:i])
		}
	}

	v := viper.New()
	if err := v.BindPFlags(flags); err != nil {
		t.Fatal(err)
	}
	var conf config
	conf.getenv = os.Getenv
	conf.bindFlags(flags)
	bound := globalEnv
	if rng.IntN(4) == 0 {
		// A key bound to the environment that no flag has: its value
		// there hides the file's keys below it.
		bound = maps.Clone(globalEnv)
		bound["events"] = []string{"LOCKCTL_EVENTS"}
	}
	for key, envs := range bound {
		if err := v.BindEnv(append([]string{key}, envs...)...); err != nil {
			t.Fatal(err)
		}
		conf.bindEnv(key, envs...)
	}
	v.SetConfigFile(g.file)
	v.SetConfigType("yaml")
	if msg := sameError(v.ReadInConfig(), conf.read(g.file)); msg != "" {
		return msg
	}
	fileOnly := viper.New()
	fileOnly.SetConfigFile(g.file)
	fileOnly.SetConfigType("yaml")
	_ = fileOnly.ReadInConfig() // as checked above

	var diffs []string
	differ := func(what, key string, want, got any) {
		if want != got {
			diffs = append(diffs, fmt.Sprintf("%s(%q): viper %#v, config %#v", what, key, want, got))
		}
	}
	differ("ConfigFileUsed", "", v.ConfigFileUsed(), conf.fileUsed())
	for _, k := range keys {
		differ("IsSet", k, v.IsSet(k), conf.isSet(k))
		differ("Get", k, configString(v.Get(k)), configString(conf.get(k)))
		differ("GetString", k, v.GetString(k), conf.getString(k))
		differ("InConfig", k, v.InConfig(k), conf.inFile(k))
		differ("file-only Get", k, configString(fileOnly.Get(k)), configString(conf.fileValue(k)))
		differ("file-only IsSet", k, fileOnly.IsSet(k), conf.inFile(k))
	}
	want := fileOnly.AllKeys()
	slices.Sort(want)
	differ("AllKeys", "", strings.Join(want, " "), strings.Join(conf.fileKeys(), " "))
	return strings.Join(diffs, "\n")
}

// oracleSetenv sets name to value, or unsets it, in the process's
// environment, where viper reads it.
func oracleSetenv(t *testing.T, name, value string, set bool) {
	t.Helper()
	err := os.Unsetenv(name)
	if set {
		err = os.Setenv(name, value)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sameError says how two errors from reading a config file differ, "" when
// they do not.
func sameError(want, got error) string {
	switch {
	case (want == nil) != (got == nil):
		return fmt.Sprintf("read: viper %v, config %v", want, got)
	case want == nil:
		return ""
	case want.Error() != got.Error():
		return fmt.Sprintf("read: viper %q, config %q", want, got)
	case errors.Is(want, os.ErrNotExist) != errors.Is(got, os.ErrNotExist):
		return fmt.Sprintf("read: viper %v is ErrNotExist: %v, config's: %v",
			want, errors.Is(want, os.ErrNotExist), errors.Is(got, os.ErrNotExist))
	}
	return ""
}

var envValues = []string{"redis://h:6379/0", "redis://:secret@h", "a,b", "json", "text", "5s", "true", "0", "x", " ", "2:1s", "table"}

// Files that are not a random map: empty ones, and malformed ones.
var fixedYAML = []string{
	"",
	"~\n",
	"# a comment only\n",
	"---\nurl: a\n---\nurl: b\n",
	"url: [unclosed\n",
	"\turl: x\n",
	"- a\n- b\n",
	"just text\n",
	"a: b: c\n",
	"url: a\nurl: b\n",
	"{url: x\n",
	"run:\n  ttl: 1\n ttl: 2\n",
	"? [a]\n: b\n",
	"url: *nope\n",
	"run: {ttl: 1, ttl: 2}\n",
	"url: \"open\n",
}

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

// flagInput is a random value for fl, ok false when there is none to try.
func flagInput(rng *rand.Rand, fl *pflag.Flag) (string, bool) {
	switch typ := fl.Value.Type(); typ {
	case "bool":
		return pick(rng, []string{"true", "false"}), true
	case "int", "int64", "N", "count":
		return fmt.Sprint(rng.IntN(200) - 50), true
	case "duration":
		return pick(rng, []string{"0s", "5s", "1m30s", "250ms"}), true
	case "stringSlice":
		return pick(rng, []string{"a", "a,b", "", `"x,y",z`, "redis://h:1,redis://h:2"}), true
	case "N[:D]":
		return pick(rng, []string{"1", "2:1s"}), true
	case "string":
		return pick(rng, []string{"", "x", "a b", "redis://h:6379/0", "A,B"}), true
	default:
		if strings.Contains(typ, "|") {
			return pick(rng, strings.Split(typ, "|")), true
		}
	}
	return "", false
}

// mixCase changes the case of some of k's letters.
func mixCase(rng *rand.Rand, k string) string {
	b := []byte(k)
	for i, ch := range b {
		if ch >= 'a' && ch <= 'z' && rng.IntN(2) == 0 {
			b[i] = ch - 'a' + 'A'
		}
	}
	return string(b)
}

// ynode is a YAML value: a scalar's text, a list, or a map (whose keys
// are spelt as in the file).
type ynode struct {
	scalar string
	list   []ynode
	keys   []string
	vals   []ynode
	isList bool
	isMap  bool
	flow   bool
}

// Scalars that mean the same in block and flow style.
var yamlScalars = []string{
	"5m", "45", "-3", "0x1F", "0o17", "1.5", "1e3", ".inf", "-.Inf", ".nan", "true", "False", "yes", "on",
	"~", "null", `""`, `"x, y"`, `'it''s'`, "redis://h:6379/0", "redis://:secret@h", "2001-12-14",
	"2001-12-14T21:59:43.10-05:00", "!!timestamp 2001-12-14", "!!str 12", "!!binary aGVsbG8=",
	"12345678901234567890", "-9223372036854775809", "json", "text", "TABLE", "a b c", "0", "1", "+1",
	"1_000", ".5", "Mixed Case",
}

// Scalars for block style only.
var blockScalars = []string{"a,b", "redis://a:1,redis://b:2", "x,", ""}

var unknownKeys = []string{"tll", "foo", "x-y", "Nested", "kil-after", "a_b"}

// Keys at the top that are no flag's.
var topKeys = []string{"events", "events-key", "password", "tll", "foo", "Nested"}

// Keys that YAML decodes as other than strings, spelt apart once made strings.
var oddKeys = []string{"1", "~", "0x10", "2.5"}

// genDoc is a random config file: known and unknown keys in any case,
// sections, nested maps, lists and keys spelt with a dot.
func genDoc(rng *rand.Rand, flagNames, sections []string) ynode {
	doc := ynode{isMap: true}
	used := map[string]bool{}
	add := func(m *ynode, used map[string]bool, k string, v ynode) {
		lower := strings.ToLower(k)
		if used[lower] || used[k] {
			return
		}
		used[k] = true
		if k != lower {
			used[lower] = true // one capitalised spelling per key at most
		}
		m.keys = append(m.keys, k)
		m.vals = append(m.vals, v)
		if k != lower && rng.IntN(4) == 0 {
			// The lowercase spelling too: the capitalised one wins.
			m.keys = append(m.keys, lower)
			m.vals = append(m.vals, genValue(rng, 1, false))
		}
	}
	dotted := map[string]bool{}
	for range rng.IntN(10) {
		switch rng.IntN(5) {
		case 0, 1:
			add(&doc, used, maybeMix(rng, pick(rng, flagNames)), genValue(rng, 0, true))
		case 2:
			s := pick(rng, sections)
			if used[s] {
				continue
			}
			sec := ynode{isMap: true, flow: rng.IntN(5) == 0}
			secUsed := map[string]bool{}
			for range rng.IntN(5) {
				k := pick(rng, flagNames)
				if rng.IntN(4) == 0 {
					k = pick(rng, unknownKeys)
				}
				add(&sec, secUsed, maybeMix(rng, k), genValue(rng, 1, !sec.flow))
			}
			add(&doc, used, maybeMix(rng, s), sec)
		case 3:
			add(&doc, used, maybeMix(rng, pick(rng, topKeys)), genValue(rng, 0, true))
		case 4:
			s, k := pick(rng, sections), pick(rng, flagNames)
			add(&doc, used, maybeMix(rng, s+"."+k), ynode{scalar: pick(rng, yamlScalars)})
			dotted[s+"."+k] = true // any spelling
		}
	}
	// A key spelt `run.ttl` holds a scalar, and `ttl` inside `run` is no
	// map: else which of them viper's AllKeys lists depends on map order.
	for j, s := range doc.keys {
		sec := doc.vals[j]
		for i, k := range sec.keys {
			if dotted[strings.ToLower(s+"."+k)] && sec.vals[i].isMap {
				sec.vals[i] = ynode{scalar: "1"}
			}
		}
	}
	return doc
}

func maybeMix(rng *rand.Rand, k string) string {
	if rng.IntN(4) == 0 {
		return mixCase(rng, k)
	}
	return k
}

// genValue is a random value at depth; block says block style is allowed.
func genValue(rng *rand.Rand, depth int, block bool) ynode {
	n := rng.IntN(10)
	if depth > 2 {
		n = 0
	}
	switch {
	case n < 5:
		if block && rng.IntN(5) == 0 {
			return ynode{scalar: pick(rng, blockScalars)}
		}
		return ynode{scalar: pick(rng, yamlScalars)}
	case n < 8:
		l := ynode{isList: true, flow: !block || rng.IntN(2) == 0}
		for range rng.IntN(4) {
			l.list = append(l.list, genValue(rng, depth+1, false))
		}
		return l
	default:
		m := ynode{isMap: true, flow: !block || rng.IntN(2) == 0}
		used := map[string]bool{}
		odd := false
		for range rng.IntN(4) {
			k := pick(rng, unknownKeys)
			if !odd && rng.IntN(4) == 0 {
				k, odd = pick(rng, oddKeys), true
			} else {
				k = maybeMix(rng, k)
			}
			if used[strings.ToLower(k)] {
				continue
			}
			used[strings.ToLower(k)] = true
			m.keys = append(m.keys, k)
			m.vals = append(m.vals, genValue(rng, depth+1, !m.flow))
		}
		return m
	}
}

// render writes the value as YAML, a block one indented by indent.
func (n ynode) render(indent string) string {
	var b strings.Builder
	switch {
	case n.isList && n.flow:
		b.WriteString("[")
		for i, v := range n.list {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.render(""))
		}
		b.WriteString("]")
	case n.isList:
		if len(n.list) == 0 {
			return "[]"
		}
		for _, v := range n.list {
			b.WriteString("\n" + indent + "- " + v.render(indent+"  "))
		}
	case n.isMap && n.flow:
		b.WriteString("{")
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k + ": " + n.vals[i].render(""))
		}
		b.WriteString("}")
	case n.isMap:
		if len(n.keys) == 0 {
			return "{}"
		}
		for i, k := range n.keys {
			if indent != "" || i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(indent + k + ":")
			if s := n.vals[i].render(indent + "  "); s != "" && !strings.HasPrefix(s, "\n") {
				b.WriteString(" " + s)
			} else {
				b.WriteString(s)
			}
		}
		if indent == "" {
			b.WriteString("\n")
		}
	default:
		return n.scalar
	}
	return b.String()
}

// paths lists the dotted paths to the value's parts (list elements by
// index), lowercased.
func (n ynode) paths(prefix string) []string {
	var out []string
	join := func(k string) string {
		if prefix == "" {
			return strings.ToLower(k)
		}
		return prefix + "." + strings.ToLower(k)
	}
	for i, k := range n.keys {
		p := join(k)
		out = append(out, p)
		out = append(out, n.vals[i].paths(p)...)
	}
	for i, v := range n.list {
		p := join(fmt.Sprint(i))
		out = append(out, p)
		out = append(out, v.paths(p)...)
	}
	return out
}
