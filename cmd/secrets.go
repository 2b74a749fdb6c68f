package cmd

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// secretEnv are variables that hold nothing but a Redis secret: CMD never
// inherits them.
var secretEnv = []string{"LOCKCTL_PASSWORD"}

// childSecretEnv is what every command that starts a CMD (run, once,
// limit) takes out of the environment CMD inherits: the variables of
// secretEnv (unset), and the password of every URL lockctl read from its
// own variables (set again without it). A nested `lockctl` in CMD still
// reaches the same servers, with LOCKCTL_PASSWORD_FILE for the password.
// REDIS_URL is passed on as it is: other programs read it too, and it
// reached CMD's parent with its password before lockctl ran.
func (f *Factory) childSecretEnv() (unset, set []string) {
	unset = append(unset, secretEnv...)
	if u := f.Getenv("LOCKCTL_URL"); u != "" {
		if clean, changed := withoutPassword(u); changed {
			set = append(set, "LOCKCTL_URL="+clean)
		}
	}
	if list := f.Getenv("LOCKCTL_REDLOCK"); list != "" {
		parts := strings.Split(list, ",")
		changed := false
		for i, p := range parts {
			if clean, c := withoutPassword(strings.TrimSpace(p)); c {
				parts[i], changed = clean, true
			}
		}
		if changed {
			set = append(set, "LOCKCTL_REDLOCK="+strings.Join(parts, ","))
		}
	}
	return unset, set
}

// withoutPassword is raw without the password of its user info or of a
// password= query parameter; changed says whether there was one. A URL
// that does not parse has its user info replaced as redactURL does: it is
// of no use to CMD, and it must not carry the password there either.
func withoutPassword(raw string) (clean string, changed bool) {
	if len(urlSecrets(raw)) == 0 {
		return raw, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return redactURL(raw), true
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			if name := u.User.Username(); name != "" {
				u.User = url.User(name)
			} else {
				u.User = nil
			}
		}
	}
	if q := u.Query(); len(q) > 0 {
		for k := range q {
			if isPasswordParam(k) {
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String(), true
}

// isPasswordParam: query parameters that carry a password in the URL
// forms of other Redis clients (go-redis itself refuses them).
func isPasswordParam(k string) bool {
	switch strings.ToLower(k) {
	case "password", "pass", "pwd", "passwd", "secret":
		return true
	}
	return false
}

// userInfoPart is the user:password@ part of a URL written with one, two,
// three or no slashes after the scheme (redis:/:pw@h, redis:///:pw@h).
var userInfoPart = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:/{0,3}([^/?#]*)@`)
})

// urlSecrets are the passwords written in raw, whether or not it parses:
// the user info's password (and, when it does not parse as one, the
// whole user info) and password= query values. Messages about raw hide
// every one of them (redactSecrets).
func urlSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
	}
	// info is what may be user info: its password, or all of it when it
	// has no ':' (no telling which part is secret).
	info := func(s string) {
		if _, pw, ok := strings.Cut(s, ":"); ok {
			add(pw)
		}
		add(s)
	}
	u, err := url.Parse(raw)
	if err == nil && u.User != nil {
		if p, has := u.User.Password(); has {
			add(p)
			if _, pw, ok := strings.Cut(u.User.String(), ":"); ok {
				add(pw)
			}
		}
	} else if m := userInfoPart().FindStringSubmatch(raw); m != nil {
		info(m[1])
	} else if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		// An '@' where no URL form puts user info (a typo in the
		// scheme, a path): everything before it may be secret.
		start := 0
		if i := strings.Index(raw, "://"); i >= 0 && i < at {
			start = i + 3
		} else if i := strings.Index(raw, ":"); i >= 0 && i < at {
			start = i + 1
		}
		info(strings.TrimLeft(raw[start:at], "/"))
	}
	if _, query, ok := strings.Cut(raw, "?"); ok {
		query, _, _ = strings.Cut(query, "#")
		for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == '?' || r == ';' }) {
			k, v, _ := strings.Cut(kv, "=")
			if isPasswordParam(k) {
				add(v)
			}
		}
	}
	return out
}

// redactRefusedURL is raw for a message that refuses it (bad --url): the
// whole user info hidden, the user name with the password
// (redis://***@host), since a user name can be a secret too, and password=
// query values as redactURL hides them. Everything between the scheme and
// the last '@' is taken for user info, whatever a parser makes of it: a URL
// that is refused may be read otherwise by the next parser (an '@' after a
// '#' is a fragment to Go's, and part of the password to a person).
func redactRefusedURL(raw string) string {
	out := raw
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	if at := strings.LastIndexByte(raw, '@'); at >= start {
		out = raw[:start] + "***" + raw[at:]
	}
	return redactSecrets(out, urlSecrets(raw))
}

// knownSecrets are the passwords this invocation was given, in every
// place lockctl reads one from, for redactError.
func (f *Factory) knownSecrets() []string {
	var out []string
	for _, raw := range append([]string{f.G.URL, f.Getenv("LOCKCTL_URL"), f.Getenv("REDIS_URL")}, f.G.Redlock...) {
		out = append(out, urlSecrets(strings.TrimSpace(raw))...)
	}
	for _, raw := range strings.Split(f.Getenv("LOCKCTL_REDLOCK"), ",") {
		out = append(out, urlSecrets(strings.TrimSpace(raw))...)
	}
	out = append(out, f.Getenv("LOCKCTL_PASSWORD"), f.filePassword)
	return out
}

// quotedURL is something in a message that may be a URL with user info
// or a query.
var quotedURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*:[^\s"'` + "`" + `]*[@?][^\s"'` + "`" + `]*`)
})

// minRedacted is the shortest secret redactError hides: a password of one
// or two characters protects nothing, and hiding every "1" in a message
// would garble it.
const minRedacted = 3

// redactError is err with every secret hidden from its message: the last
// guard before anything is printed, behind each message's own care.
func redactError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var long []string
	for _, s := range secrets {
		if len(s) >= minRedacted {
			long = append(long, s)
		}
	}
	msg := err.Error()
	// And any URL the message quotes, wherever it came from (a URL set
	// as another setting's value, say).
	for _, u := range quotedURL().FindAllString(msg, -1) {
		long = append(long, urlSecrets(u)...)
	}
	if red := redactSecrets(msg, long); red != msg {
		return &msgError{msg: red, err: err}
	}
	return err
}

// redactSecrets replaces every secret in msg with ***, longest first, so
// that a secret holding another is hidden whole.
func redactSecrets(msg string, secrets []string) string {
	ss := append([]string(nil), secrets...)
	for i := range ss {
		for j := i + 1; j < len(ss); j++ {
			if len(ss[j]) > len(ss[i]) {
				ss[i], ss[j] = ss[j], ss[i]
			}
		}
	}
	for _, s := range ss {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return msg
}

// warnOnce prints msg on stderr the first time key is seen.
func (f *Factory) warnOnce(key, msg string) {
	f.warnMu.Lock()
	defer f.warnMu.Unlock()
	if f.warned[key] {
		return
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[key] = true
	f.IO.Errorf("%s", msg)
}

// checkTLSScheme refuses TLS settings for a URL that does not use TLS
// (redis://, unix://): they would be ignored, and the password sent in
// clear to a server the user meant to reach over TLS.
func (f *Factory) checkTLSScheme(scheme, flag string) error {
	g := &f.G
	if scheme == "rediss" {
		return nil
	}
	var set []string
	for _, s := range []struct {
		on   bool
		name string
	}{{g.TLSCA != "", "--tls-ca"}, {g.TLSCert != "", "--tls-cert"}, {g.TLSKey != "", "--tls-key"}, {g.TLSInsecure, "--tls-insecure"}} {
		if s.on {
			set = append(set, s.name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return &UsageError{Err: fmt.Errorf("%s is set, but %s %s:// does not use TLS: the password would go in clear", strings.Join(set, ", "), flag, scheme),
		Hints: []string{"for TLS use rediss://host:port/db; for a server without TLS drop the TLS settings (flags, LOCKCTL_TLS_*, the config file)"}}
}

// checkSecretFile warns, as ssh does for keys, when a file lockctl reads a
// secret from (or its configuration: secret false) could be read or
// changed by other users: readable by others (a secret only), writable
// by its group or others, or in a directory they may write to without the
// sticky bit (they could replace it). It only warns: the file is the
// user's, and the fix (chmod) is theirs to make.
func (f *Factory) checkSecretFile(what, path string, secret bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	var why, fix []string
	m := fi.Mode().Perm()
	if secret && m&0o004 != 0 {
		why = append(why, fmt.Sprintf("readable by others (mode %04o)", m))
	}
	if m&0o022 != 0 {
		why = append(why, fmt.Sprintf("writable by others (mode %04o)", m))
	}
	switch {
	case secret && m&0o026 != 0:
		fix = append(fix, "chmod 600 "+path)
	case m&0o022 != 0:
		fix = append(fix, "chmod go-w "+path)
	}
	dir := filepath.Dir(path)
	if di, err := os.Stat(dir); err == nil && di.Mode().Perm()&0o022 != 0 && di.Mode()&os.ModeSticky == 0 {
		why = append(why, fmt.Sprintf("in a directory others may write to (%s, mode %04o)", dir, di.Mode().Perm()))
		fix = append(fix, "chmod go-w "+dir)
	}
	if len(why) == 0 {
		return
	}
	f.warnOnce("perm:"+path, fmt.Sprintf("warning: %s %s is %s: other users could read or replace it; %s",
		what, path, strings.Join(why, " and "), strings.Join(fix, "; ")))
}

// checkConfigFile checks the config file's permissions: a secret when it
// holds a password (in url or redlock), else only against being changed
// (it chooses the server the password is sent to, and --tls-insecure).
// resolve calls it once the file is read, before anything else is bound
// to the factory's viper: its values are the file's alone.
func (f *Factory) checkConfigFile(path string) {
	v := f.Viper
	secret := false
	for _, key := range []string{"url", "redlock"} {
		for _, u := range strings.Split(configString(v.Get(key)), ",") {
			if len(urlSecrets(strings.TrimSpace(u))) > 0 {
				secret = true
			}
		}
	}
	secret = secret || v.InConfig("password")
	f.checkSecretFile("config file", path, secret)
}
