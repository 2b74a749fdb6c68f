// Package rules embeds lockctl's Prometheus alerting rules, so that
// `lockctl exporter --print-rules` prints the committed file itself.
package rules

import _ "embed"

// YAML is lockctl-rules.yml.
//
//go:embed lockctl-rules.yml
var YAML string
