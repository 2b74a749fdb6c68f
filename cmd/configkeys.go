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
	for _, key := range keys {
		section, sub, nested := strings.Cut(key, ".")
		switch {
		case !nested && (global[key] || local[key] || extraConfigKeys[key]):
			continue
		case nested && sections[section] != nil && sections[section][sub]:
			continue
		}
		unknown = append(unknown, key)
	}
	sort.Strings(unknown)
	var all map[string]bool
	for i, key := range unknown {
		if i == maxUnknownKeyWarnings {
			f.IO.Errorf("warning: config file %s: %d more unknown keys (ignored)", file, len(unknown)-i)
			break
		}
		section, sub, nested := strings.Cut(key, ".")
		var hint string
		switch {
		case nested && sections[section] != nil && global[sub]:
			hint = "global settings go at the top level"
		case nested && sections[section] == nil:
			hint = "no command is called " + section
		default:
			pool := sections[section]
			if !nested || pool == nil {
				if all == nil {
					all = mergeKeys(global, local, sections)
				}
				pool = all
			}
			if best := nearest(sub, key, nested, pool); best != "" {
				hint = "did you mean " + best + "?"
			}
		}
		msg := "warning: config file " + file + ": unknown key " + key + " (ignored)"
		if hint != "" {
			msg += "; " + hint
		}
		f.IO.Errorf("%s", msg)
	}
}

// maxUnknownKeyWarnings bounds the unknown-key warnings (and the search
// for the nearest known key, which compares with every known key): past
// it, one line counts the rest.
const maxUnknownKeyWarnings = 20

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
	if len(typed) > 64 {
		// No key is that long, and the distance costs its length
		// times each known key's.
		return ""
	}
	best, bestD := "", 3
	for k := range pool {
		if d := editDistance(typed, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}
