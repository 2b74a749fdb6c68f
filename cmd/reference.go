package cmd

// The reference tables below are the one source of three things: the man
// pages' EXIT STATUS, ENVIRONMENT and FILES sections (cmd/manpage), and
// the tables under "## Exit codes", "### Environment" and
// "### Files", which TestReadmeReferenceTables holds to these rows. Cells
// are Markdown as the reference page (docs/reference.md) shows them (`code`, no links).

// RefRow is one row of a reference table: what (a code, a variable, a
// path) and its meaning.
type RefRow struct{ Key, Meaning string }

// ExitStatusTable is the exit code table of the contract.
var ExitStatusTable = []RefRow{
	{"0", "success"},
	{"child's", "`run`, `once`, `limit -- CMD`: the command's exit status; 128+N when it died of signal N. `once` also when its claim lapsed after the command had ended by itself (lockctl paused) and that status was recorded"},
	{"1", "`lock --test` found the lock held; `inspect orphans --check` found orphans; `doctor` found a failing check"},
	{"64", "usage: an unknown command or `help` topic (the nearest commands named); a bad flag, argument, duration, URL (including a port outside 1-65535, or no host) or config file (also one that is not a regular file, or a boolean setting that is not one); a NAME or KEY with a control character where lockctl would create it; `-n` with `-w D`; TLS settings with a `redis://` or `unix://` URL; `-E` outside 0..255; a `--limit N` other than the live semaphore's; `--shared` with `--limit`, or against a semaphore's holders (and `--limit` against shared holders); an exclusive `run`/`lock` re-entering a shared hold; `renew` without `--ttl` of a lock that records no TTL; `inspect force-release`, `release` or `renew` of a key under `lockctl:`, lockctl's own namespace; an `inspect force-release --token` hash prefix that several holders share, or a hex token shorter than 6 digits that is no holder's"},
	{"65", "not owner: token mismatch or lock expired on `renew`/`release`/`inspect force-release`; stale fence on `fence check`; another `--fingerprint` on `once`; `once resolve` of a key whose outcome is not unknown (done, or no record); a key of another type at the lock's name; a key lockctl reads (fence counter, semaphore, wait queue, fence-check record, audit stream, `limit:`/`once:` key) that someone else wrote with another type or a value that is no number"},
	{"69", "Redis unavailable or refused: connection refused, auth, ACL (also a command or channel refused inside a script), TLS (also `rediss://` at a server without TLS), READONLY replica, CLUSTERDOWN, LOADING, per-call timeout, too few Redlock masters, out of memory (OOM under `noeviction`), too few replicas (NOREPLICAS, or `--wait-replicas` not met), a database index the server does not have, `--cluster` or `--sentinel` at a plain server, any other error reply of the server, replies slower than the lease allows (a grant and its re-confirmation both past their local deadline), and a reply no Redis sends (not a Redis server at that address)"},
	{"70", "internal error: a bug in lockctl (the message says so; `-v` adds the stack of a panic). A panic in the renewing watchdog while CMD runs stops CMD as a lost lease would, then exits 70"},
	{"74", "lockctl's own output failed: `lock` could not write its token (text, `-o env` or `-o json`) whole to stdout (stdout closed, a full disk, a reader gone); it released the lock by that token (a re-entered hold gives back its one hold), or took nothing when stdout was closed from the start; the message says which. Also any other command whose output (a table, JSON, a detail view, a number) could not be written to stdout (a full disk). A reader that went away (`lockctl ls` piped into `head`) ends any command but `lock` silently by SIGPIPE (141), as every filter does; `run` never dies of it"},
	{"75", "not acquired: held elsewhere (`-n`), wait timed out (`-w`), semaphore full, rate limited, `once` key in progress elsewhere (also for `once resolve`), a grant or claim whose reply came after its local deadline; `-E N` replaces 75"},
	{"76", "`run`: the lock was lost while the child ran, or found gone or taken at the final release (part of the run was not covered); `once`: the claim was lost while the command ran and the command was stopped part way (nothing is recorded: never 76 as the command's outcome), or the claim was found gone, taken over or resolved by an operator when the outcome was to be recorded"},
	{"77", "`once --at-most-once`: the key's outcome is unknown (a claimant died without recording one, or its command was stopped part way), whatever `--fingerprint` the call gives; CMD did not run, nor will it until `once resolve KEY`. **An addition to the contract's table**: 75 would invite the retry loop a scheduler runs for \"busy\", and 77 is free in the contract (and is sysexits' EX_NOPERM: \"not allowed until someone acts\")"},
	{"124", "`run --max-runtime` exceeded"},
	{"126 / 127", "command not executable, or the system refused to start it (out of processes or file descriptors) / not found"},
	{"129 / 130 / 143 / 131", "interrupted by SIGHUP / SIGINT / SIGTERM / SIGQUIT while waiting (for SIGINT and SIGQUIT lockctl dies of the signal after its clean-up, as it does when the command died of one; a shell sees 130 / 131). The clean-up gets 2 s (a second signal ends it at once): a Redis call stuck on a server that never answers does not hold the signal off until `--timeout`"},
}

// EnvironmentTable lists the environment variables lockctl reads.
// TestReadmeReferenceTables also checks that every LOCKCTL_* variable the
// commands read is here.
var EnvironmentTable = []RefRow{
	{"`LOCKCTL_URL`, then `REDIS_URL`", "`--url`: the Redis URL, `redis://`, `rediss://` (TLS) or `unix://` (default `redis://127.0.0.1:6379/0`)"},
	{"`LOCKCTL_CLUSTER`", "`--cluster`: Redis Cluster seed nodes `H:P,...`"},
	{"`LOCKCTL_SENTINEL`, `LOCKCTL_SENTINEL_MASTER`", "`--sentinel`, `--sentinel-master`: a Sentinel-managed master"},
	{"`LOCKCTL_REDLOCK`", "`--redlock`: independent masters `URL,URL,URL`"},
	{"`LOCKCTL_WAIT_REPLICAS`", "`--wait-replicas N[:D]`"},
	{"`LOCKCTL_PASSWORD`", "the Redis password (never on the command line); not passed on to a child"},
	{"`LOCKCTL_PASSWORD_FILE`", "`--password-file`: a file holding the Redis password"},
	{"`LOCKCTL_TLS_CA`, `LOCKCTL_TLS_CERT`, `LOCKCTL_TLS_KEY`, `LOCKCTL_TLS_INSECURE`", "`--tls-ca`, `--tls-cert`, `--tls-key`, `--tls-insecure`"},
	{"`LOCKCTL_PREFIX`", "`--prefix`: the lock key prefix (default `lock:`)"},
	{"`LOCKCTL_CONFIG`", "`--config`: the config file"},
	{"`LOCKCTL_OUTPUT`", "`-o`, `--output`: `text`, `json`, `env`, ..."},
	{"`LOCKCTL_TIMEOUT`", "`--timeout`: bound on each Redis call (default `5s`)"},
	{"`LOCKCTL_NO_EVENTS`", "`--no-events`: record no operation events"},
	{"`LOCKCTL_LOG_FORMAT`", "`--log-format`: diagnostics on stderr as `text` (default) or `json` lines"},
	{"`LOCKCTL_EVENTS_KEY`", "the event stream's key (default `lockctl:events`)"},
	{"`LOCKCTL_NO_CI_OUTPUT`", "`--no-ci-output`: no GitHub Actions annotations or step summary"},
	{"`LOCKCTL_KEY`, `LOCKCTL_TOKEN`", "the lease a caller holds: `renew` and `release` take the token from them when `LOCKCTL_KEY` is NAME's key, `run` and `lock` re-enter it, `fence check` presents `LOCKCTL_TOKEN`"},
	{"`LOCKCTL_FENCE`, `LOCKCTL_MODE`", "set for the child of `run` with `LOCKCTL_HELD`, `LOCKCTL_NAME`, `LOCKCTL_TTL_MS`, `LOCKCTL_OWNER`, `LOCKCTL_ACQUIRED_AT` and `LOCKCTL_WAITED_MS`; `fence check` inside `run --shared` checks as a reader"},
	{"`LOCKCTL_SET_SIZE`, `LOCKCTL_NAME_`i, `LOCKCTL_KEY_`i, `LOCKCTL_FENCE_`i", "set for the child of a `run` of several NAMEs: how many, and each one's name, key and fence (i from 1, in the order given); a nested `run` or `lock` of one of them re-enters it"},
	{"`NO_COLOR`, `CLICOLOR`, `CLICOLOR_FORCE`", "colour, with `--color`: none when `NO_COLOR` is set, always when `CLICOLOR_FORCE` is"},
	{"`XDG_CONFIG_HOME`, `HOME`", "where the user's config file is"},
	{"`GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`, `GITHUB_RUN_ID`; `CI_JOB_URL`; `BUILDKITE_BUILD_URL`; `BUILD_URL`", "the CI job URL (GitHub Actions, GitLab CI, Buildkite, Jenkins) that `run` and `lock` record with the lock"},
	{"`GITHUB_ACTIONS`, `GITHUB_STEP_SUMMARY`", "with `GITHUB_ACTIONS=true`, refusals, lost leases and timeouts are also GitHub Actions annotations, and `run` appends a summary to `$GITHUB_STEP_SUMMARY`"},
}

// FilesTable lists the files lockctl reads on its own.
var FilesTable = []RefRow{
	{"`$XDG_CONFIG_HOME/lockctl/config.yaml`", "the user's config file (`~/.config/lockctl/config.yaml` when `XDG_CONFIG_HOME` is unset); YAML with the long flag names as keys"},
	{"`/etc/lockctl/config.yaml`", "the system's config file, read when the user's does not exist"},
}
