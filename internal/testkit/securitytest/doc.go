// Package securitytest attacks lockctl as a user of the same machine, a
// server that is no Redis and a typo would: its tests (security_*.txtar
// scripts and Go tests) each show an attack failing, beside a control
// (where one exists) in which the same attack succeeds without the
// protection. `make test` runs them with the rest of the suite.
package securitytest
