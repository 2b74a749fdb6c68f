package promtest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Dashboard is the part of a Grafana dashboard's JSON model that the tests
// hold to: what Grafana needs to import it anywhere, and the queries.
type Dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *Datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	raw []byte
}

// Panel is one panel (rows nest theirs).
type Panel struct {
	ID         int         `json:"id"`
	Title      string      `json:"title"`
	Type       string      `json:"type"`
	Datasource *Datasource `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *Datasource `json:"datasource"`
	} `json:"targets"`
	Panels []Panel `json:"panels"`
}

// Datasource is a panel's or a query's data source reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// LoadDashboard reads a dashboard's JSON model.
func LoadDashboard(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &Dashboard{raw: b}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return d, nil
}

// PanelQuery is one query of one panel.
type PanelQuery struct {
	Panel, RefID, Expr string
}

// Queries lists every panel's queries (rows included), in order.
func (d *Dashboard) Queries() []PanelQuery {
	var out []PanelQuery
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, PanelQuery{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

var uidRE = regexp.MustCompile(`"uid"\s*:\s*"([^"]*)"`)

// Check holds the model to what makes it importable into any Grafana: a
// schemaVersion, a data source template variable of type prometheus, every
// panel and query using it (never a hard-coded data source UID), every
// panel other than a row with at least one query, unique panel IDs.
func (d *Dashboard) Check() error {
	var errs []string
	if d.SchemaVersion < 30 {
		errs = append(errs, fmt.Sprintf("schemaVersion %d: want a current one (30 or more)", d.SchemaVersion))
	}
	if d.Title == "" || d.UID == "" {
		errs = append(errs, "no title or uid")
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && strings.Trim(string(v.Query), `"`) == "prometheus" {
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		errs = append(errs, "no datasource template variable of type prometheus")
	}
	want := map[string]bool{"${" + dsVar + "}": true, "$" + dsVar: true}
	for _, m := range uidRE.FindAllSubmatch(d.raw, -1) {
		if u := string(m[1]); u != d.UID && !want[u] {
			errs = append(errs, fmt.Sprintf("hard-coded datasource uid %q", u))
		}
	}
	ids := map[int]bool{}
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if ids[p.ID] {
				errs = append(errs, fmt.Sprintf("panel id %d used twice", p.ID))
			}
			ids[p.ID] = true
			if p.Type != "row" {
				if p.Datasource == nil || !want[p.Datasource.UID] {
					errs = append(errs, fmt.Sprintf("panel %q: datasource is not $%s", p.Title, dsVar))
				}
				if len(p.Targets) == 0 {
					errs = append(errs, fmt.Sprintf("panel %q has no query", p.Title))
				}
				for _, t := range p.Targets {
					if strings.TrimSpace(t.Expr) == "" {
						errs = append(errs, fmt.Sprintf("panel %q query %s is empty", p.Title, t.RefID))
					}
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(errs) > 0 {
		return fmt.Errorf("dashboard %s: %s", d.Title, strings.Join(errs, "; "))
	}
	return nil
}

// Expand replaces Grafana's variables in a query as Grafana would for the
// "All" choice and a short range: template variables with ".*", the
// interval variables with durations Prometheus accepts.
func Expand(expr string) string {
	r := strings.NewReplacer(
		"$__rate_interval", "1m", "${__rate_interval}", "1m",
		"$__interval", "15s", "${__interval}", "15s",
		"$__range", "5m", "${__range}", "5m",
	)
	expr = r.Replace(expr)
	return regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`).ReplaceAllString(expr, ".*")
}
