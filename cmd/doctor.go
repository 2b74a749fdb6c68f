package cmd

import (
	"fmt"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/spf13/cobra"
)

func newDoctorCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the Redis deployment for lock safety",
		Long: `Check the Redis deployment behind --url for lock safety and print one
verdict per check (ok, warn or fail) with why and what to do: reachable,
latency, clock, version, role, mode, maxmemory-policy, persistence,
replication and min-replicas-to-write, and the ACL permissions lockctl
needs. On a Cluster (--cluster) every master and replica is checked.

Exit status: 0 when no check fails (warnings are fine), 1 when any check
fails, 69 when the server cannot be reached or refuses the login, or a
Cluster's nodes say it is down (cluster_state:fail).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			in, err := inspector(f)
			if err != nil {
				return err
			}
			checks, derr := in.Doctor(c.Context())
			if err := printChecks(f, checks); err != nil {
				return err
			}
			if derr != nil {
				return derr
			}
			failed := 0
			for _, ck := range checks {
				if ck.Status == inspect.StatusFail {
					failed++
				}
			}
			if failed > 0 {
				return &ExitError{Code: ExitFound, Err: fmt.Errorf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
	setFinePrint(c, `Check the Redis deployment behind --url for lock safety and print one
verdict per check (ok, warn or fail) with why and what to do: reachable,
latency, clock (more than 0.1s off warns: fences after a crash or failover
rest on the clock floor, which tolerates a step back shorter than the
restart), version, role (a replica refuses writes), mode (cluster, sentinel),
maxmemory-policy (allkeys-* and volatile-* can evict locks; allkeys-* also
fence check records), persistence (without it a restart drops every lock and
fence check record; anything but AOF appendfsync always warns, as a crash
then leaves fences ordered only by the clock floor), replication
and min-replicas-to-write (only it stops a master cut off from its replicas
from taking writes; --wait-replicas makes a holder give up when its own
writes are not replicated, but does not stop another client's stale write
there), and whether the connected user may run every
command lockctl uses (ACL DRYRUN on Redis 7, else each command is tried on
scratch keys). Settings the user may not read are warnings.

On a Cluster (--cluster) the server checks run on every master and replica,
each verdict naming its node and role (a NODE column; "node" and "role" in
-o json), then a "cluster" verdict on the cluster's state and the acl check
for the whole cluster.`)
	return c
}

func printChecks(f *Factory, checks []inspect.Check) error {
	if f.G.Output == "json" {
		out := make([]map[string]string, 0, len(checks))
		for _, ck := range checks {
			m := map[string]string{"check": ck.Check, "status": string(ck.Status), "message": ck.Message, "hint": ck.Hint}
			if ck.Node != "" {
				m["node"], m["role"] = ck.Node, ck.Role
			}
			out = append(out, m)
		}
		return f.IO.PrintJSON(out)
	}
	// On a Cluster every verdict about one server names it.
	perNode := false
	for _, ck := range checks {
		perNode = perNode || ck.Node != ""
	}
	header := []string{"STATUS", "CHECK", "VERDICT"}
	if perNode {
		header = []string{"STATUS", "NODE", "CHECK", "VERDICT"}
	}
	rows := make([][]string, 0, len(checks))
	for _, ck := range checks {
		st := string(ck.Status)
		if f.IO.Tabular() {
			switch ck.Status {
			case inspect.StatusOK:
				st = f.IO.OK(st)
			case inspect.StatusWarn:
				st = f.IO.Warn(st)
			case inspect.StatusFail:
				st = f.IO.Fail(st)
			}
		}
		msg := ck.Message
		if ck.Hint != "" && f.IO.Tabular() {
			msg += f.IO.Faint(" → " + ck.Hint)
		}
		row := []string{st, ck.Check, msg}
		if perNode {
			node := "cluster"
			if ck.Node != "" {
				node = ck.Node + " (" + ck.Role + ")"
			}
			row = []string{st, node, ck.Check, msg}
		}
		if !f.IO.Tabular() {
			row = append(row, ck.Hint)
		}
		rows = append(rows, row)
	}
	return f.IO.PrintTable(ui.Table{Header: header, Rows: rows})
}
