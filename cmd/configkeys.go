package cmd

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// extraConfigKeys are config keys that are not flag names.
var extraConfigKeys = map[string]bool{"events": true}

// warnUnknownConfigKeys reports, on stderr, every key of the config file
// that lockctl does not read: a misspelt `tll: 5m` would otherwise be
// silently ignored and the default used. Top-level keys are long flag
// names (of any command) or command sections; a section's keys are the
// flags of that command and its subcommands, global flags excepted (those
// go at the top level). keys are the file's, as viper flattens them.
func (f *Factory) warnUnknownConfigKeys(root *cobra.Command, file string, keys []string) {
	global := map[string]bool{}
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) { global[fl.Name] = true })
	local := map[string]bool{}
	sections := map[string]map[string]bool{}
	for _, top := range root.Commands() {
		own := map[string]bool{}
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
				if !global[fl.Name] {
					own[fl.Name] = true
					local[fl.Name] = true
				}
			})
			for _, sub := range c.Commands() {
				walk(sub)
			}
		}
		walk(top)
		sections[top.Name()] = own
	}
	var unknown []string
	hint := map[string]string{}
	for _, key := range keys {
		section, sub, nested := strings.Cut(key, ".")
		switch {
		case !nested && (global[key] || local[key] || extraConfigKeys[key]):
			continue
		case nested && sections[section] != nil && sections[section][sub]:
			continue
		case nested && sections[section] != nil && global[sub]:
			hint[key] = "global settings go at the top level"
		case nested && sections[section] == nil:
			hint[key] = "no command is called " + section
		}
		if hint[key] == "" {
			var pool map[string]bool
			if nested && sections[section] != nil {
				pool = sections[section]
			} else {
				pool = mergeKeys(global, local, sections)
			}
			if best := nearest(sub, key, nested, pool); best != "" {
				hint[key] = "did you mean " + best + "?"
			}
		}
		unknown = append(unknown, key)
	}
	sort.Strings(unknown)
	for _, key := range unknown {
		msg := "warning: config file " + file + ": unknown key " + key + " (ignored)"
		if h := hint[key]; h != "" {
			msg += "; " + h
		}
		f.IO.Errorf("%s", msg)
	}
}

func mergeKeys(global, local map[string]bool, sections map[string]map[string]bool) map[string]bool {
	m := map[string]bool{}
	for k := range global {
		m[k] = true
	}
	for k := range local {
		m[k] = true
	}
	for k := range sections {
		m[k] = true
	}
	return m
}

// nearest is the known key closest to the unknown one, within two edits.
func nearest(sub, key string, nested bool, pool map[string]bool) string {
	typed := key
	if nested {
		typed = sub
	}
	best, bestD := "", 3
	for k := range pool {
		if d := editDistance(typed, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}
