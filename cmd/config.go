package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Settings are read by the factory's one viper (Factory.Viper): a flag set
// on the command line, else a LOCKCTL_* variable bound to its key, else the
// YAML config file, else the flag's default. resolve (root.go) applies them
// to the command's flags.

// envKeys are the settings a variable sets too: LOCKCTL_ and the key upper
// cased, - as _ (SetEnvPrefix and the key replacer), then envFallback's.
var envKeys = []string{
	"url", "cluster", "sentinel", "sentinel-master", "redlock", "wait-replicas",
	"password-file", "tls-ca", "tls-cert", "tls-key", "tls-insecure", "prefix",
	"config", "output", "timeout", "no-events", "log-format",
}

// envFallback are variables read after LOCKCTL_<KEY>, in that order.
var envFallback = map[string][]string{"url": {"REDIS_URL"}}

// envBound reports whether a variable sets key (a global setting).
func envBound(key string) bool {
	for _, k := range envKeys {
		if k == key {
			return true
		}
	}
	return false
}

// envNames are the variables of key, in order of preference.
func envNames(key string) []string {
	return append([]string{"LOCKCTL_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))}, envFallback[key]...)
}

// bindEnv binds every key of envKeys to its variables.
func (f *Factory) bindEnv() error {
	v := f.Viper
	v.SetEnvPrefix("LOCKCTL")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	for _, key := range envKeys {
		var err error
		if fb := envFallback[key]; fb != nil {
			err = v.BindEnv(append([]string{key}, envNames(key)...)...)
		} else {
			err = v.BindEnv(key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// settingOrigin says where key's value came from, for messages: the
// variable that set it, else the config file (a flag on the command line
// is refused by the flag itself).
func (f *Factory) settingOrigin(key string) string {
	if envBound(key) {
		for _, name := range envNames(key) {
			if f.Getenv(name) != "" {
				return name
			}
		}
	}
	return "config file " + f.configFile
}

// Limits of the config file, so that what is not a config file is refused
// rather than read for ever: lockctl's settings are about a hundred keys.
const (
	maxConfigBytes   = 4 << 20
	maxConfigMapping = 1000 // keys in one mapping (YAML's duplicate check is quadratic in it)
)

// configSizeError is a config file over one of the limits above.
type configSizeError struct{ what string }

func (e *configSizeError) Error() string { return e.what }

// readConfigFile reads the YAML config file at path into the factory's
// viper, before anything is bound to it (so that the unknown-key check and
// the permission check see the file alone). A file that does not exist
// returns an error matching os.ErrNotExist. What is not a regular file
// (a FIFO, a terminal, /dev/stdin on a pipe) is refused without a read that
// could wait for ever for a writer; /dev/null reads as an empty file.
func (f *Factory) readConfigFile(path string) error {
	b, err := readRegularFile(path, maxConfigBytes)
	if err != nil {
		return err
	}
	if err := checkConfigShape(b); err != nil {
		return err
	}
	v := f.Viper
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return err
	}
	f.configFile = path
	return nil
}

// readRegularFile reads path whole, up to limit bytes. It opens without
// waiting (O_NONBLOCK: a FIFO's open would wait for a writer) and refuses
// anything but a regular file or /dev/null.
func readRegularFile(path string, limit int64) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
			return nil, nil
		}
		return nil, &notRegularError{kind: fileKind(fi.Mode())}
	}
	b, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &configSizeError{fmt.Sprintf("larger than %d MiB", limit>>20)}
	}
	return b, nil
}

// notRegularError is a config file that is not a regular file.
type notRegularError struct{ kind string }

func (e *notRegularError) Error() string { return "not a regular file but " + e.kind }

// fileKind names a file's type for notRegularError.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device (a terminal?)"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// checkConfigShape refuses a file with a mapping of more than
// maxConfigMapping keys, in time linear in its size: YAML's decoder checks
// a mapping's keys for duplicates pair by pair, so 200,000 keys would take
// minutes of CPU before any command runs. A file that does not parse is
// left to the decoder, which words the error.
func checkConfigShape(b []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil {
		return nil
	}
	// Aliases are not followed: the decoder bounds their expansion itself.
	stack := []*yaml.Node{&doc}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.MappingNode && len(n.Content)/2 > maxConfigMapping {
			return &configSizeError{fmt.Sprintf("line %d: a mapping of %d keys (lockctl reads at most %d)", n.Line, len(n.Content)/2, maxConfigMapping)}
		}
		stack = append(stack, n.Content...)
	}
	return nil
}

// configPath is the config file to read: --config, else LOCKCTL_CONFIG
// (through viper: config is bound to both), else the first default file
// that exists. explicit says the user named it: then it must exist.
func (f *Factory) configPath(flags *pflag.FlagSet) (path string, explicit bool, err error) {
	v := f.Viper
	if fl := flags.Lookup("config"); fl != nil {
		if err := v.BindPFlag("config", fl); err != nil {
			return "", false, err
		}
	}
	if err := v.BindEnv(append([]string{"config"}, envNames("config")...)...); err != nil {
		return "", false, err
	}
	if path = v.GetString("config"); path != "" {
		return path, true, nil
	}
	return defaultConfigFile(f.Getenv), false, nil
}

func defaultConfigFile(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		// The XDG base directory spec: a relative path is invalid and
		// is ignored (it would name a file under whatever directory
		// lockctl runs in).
		dir = ""
	}
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	for _, p := range []string{filepath.Join(dir, "lockctl", "config.yaml"), "/etc/lockctl/config.yaml"} {
		if dir == "" && !strings.HasPrefix(p, "/etc") {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// configError is the usage error for a config file that cannot be read.
func configError(path string, err error) error {
	hint := "the config file is YAML with the long flag names as keys, e.g. `url: redis://host:6379/0`"
	var nr *notRegularError
	if errors.As(err, &nr) {
		hint = "lockctl reads its config file whole before it starts: give a regular file (--config, LOCKCTL_CONFIG)"
	}
	return &UsageError{Err: fmt.Errorf("config file %s: %v", path, err), Hints: []string{hint}}
}

// parseBool is lockctl's one reading of a boolean setting, wherever it
// comes from: strconv.ParseBool's forms, and yes, no, on and off in any
// case, as people write them in YAML files and the environment.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "yes", "on":
		return true, nil
	case "no", "off":
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean: want true or false (also yes/no, on/off, 1/0)", s)
	}
	return b, nil
}

// configString renders a config value the way a flag would be typed.
func configString(val any) string {
	switch x := val.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ",")
	case []string:
		return strings.Join(x, ",")
	}
	return fmt.Sprint(val)
}
