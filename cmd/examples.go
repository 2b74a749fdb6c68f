package cmd

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are the Example sections of the help, by command path below the
// root. TestExamplesParse checks that every command has two to four and
// that each lockctl invocation in them parses as written.
var examples = map[string]string{
	"": `  lockctl run nightly -n -- /usr/local/bin/backup.sh
  TOKEN=$(lockctl lock deploy) && lockctl release deploy --token "$TOKEN"
  lockctl ls
  lockctl doctor`,
	"version": `  lockctl version
  lockctl version -o json`,
	"completion": `  source <(lockctl completion bash)
  lockctl completion zsh > "${fpath[1]}/_lockctl"
  lockctl completion fish > ~/.config/fish/completions/lockctl.fish`,
	"run": `  lockctl run nightly -n -- /usr/local/bin/backup.sh
  lockctl run deploy -w 10m --ttl 1m -- ./deploy.sh prod
  # readers overlap; an exclusive 'run catalog' waits for them:
  lockctl run catalog --shared -- ./export-catalog.sh
  lockctl run sync --max-runtime 1h --report-file sync.json -- ./sync.sh`,
	"lock": `  TOKEN=$(lockctl lock deploy --ttl 10m) || exit
  # sets LOCKCTL_KEY, LOCKCTL_TOKEN and LOCKCTL_FENCE, or exits:
  eval "$(lockctl lock deploy -o env || echo "exit $?")"
  lockctl lock deploy --test    # exit 0 free, 1 held
  # one of any number of shared holders:
  TOKEN=$(lockctl lock catalog --shared --ttl 5m) || exit`,
	"renew": `  lockctl renew deploy --token "$TOKEN"
  lockctl renew deploy --token "$TOKEN" --ttl 20m`,
	"release": `  lockctl release deploy --token "$TOKEN"
  lockctl release deploy   # LOCKCTL_TOKEN, when LOCKCTL_KEY is lock:deploy`,
	"fence": `  lockctl fence next deploy
  lockctl fence peek deploy
  lockctl fence check bucket/report.csv "$LOCKCTL_FENCE"`,
	"fence next": `  lockctl fence next deploy
  FENCE=$(lockctl fence next deploy)`,
	"fence peek": `  lockctl fence peek deploy
  lockctl fence peek deploy -o json`,
	"inspect": `  lockctl inspect locks 'deploy*'
  lockctl inspect lock deploy
  lockctl inspect orphans --check
  lockctl inspect force-release deploy --token 3f2a9c01b7de --reason "job died"`,
	"inspect locks": `  lockctl inspect locks
  lockctl inspect locks 'deploy:*' --wide
  lockctl inspect locks --sort ttl -o json`,
	"ls": `  lockctl ls
  lockctl ls 'deploy:*' -o wide
  watch lockctl ls -o table`,
	"inspect lock": `  lockctl inspect lock deploy
  lockctl inspect lock deploy -o json`,
	"inspect orphans": `  lockctl inspect orphans
  lockctl inspect orphans --check       # exit 1 if any lock key has no TTL
  lockctl inspect orphans 'job:*' --fix expire:1h --yes`,
	"inspect force-release": `  lockctl inspect force-release deploy --token 3f2a9c01b7de --reason "job died"
  lockctl inspect force-release deploy --token "$TOKEN"`,
	"inspect audit": `  lockctl inspect audit
  lockctl inspect audit -n 20 -o json`,
	"inspect once": `  lockctl inspect once report:2025-03-01
  lockctl inspect once "charge:$ORDER" -o json
  lockctl inspect once --unknown 'charge:*'`,
	"once resolve": `  lockctl once resolve "charge:$ID" --succeeded --reason "provider has it"
  lockctl once resolve "charge:$ID" --retry --reason "provider has no charge"
  lockctl once resolve migrate:42 --failed --exit 3 --reason "half applied"`,
	"doctor": `  lockctl doctor
  lockctl doctor --url rediss://redis.internal:6380/0 -o json`,
	"simulate list": `  lockctl simulate list
  lockctl simulate list -o json`,
	"limit": `  lockctl limit github --rate 100/1m -- curl -fsS https://api.github.com/zen
  lockctl limit mail --rate 10/s --wait -- ./send-one.sh
  lockctl limit login:alice --rate 5/1m --algo sliding-log || echo "slow down"`,
	"exporter": `  lockctl exporter --listen 0.0.0.0:9477
  lockctl exporter --scan-interval 30s --max-names 50
  lockctl exporter --print-rules > /etc/prometheus/rules/lockctl.yml`,
	"top": `  lockctl top
  lockctl top --interval 2s
  lockctl top --prefix job:`,
	"once": `  lockctl once "report:$(date +%F)" --result-ttl 48h -- ./report.sh
  lockctl once "charge:$ID" --at-most-once --fingerprint "$SUM" -- ./charge.sh
  lockctl once migrate:42 --rerun-failed -- ./migrate.sh`,
}

// addExamples sets the Example section of every command under root that
// has one in examples.
func addExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if ex, ok := examples[path]; ok && c.Example == "" {
			c.Example = ex
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
