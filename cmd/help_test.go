package cmd_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/testkit/shellwords"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func commandTree(t *testing.T) *cobra.Command {
	t.Helper()
	io, _, _, _ := ui.Test()
	return cmd.NewRootCmd(cmd.NewFactory(io))
}

func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		walkCommands(sub, fn)
	}
}

// realDefaults are the contract's defaults for the flags whose help shows
// one: what the help says must be what a run does.
var realDefaults = map[string]string{
	"url": `"redis://127.0.0.1:6379/0"`, "prefix": `"lock:"`, "output": "text", "color": "auto",
	"timeout": "5s", "ttl": "30s", "kill-after": "5s", "on-lost": "term", "conflict-exit-code": "75",
	"algo": "gcra", "cost": "1", "second": "50ms", "result-ttl": "", "listen": "", "scan-interval": "", "max-names": "",
	"renew ttl": "", "once ttl": "",
}

// computedDefaults are flags whose default is not a value but a rule; the
// help must state it.
var computedDefaults = map[string]string{
	"lock wait": "default: wait until acquired", "run wait": "default: wait until acquired",
	"run renew-every": "default: ttl/6", "run max-runtime": "default: no limit",
	"renew token": "default: LOCKCTL_TOKEN", "release token": "default: LOCKCTL_TOKEN",
	"renew ttl": "default: the TTL the lease was taken with",
}

var defaultRE = regexp.MustCompile(`\(default[ :]`)

// TestFlagHelpDefaults walks the command tree: no flag's help shows two
// defaults, a default that is not the real one, a zero duration as its
// default (zero means "unset": the meaning is in the text), a type name
// taken from back-quoted words, or a long name that repeats the shorthand.
func TestFlagHelpDefaults(t *testing.T) {
	root := commandTree(t)
	walkCommands(root, func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			fs := pflag.NewFlagSet("", pflag.ContinueOnError)
			fs.AddFlag(fl)
			line := strings.TrimSpace(fs.FlagUsages())
			where := c.CommandPath() + " --" + fl.Name + ": " + line
			if n := len(defaultRE.FindAllString(line, -1)); n > 1 {
				t.Errorf("%s: %d defaults", where, n)
			}
			if strings.Contains(fl.Usage, "`") {
				t.Errorf("%s: back quotes in the usage become the value's name", where)
			}
			if fl.Shorthand != "" && fl.Name == fl.Shorthand {
				t.Errorf("%s: the long name repeats the shorthand", where)
			}
			if phrase, ok := computedDefaults[c.Name()+" "+fl.Name]; ok && !strings.Contains(line, phrase) {
				t.Errorf("%s: does not say the default (%s)", where, phrase)
			}
			if _, shown, ok := strings.Cut(line, "(default "); ok {
				shown = strings.TrimSuffix(shown, ")")
				if fl.Value.Type() == "duration" && (shown == "0s" || shown == "0") {
					t.Errorf("%s: a zero duration shown as the default", where)
				}
				want, known := realDefaults[c.Name()+" "+fl.Name]
				if !known {
					want, known = realDefaults[fl.Name]
				}
				if known && want != "" && shown != want {
					t.Errorf("%s: shows %s, the real default is %s", where, shown, want)
				}
			}
		})
	})
}

// exampleCalls extracts the lockctl invocations of an Example section as
// argument lists: from each "lockctl " to the end of its shell command
// (an unquoted ), |, ;, &, <, > or #), split the way sh splits words.
func exampleCalls(example string) [][]string {
	var calls [][]string
	for _, line := range strings.Split(example, "\n") {
		line = shellwords.StripComment(line)
		for i := strings.Index(line, "lockctl "); i >= 0; {
			words, end := shellwords.Command(line[i+len("lockctl "):])
			calls = append(calls, words)
			rest := line[i+len("lockctl ")+end:]
			j := strings.Index(rest, "lockctl ")
			if j < 0 {
				break
			}
			line, i = rest, j
		}
	}
	return calls
}

// TestExamplesParse: every command has an Example section of two to four
// invocations (comment lines aside), and each lockctl call in it finds its command, parses its
// flags and passes its argument check, as written.
func TestExamplesParse(t *testing.T) {
	root := commandTree(t)
	walkCommands(root, func(c *cobra.Command) {
		calls := exampleCalls(c.Example)
		lines := 0
		for _, l := range strings.Split(strings.TrimSpace(c.Example), "\n") {
			if strings.TrimSpace(shellwords.StripComment(l)) != "" {
				lines++
			}
		}
		if lines < 2 || lines > 4 || len(calls) == 0 {
			t.Errorf("%s: %d example lines, %d lockctl calls; want 2 to 4", c.CommandPath(), lines, len(calls))
		}
		for _, args := range calls {
			fresh := commandTree(t)
			found, rest, err := fresh.Find(args)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), args, err)
				continue
			}
			if err := found.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), args, err)
				continue
			}
			if err := found.ValidateArgs(found.Flags().Args()); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), args, err)
			}
			if err := found.ValidateRequiredFlags(); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), args, err)
			}
		}
	})
}

// TestUnknownCommandOneLine: cobra's suggestions for a mistyped command
// read as words on the error line, while what the user typed is still
// escaped like any other text of a diagnostic (no raw terminal controls).
func TestUnknownCommandOneLine(t *testing.T) {
	io, _, _, errOut := ui.Test()
	if code := cmd.MainArgs([]string{"rn"}, io); code != cmd.ExitUsage {
		t.Fatalf("exit %d, want %d", code, cmd.ExitUsage)
	}
	want := "lockctl: unknown command \"rn\" for \"lockctl\"; did you mean ls or run?\n" +
		"lockctl: hint: see `lockctl --help` for the commands\n"
	if got := errOut.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}

	io, _, _, errOut = ui.Test()
	cmd.MainArgs([]string{"r\x1b]0;owned\x07un"}, io)
	if got := errOut.String(); strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, `\x1b]0;owned`) {
		t.Errorf("a typed control character reached the terminal unescaped: %q", got)
	}
}
