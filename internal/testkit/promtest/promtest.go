// Package promtest starts the real Prometheus tools the monitoring tests
// check lockctl against: promtool, node_exporter's textfile collector and a
// Prometheus server. A missing tool fails the test with the command that
// installs it; nothing is skipped.
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// InstallHint is the command that installs every tool this package runs.
const InstallHint = "sudo apt-get update && sudo apt-get install -y prometheus prometheus-node-exporter (or run ./scripts/ensure-prometheus.sh)"

// otherTools are the Debian packages of the other tools that tests run.
var otherTools = map[string]string{
	"bash":            "bash",
	"dash":            "dash",
	"systemd-analyze": "systemd",
	"sqlite3":         "sqlite3",
}

// Need returns the path of bin, or an error naming the install command.
func Need(bin string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		hint := InstallHint
		if strings.HasPrefix(bin, "redis-") {
			hint = "sudo apt-get install -y redis-server (or run ./scripts/ensure-redis.sh)"
		}
		if pkg, ok := otherTools[bin]; ok {
			hint = "sudo apt-get update && sudo apt-get install -y " + pkg
		}
		return "", fmt.Errorf("%s not found; install it with: %s", bin, hint)
	}
	return p, nil
}

// Process is a started server; Stop ends it.
type Process struct {
	URL string // http://127.0.0.1:PORT
	cmd *exec.Cmd
	log *os.File
}

// Stop kills the process and waits for it.
func (p *Process) Stop() {
	if p.cmd.Process != nil {
		// Killed on purpose: neither the kill (of a process that may have
		// exited) nor the exit status it causes is an error here.
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
	_ = p.log.Close() // the log is read by name, if at all
}

func start(bin, dir, ready string, args func(addr string) []string) (*Process, error) {
	path, err := Need(bin)
	if err != nil {
		return nil, err
	}
	port, err := redistest.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	log, err := os.Create(filepath.Join(dir, bin+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args(addr)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close() // err, the start's, is the one to report
		return nil, err
	}
	p := &Process{URL: "http://" + addr, cmd: cmd, log: log}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := Get(p.URL + ready); err == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.Stop()
			b, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("%s did not become ready on %s: %s", bin, addr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NodeExporter serves the *.prom files of textDir with only the textfile
// collector on.
func NodeExporter(textDir, workDir string) (*Process, error) {
	return start("prometheus-node-exporter", workDir, "/metrics", func(addr string) []string {
		return []string{"--collector.disable-defaults", "--collector.textfile",
			"--collector.textfile.directory", textDir, "--web.listen-address", addr}
	})
}

// Prometheus runs a server that scrapes targets (host:port, or a URL whose
// host is used) every second, as one job.
func Prometheus(workDir string, targets ...string) (*Process, error) {
	cfg := filepath.Join(workDir, "prometheus.yml")
	var quoted []string
	for _, t := range targets {
		if u, err := url.Parse(t); err == nil && u.Host != "" {
			t = u.Host
		}
		quoted = append(quoted, strconv.Quote(t))
	}
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: lockctl\n    static_configs:\n      - targets: [%s]\n", strings.Join(quoted, ", "))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return start("prometheus", workDir, "/-/ready", func(addr string) []string {
		return []string{"--config.file", cfg, "--storage.tsdb.path", filepath.Join(workDir, "tsdb"),
			"--web.listen-address", addr}
	})
}

// Get fetches url and returns the body; a status other than 200 is an error.
func Get(u string) (string, error) { return GetWith(http.DefaultClient, u) }

// GetFresh is Get on a connection of its own, as a new client would.
func GetFresh(u string) (string, error) {
	return GetWith(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, u)
}

// GetWith is Get through c.
func GetWith(c *http.Client, u string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	return string(b), err
}

// QueryAll runs an instant PromQL query and returns how many series it
// returned; an error is a query Prometheus refused (a syntax error) or
// could not run.
func QueryAll(promURL, q string) (int, error) {
	body, err := Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", q, r.Error)
	}
	return len(r.Data.Result), nil
}

// Query runs an instant PromQL query and returns the value of each
// resulting series, keyed by its labels rendered as {a="b",...} ("{}" for
// none).
func Query(promURL, q string) (map[string]string, error) {
	body, err := Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  []any
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, body)
	}
	out := map[string]string{}
	for _, s := range r.Data.Result {
		var parts []string
		for k, v := range s.Metric {
			if k == "instance" || k == "job" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
		sortStrings(parts)
		if len(s.Value) == 2 {
			out["{"+strings.Join(parts, ",")+"}"] = fmt.Sprint(s.Value[1])
		}
	}
	return out, nil
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
