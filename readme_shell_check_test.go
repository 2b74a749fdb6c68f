package main

import (
	"reflect"
	"testing"
)

// TestReadmeCommandCheck: the README test finds lockctl command lines
// wherever a shell would run them, and refuses commands, flags and
// arguments lockctl would refuse.
func TestReadmeCommandCheck(t *testing.T) {
	for _, tc := range []struct {
		text    string
		shell   bool
		bin     string
		args    []string
		invalid bool
	}{
		{text: `eval "$(lockctl lock deploy --ttl 10m -o env || echo "exit $?")"`, shell: true, bin: "lockctl", args: []string{"lock", "deploy", "--ttl", "10m", "-o", "env"}},
		{text: `lockctl exporter --print-rules | sudo tee /etc/prometheus/lockctl-rules.yml >/dev/null`, shell: true, bin: "lockctl", args: []string{"exporter", "--print-rules"}},
		{text: `TOKEN=$(lockctl lock deploy) || exit   # comment -n`, shell: true, bin: "lockctl", args: []string{"lock", "deploy"}},
		{text: `source <(lockctl completion bash)`, shell: true, bin: "lockctl", args: []string{"completion", "bash"}},
		{text: `*/5 * * * * LOCKCTL_URL=redis://h:6379/0 /usr/local/bin/lockctl run sync -n -E 0 -- /opt/x.sh >>/var/log/x.log 2>&1`, bin: "/usr/local/bin/lockctl", args: []string{"run", "sync", "-n", "-E", "0", "--", "/opt/x.sh"}},
		{text: `ExecStart=/usr/local/bin/lockctl run reindex -n --max-runtime 2h -- /opt/app/reindex`, bin: "/usr/local/bin/lockctl", args: []string{"run", "reindex", "-n", "--max-runtime", "2h", "--", "/opt/app/reindex"}},
		{text: `  run: lockctl run deploy-prod -w 15m -- ./deploy.sh prod`, bin: "lockctl", args: []string{"run", "deploy-prod", "-w", "15m", "--", "./deploy.sh", "prod"}},
		{text: `lockctl run deploy --tll 1m -- ./x`, shell: true, bin: "lockctl", args: []string{"run", "deploy", "--tll", "1m", "--", "./x"}, invalid: true},
		{text: `lockctl inspct locks`, shell: true, bin: "lockctl", args: []string{"inspct", "locks"}, invalid: true},
		{text: `lockctl lock deploy extra`, shell: true, bin: "lockctl", args: []string{"lock", "deploy", "extra"}, invalid: true},
		{text: `lockctl run deploy -w forever -- ./x`, shell: true, bin: "lockctl", args: []string{"run", "deploy", "-w", "forever", "--", "./x"}, invalid: true},
	} {
		calls := findLockctlCalls(tc.text, tc.shell)
		if len(calls) != 1 {
			t.Errorf("%q: found %d lockctl calls, want 1: %+v", tc.text, len(calls), calls)
			continue
		}
		c := calls[0]
		if c.bin != tc.bin || !reflect.DeepEqual(c.args, tc.args) {
			t.Errorf("%q: found %s %q, want %s %q", tc.text, c.bin, c.args, tc.bin, tc.args)
		}
		if err := checkLockctlArgs(c.args); (err != nil) != tc.invalid {
			t.Errorf("%q: check says %v, want invalid=%v", tc.text, err, tc.invalid)
		}
	}
}
