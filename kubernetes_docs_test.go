package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/shellwords"
	"go.yaml.in/yaml/v3"
)

// The Kubernetes guide's manifests, the job image it builds and the
// repository's Dockerfile are checked as far as they can be without a
// cluster or a container engine (neither runs here): the objects field by
// field, lockctl's command lines by lockctl's own parser, the Dockerfile's
// build step for real.

// k8sObject is the part of a Kubernetes object the checks read.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
	Spec       struct {
		// CronJob
		Schedule          string `yaml:"schedule"`
		TimeZone          string `yaml:"timeZone"`
		ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
		JobTemplate       struct {
			Spec k8sJobSpec `yaml:"spec"`
		} `yaml:"jobTemplate"`
		// Job
		k8sJobSpec `yaml:",inline"`
	} `yaml:"spec"`
	line int // where the object's block starts
	file string
}

type k8sJobSpec struct {
	Template *struct {
		Spec k8sPodSpec `yaml:"spec"`
	} `yaml:"template"`
}

type k8sPodSpec struct {
	RestartPolicy                 string `yaml:"restartPolicy"`
	TerminationGracePeriodSeconds *int   `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		k8sSecurityContext `yaml:",inline"`
		FSGroup            *int `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name            string              `yaml:"name"`
		Image           string              `yaml:"image"`
		Command         []string            `yaml:"command"`
		Args            []string            `yaml:"args"`
		SecurityContext *k8sSecurityContext `yaml:"securityContext"`
		Env             []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom any    `yaml:"valueFrom"`
		} `yaml:"env"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode *int   `yaml:"defaultMode"`
			Items       []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
				Mode *int   `yaml:"mode"`
			} `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

// k8sSecurityContext holds the fields of a pod's or a container's
// securityContext that the restricted Pod Security Standard reads.
type k8sSecurityContext struct {
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	RunAsUser                *int  `yaml:"runAsUser"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	Privileged               *bool `yaml:"privileged"`
	Capabilities             *struct {
		Add  []string `yaml:"add"`
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
	SeccompProfile *struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

// dockerStage is one stage of a Dockerfile.
type dockerStage struct {
	from, name, workdir, user string
	copies                    []dockerCopy
	runs                      []string
	entrypoint                []string
}

type dockerCopy struct {
	from, src, dst string
}

// parseDockerfile reads the instructions the Dockerfile and the guide use
// (FROM, WORKDIR, COPY, RUN, USER, ENTRYPOINT); any other is an error, so
// that the check cannot silently skip one.
func parseDockerfile(text string) ([]*dockerStage, error) {
	var stages []*dockerStage
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(l, " ")
		instr = strings.ToUpper(instr)
		if instr != "FROM" && len(stages) == 0 {
			return nil, fmt.Errorf("line %d: %s before FROM", i+1, instr)
		}
		var s *dockerStage
		if len(stages) > 0 {
			s = stages[len(stages)-1]
		}
		switch instr {
		case "FROM":
			f := strings.Fields(rest)
			st := &dockerStage{from: f[0], workdir: "/"}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s", i+1, rest)
			}
			stages = append(stages, st)
		case "WORKDIR":
			s.workdir = path.Join(s.workdir, rest)
		case "COPY":
			f := strings.Fields(rest)
			c := dockerCopy{}
			if strings.HasPrefix(f[0], "--from=") {
				c.from, f = strings.TrimPrefix(f[0], "--from="), f[1:]
			}
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: COPY takes one source here: %s", i+1, rest)
			}
			c.src, c.dst = f[0], f[1]
			s.copies = append(s.copies, c)
		case "RUN":
			s.runs = append(s.runs, rest)
		case "USER":
			s.user = strings.TrimSpace(rest)
		case "ENTRYPOINT":
			var ep []string
			if err := yaml.Unmarshal([]byte(rest), &ep); err != nil || len(ep) == 0 {
				return nil, fmt.Errorf("line %d: ENTRYPOINT must be an exec form (a JSON array): %s", i+1, rest)
			}
			s.entrypoint = ep
		default:
			return nil, fmt.Errorf("line %d: instruction %s is not checked by this test", i+1, instr)
		}
	}
	return stages, nil
}

// hasShell: the stage's base image has /bin/sh.
func (s *dockerStage) hasShell() bool {
	return !strings.Contains(s.from, "distroless") && s.from != "scratch"
}

// copied: dst is a file copied into the stage.
func (s *dockerStage) copied(dst string) bool {
	for _, c := range s.copies {
		if c.dst == dst {
			return true
		}
	}
	return false
}

// TestDocsKubernetes checks the Kubernetes objects of the documentation,
// the job image it builds on lockctl's, and the Dockerfile (see
// docs/kubernetes.md, "What the tests check").
func TestDocsKubernetes(t *testing.T) {
	objects, stages, _ := kubernetesDocs(t)
	root, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	rootStages, err := parseDockerfile(string(root))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	checkDockerfile(t, "Dockerfile", rootStages)
	secrets := map[string]*k8sObject{}
	kinds := map[string]int{}
	for _, o := range objects {
		kinds[o.Kind]++
		if o.Kind == "Secret" {
			secrets[o.Metadata.Name] = o
		}
	}
	for _, k := range []string{"CronJob", "Job", "Secret"} {
		if kinds[k] == 0 {
			t.Errorf("the Kubernetes guide has no %s", k)
		}
	}
	for _, o := range objects {
		checkObject(t.Errorf, o, secrets, stagesByName(stages))
	}
}

func stagesByName(stages []*dockerStage) map[string]*dockerStage {
	m := map[string]*dockerStage{}
	for _, s := range stages {
		m[s.name] = s
	}
	return m
}

// decodeObjects decodes the Kubernetes objects of a YAML block.
func decodeObjects(b readmeBlock) ([]*k8sObject, error) {
	var objects []*k8sObject
	dec := yaml.NewDecoder(strings.NewReader(b.text))
	for {
		o := &k8sObject{line: b.fence, file: b.file}
		err := dec.Decode(o)
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.where(), err)
		}
		objects = append(objects, o)
	}
}

// kubernetesDocs returns the Kubernetes objects of every page, and the
// stages of the one job image a page builds (on the images of the
// repository's Dockerfile, whose stages they take over) with its block.
func kubernetesDocs(t *testing.T) ([]*k8sObject, []*dockerStage, readmeBlock) {
	t.Helper()
	root, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	rootStages, err := parseDockerfile(string(root))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	var objects []*k8sObject
	var stages []*dockerStage
	var dockerBlock readmeBlock
	for _, b := range allBlocks(t, docPages(t)) {
		switch {
		case b.lang == "dockerfile":
			if stages != nil {
				t.Fatalf("%s: a second Dockerfile; the check reads one", b.where())
			}
			job, err := parseDockerfile(b.text)
			if err != nil {
				t.Fatalf("%s: %v", b.where(), err)
			}
			if stages, err = onLockctlImage(rootStages, job); err != nil {
				t.Fatalf("%s: %v", b.where(), err)
			}
			dockerBlock = b
		case isKubernetesManifest(b):
			o, err := decodeObjects(b)
			if err != nil {
				t.Fatal(err)
			}
			objects = append(objects, o...)
		}
	}
	if stages == nil {
		t.Fatal("no page has a ```dockerfile block: the Kubernetes guide's job image is untested")
	}
	return objects, stages, dockerBlock
}

// lockctlImage is how the guide names the images of the Dockerfile's
// final stages: docker build --target STAGE -t lockctl:STAGE.
const lockctlImage = "lockctl:"

// onLockctlImage returns the stages of a job image built FROM
// lockctl:STAGE, each with what it takes over from that stage of the
// Dockerfile (base image, files, user, entrypoint) and its own COPYs.
func onLockctlImage(root, job []*dockerStage) ([]*dockerStage, error) {
	byName := stagesByName(root[1:])
	var out []*dockerStage
	for _, j := range job {
		base := byName[strings.TrimPrefix(j.from, lockctlImage)]
		if !strings.HasPrefix(j.from, lockctlImage) || base == nil {
			return nil, fmt.Errorf("stage %s: FROM %s: a job image starts from a final stage of the Dockerfile, %sSTAGE", j.name, j.from, lockctlImage)
		}
		if len(j.runs) > 0 || j.workdir != "/" {
			return nil, fmt.Errorf("stage %s: only COPY (and USER, ENTRYPOINT) on top of %s", j.name, j.from)
		}
		s := &dockerStage{from: base.from, name: j.name, workdir: base.workdir, user: base.user, entrypoint: base.entrypoint}
		s.copies = append(slices.Clone(base.copies), j.copies...)
		if j.user != "" {
			s.user = j.user
		}
		if len(j.entrypoint) > 0 {
			s.entrypoint = j.entrypoint
		}
		out = append(out, s)
	}
	return out, nil
}

// checkObject checks one Kubernetes object of the guide.
func checkObject(report func(string, ...any), o *k8sObject, secrets map[string]*k8sObject, byStage map[string]*dockerStage) {
	where := fmt.Sprintf("%s:%d: %s %s", o.file, o.line, o.Kind, o.Metadata.Name)
	if o.Metadata.Name == "" {
		report("%s: no metadata.name", where)
	}
	var pod *k8sPodSpec
	switch {
	case o.APIVersion == "v1" && o.Kind == "Secret":
		if len(o.StringData)+len(o.Data) == 0 {
			report("%s: no data", where)
		}
		return
	case o.APIVersion == "batch/v1" && o.Kind == "CronJob":
		if len(strings.Fields(o.Spec.Schedule)) != 5 {
			report("%s: schedule %q is not five cron fields", where, o.Spec.Schedule)
		}
		if o.Spec.TimeZone == "" {
			report("%s: no timeZone: the schedule would follow the controller's zone, whatever it is", where)
		} else if _, err := time.LoadLocation(o.Spec.TimeZone); err != nil || o.Spec.TimeZone == "Local" {
			report("%s: timeZone %q is not a time zone name (Europe/Berlin, Etc/UTC): %v", where, o.Spec.TimeZone, err)
		}
		if !slices.Contains([]string{"Forbid", "Allow", "Replace"}, o.Spec.ConcurrencyPolicy) {
			report("%s: concurrencyPolicy %q: set it (Forbid, Allow or Replace), the guide explains each", where, o.Spec.ConcurrencyPolicy)
		}
		if o.Spec.JobTemplate.Spec.Template == nil {
			report("%s: no jobTemplate.spec.template", where)
			return
		}
		pod = &o.Spec.JobTemplate.Spec.Template.Spec
	case o.APIVersion == "batch/v1" && o.Kind == "Job":
		if o.Spec.Template == nil {
			report("%s: no spec.template", where)
			return
		}
		pod = &o.Spec.Template.Spec
	default:
		report("%s: apiVersion %q kind %q: the guide shows batch/v1 CronJob and Job, v1 Secret", where, o.APIVersion, o.Kind)
		return
	}
	checkPod(report, where, pod, secrets, byStage)
}

// checkPod checks a Job's pod: restart policy, the lockctl command, the
// grace period and the Secret files it names.
func checkPod(report func(string, ...any), where string, pod *k8sPodSpec, secrets map[string]*k8sObject, byStage map[string]*dockerStage) {
	if pod.RestartPolicy != "Never" && pod.RestartPolicy != "OnFailure" {
		report("%s: restartPolicy %q: a Job's pod takes Never or OnFailure", where, pod.RestartPolicy)
	}
	if pod.TerminationGracePeriodSeconds == nil {
		report("%s: set terminationGracePeriodSeconds (against --kill-after, see the guide)", where)
		return
	}
	if len(pod.Containers) == 0 {
		report("%s: no containers", where)
		return
	}
	for _, c := range pod.Containers {
		where := fmt.Sprintf("%s container %s", where, c.Name)
		checkRestricted(report, where, &pod.SecurityContext.k8sSecurityContext, c.SecurityContext)
		argv := append(slices.Clone(c.Command), c.Args...)
		_, tag, _ := strings.Cut(c.Image, ":")
		stage := byStage[tag]
		if stage == nil {
			report("%s: image %q: its tag names no stage of the Dockerfile (build it with docker build --target TAG)", where, c.Image)
			continue
		}
		if len(c.Command) == 0 {
			argv = append(slices.Clone(stage.entrypoint), c.Args...)
		} else if !slices.Equal(c.Command[:1], stage.entrypoint) {
			report("%s: runs %q, but the image's entrypoint is %q", where, c.Command[0], stage.entrypoint)
		}
		if path.Base(argv[0]) != "lockctl" || !stage.copied(argv[0]) {
			report("%s: runs %q, which is not lockctl as the stage %s copies it", where, argv[0], stage.name)
			continue
		}
		args := argv[1:]
		if err := checkLockctlArgs(args); err != nil {
			report("%s: lockctl %s: %v", where, strings.Join(args, " "), err)
			continue
		}
		flags, rest := lockctlFlags(args)

		// What lockctl runs must be in the image.
		switch {
		case flags["command"] != "" || flags["c"] != "":
			script := flags["command"] + flags["c"]
			if !stage.hasShell() {
				report("%s: run -c needs a shell, and stage %s (%s) has none", where, stage.name, stage.from)
			}
			w := shellwords.Split(script)
			if len(w) > 0 && w[0] == "exec" {
				w = w[1:]
			}
			if len(w) == 0 || !stage.copied(w[0]) {
				report("%s: -c %q runs a program stage %s does not copy", where, script, stage.name)
			}
		case len(rest) > 0:
			if !stage.copied(rest[0]) {
				report("%s: runs %q, which stage %s does not copy", where, rest[0], stage.name)
			}
		default:
			report("%s: lockctl runs no command", where)
		}

		// The grace period outlasts lockctl's own TERM-to-KILL grace and
		// the release that follows.
		killAfter := durationFlag(report, where, flags, "kill-after", 5*time.Second)
		timeout := durationFlag(report, where, flags, "timeout", 5*time.Second)
		const margin = 5 * time.Second
		grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
		if grace <= killAfter+timeout+margin {
			report("%s: terminationGracePeriodSeconds %v is not more than --kill-after %v + --timeout %v + %v: the kubelet's SIGKILL would cut lockctl's own grace or its release short", where, grace, killAfter, timeout, margin)
		}

		// The server and the password.
		url := flags["url"]
		for _, e := range c.Env {
			switch e.Name {
			case "LOCKCTL_URL", "REDIS_URL":
				url += e.Value
			case "LOCKCTL_PASSWORD":
				report("%s: LOCKCTL_PASSWORD in the environment: mount the Secret and use --password-file", where)
			}
		}
		if url == "" {
			report("%s: neither --url nor LOCKCTL_URL: lockctl would dial 127.0.0.1:6379 in the pod", where)
		} else if strings.Contains(url, "@") && regexp.MustCompile(`://[^@/]*:[^@/]*@`).MatchString(url) {
			report("%s: a password in the URL %q", where, url)
		}
		if flags["password-file"] == "" {
			report("%s: no --password-file", where)
		}
		for _, name := range []string{"password-file", "tls-ca", "tls-cert", "tls-key", "config"} {
			if p := flags[name]; p != "" {
				checkSecretFile(report, fmt.Sprintf("%s: --%s %s", where, name, p), pod, c.VolumeMounts, secrets, p)
			}
		}
	}
}

// checkRestricted: a container meets the restricted Pod Security Standard
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
// so that a namespace enforcing it admits the pod; its settings are the
// container's, else the pod's where the standard allows either.
func checkRestricted(report func(string, ...any), where string, pod, c *k8sSecurityContext) {
	if c == nil {
		c = &k8sSecurityContext{}
	}
	if c.Privileged != nil && *c.Privileged {
		report("%s: privileged: the restricted Pod Security Standard refuses it", where)
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		report("%s: securityContext.allowPrivilegeEscalation must be false (restricted Pod Security Standard)", where)
	}
	if c.Capabilities == nil || !slices.Contains(c.Capabilities.Drop, "ALL") {
		report("%s: securityContext.capabilities.drop must hold ALL (restricted Pod Security Standard)", where)
	} else if slices.ContainsFunc(c.Capabilities.Add, func(a string) bool { return a != "NET_BIND_SERVICE" }) {
		report("%s: securityContext.capabilities.add %q: the restricted Pod Security Standard allows NET_BIND_SERVICE only", where, c.Capabilities.Add)
	}
	nonRoot := c.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = pod.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		report("%s: runAsNonRoot must be true, on the pod or the container (restricted Pod Security Standard)", where)
	}
	for _, u := range []*int{pod.RunAsUser, c.RunAsUser} {
		if u != nil && *u == 0 {
			report("%s: runAsUser 0: the restricted Pod Security Standard refuses root", where)
		}
	}
	seccomp := c.SeccompProfile
	if seccomp == nil {
		seccomp = pod.SeccompProfile
	}
	if seccomp == nil || (seccomp.Type != "RuntimeDefault" && seccomp.Type != "Localhost") {
		report("%s: seccompProfile.type must be RuntimeDefault (or Localhost), on the pod or the container (restricted Pod Security Standard)", where)
	}
}

// checkSecretFile: file p is a key of a Secret of the guide, mounted by a
// secret volume, readable by the pod's user and by no other.
func checkSecretFile(report func(string, ...any), where string, pod *k8sPodSpec, mounts []struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}, secrets map[string]*k8sObject, p string) {
	for _, m := range mounts {
		if path.Dir(p) != path.Clean(m.MountPath) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.Secret == nil {
				report("%s: volume %s is not a Secret", where, v.Name)
				return
			}
			s := secrets[v.Secret.SecretName]
			if s == nil {
				report("%s: Secret %q is not among the guide's objects", where, v.Secret.SecretName)
				return
			}
			key, mode := path.Base(p), v.Secret.DefaultMode
			if len(v.Secret.Items) > 0 {
				key = ""
				for _, it := range v.Secret.Items {
					if it.Path == path.Base(p) {
						key = it.Key
						if it.Mode != nil {
							mode = it.Mode
						}
					}
				}
			}
			_, inString := s.StringData[key]
			_, inData := s.Data[key]
			if key == "" || (!inString && !inData) {
				report("%s: Secret %s has no key for %s", where, s.Metadata.Name, path.Base(p))
			}
			m := 0o644 // Kubernetes' default mode for Secret files
			if mode != nil {
				m = *mode
			}
			if m&0o007 != 0 {
				report("%s: mode %#o lets every user read it (lockctl warns): set defaultMode 0440", where, m)
			}
			root := pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser == 0
			if !root && (pod.SecurityContext.FSGroup == nil || m&0o040 == 0) {
				report("%s: mode %#o, fsGroup %v: the pod's non-root user cannot read it; set fsGroup and a group-readable mode", where, m, pod.SecurityContext.FSGroup)
			}
			return
		}
		report("%s: mount %s names no volume of the pod", where, m.Name)
		return
	}
	report("%s: no volume is mounted at %s", where, path.Dir(p))
}

// lockctlFlags returns the flags of a lockctl command line by their long
// name (-c as "c"), and the words after "--". The line has already been
// parsed by checkLockctlArgs; this only collects the values.
func lockctlFlags(args []string) (map[string]string, []string) {
	flags := map[string]string{}
	boolean := map[string]bool{"n": true, "q": true, "v": true, "fifo": true, "shared": true, "no-reentry": true, "tls-insecure": true, "no-events": true, "no-ci-output": true, "quiet": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, args[i+1:]
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && !boolean[name] && i+1 < len(args) {
			i++
			value = args[i]
		}
		flags[name] = value
	}
	return flags, nil
}

func durationFlag(report func(string, ...any), where string, flags map[string]string, name string, def time.Duration) time.Duration {
	v, ok := flags[name]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		report("%s: --%s %q: %v", where, name, v, err)
	}
	return d
}

// checkDockerfile runs what the Dockerfile's build stage runs, in a copy
// of the checkout's tracked files (what COPY . . copies), and checks what
// the final stages copy and run. docker itself cannot run here.
func checkDockerfile(t *testing.T, file string, stages []*dockerStage) {
	t.Helper()
	b := readmeBlock{file: file, fence: 1}
	build := stages[0]
	if build.name != "build" || !strings.HasPrefix(build.from, "golang:") {
		t.Fatalf("%s: the first stage must be the Go build (FROM golang:... AS build), not %s", b.where(), build.from)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go ([0-9]+\.[0-9]+)`).FindSubmatch(gomod)
	if tag := strings.TrimPrefix(build.from, "golang:"); goLine == nil || !strings.HasPrefix(tag, string(goLine[1])) {
		t.Errorf("%s: FROM %s, but go.mod asks for go %s", b.where(), build.from, goLine[1])
	}
	if len(build.copies) != 1 || build.copies[0] != (dockerCopy{src: ".", dst: "."}) {
		t.Fatalf("%s: the build stage must COPY . . (the checkout), got %v", b.where(), build.copies)
	}
	if !slices.Contains(build.runs, "CGO_ENABLED=0 make build") {
		t.Errorf("%s: the build stage must RUN CGO_ENABLED=0 make build, got %q", b.where(), build.runs)
	}

	// COPY . . into WORKDIR: the tracked files, as a build context of a
	// clean checkout holds them.
	ctx := t.TempDir()
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(ctx, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range build.runs {
		c := exec.Command("sh", "-c", r)
		c.Dir = ctx
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: RUN %s in a copy of the checkout: %v\n%s", b.where(), r, err, out)
		}
	}
	inBuild := func(p string) string {
		if !path.IsAbs(p) {
			p = path.Join(build.workdir, p)
		}
		rel := strings.TrimPrefix(p, path.Clean(build.workdir)+"/")
		return filepath.Join(ctx, filepath.FromSlash(rel))
	}

	checkFinalStages(t.Errorf, b.where(), stages)
	for _, s := range stages[1:] {
		for _, c := range s.copies {
			switch c.from {
			case "build":
				f := inBuild(c.src)
				if _, err := os.Stat(f); err != nil {
					t.Errorf("%s: stage %s copies %s from the build, which the build did not make: %v", b.where(), s.name, c.src, err)
					continue
				}
				checkStaticELF(t.Errorf, fmt.Sprintf("%s: stage %s: %s", b.where(), s.name, c.src), f)
			case "":
				// The user's job, from the build context.
			default:
				t.Errorf("%s: stage %s copies from %s, which is not the build stage", b.where(), s.name, c.from)
			}
		}
	}
}

// checkFinalStages: the Dockerfile has the final stages the guide's job
// images start from (static, shell), and each runs lockctl, copied into
// it, as its exec-form ENTRYPOINT, as a numeric non-root user (a
// runAsNonRoot pod can only check a number).
func checkFinalStages(report func(string, ...any), where string, stages []*dockerStage) {
	byName := stagesByName(stages[1:])
	for _, name := range []string{"static", "shell"} {
		if byName[name] == nil {
			report("%s: no final stage %s (the Kubernetes guide builds on it)", where, name)
		}
	}
	for _, s := range stages[1:] {
		if len(s.entrypoint) == 0 || !s.copied(s.entrypoint[0]) || path.Base(s.entrypoint[0]) != "lockctl" {
			report("%s: stage %s: ENTRYPOINT %q is not lockctl copied into it", where, s.name, s.entrypoint)
		}
		uid, _, _ := strings.Cut(s.user, ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			report("%s: stage %s: USER %q: run as a numeric non-root user (USER 65532:65532)", where, s.name, s.user)
		}
	}
}

// checkStaticELF: f is an ELF executable that needs no program interpreter
// (no PT_INTERP: no dynamic loader) and no shared library, so it runs in
// an image without libc (distroless static, scratch).
func checkStaticELF(report func(string, ...any), where, f string) {
	e, err := elf.Open(f)
	if err != nil {
		report("%s: not an ELF file: %v", where, err)
		return
	}
	defer e.Close()
	if e.Type != elf.ET_EXEC && e.Type != elf.ET_DYN {
		report("%s: ELF type %v, not an executable", where, e.Type)
	}
	for _, p := range e.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(p.Open())
			report("%s: dynamically linked: needs the program interpreter %s", where, bytes.TrimRight(interp, "\x00"))
		}
	}
	if libs, err := e.ImportedLibraries(); err == nil && len(libs) > 0 {
		report("%s: needs shared libraries %v", where, libs)
	}
}

// TestDocsKubernetesRefusesBadManifests: the checks of TestDocsKubernetes
// fail on a CronJob of the guide broken in each of the ways they look for.
func TestDocsKubernetesRefusesBadManifests(t *testing.T) {
	objects, stages, _ := kubernetesDocs(t)
	secrets := map[string]*k8sObject{}
	for _, o := range objects {
		if o.Kind == "Secret" {
			secrets[o.Metadata.Name] = o
		}
	}
	var cron readmeBlock
	for _, b := range allBlocks(t, docPages(t)) {
		if isKubernetesManifest(b) && strings.Contains(b.text, "kind: CronJob") {
			cron = b
		}
	}
	if cron.text == "" {
		t.Fatal("the guide has no CronJob")
	}
	check := func(text string) []string {
		objs, err := decodeObjects(readmeBlock{file: cron.file, fence: cron.fence, text: text})
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		for _, o := range objs {
			checkObject(func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }, o, secrets, stagesByName(stages))
		}
		return errs
	}
	if errs := check(cron.text); len(errs) != 0 {
		t.Fatalf("the guide's CronJob fails the checks: %q", errs)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"concurrencyPolicy: Forbid", "concurrencyPolicy: \"\"", "concurrencyPolicy"},
		{"kind: CronJob", "kind: Deployment", "kind \"Deployment\""},
		{"restartPolicy: Never", "restartPolicy: Always", "restartPolicy"},
		{"terminationGracePeriodSeconds: 60", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds 30s"},
		{"--kill-after=20s", "--kil-after=20s", "unknown flag"},
		{"--ttl=1m", "--ttl=forever", "invalid argument"},
		{"- /usr/local/bin/report\n", "- /usr/local/bin/other\n", "does not copy"},
		{"- --\n                - /usr/local/bin/report\n", "- -c\n                - exec /usr/local/bin/report\n", "needs a shell"},
		{"image: registry.example.com/nightly-report:static", "image: registry.example.com/nightly-report:latest", "names no stage"},
		{"defaultMode: 0440", "defaultMode: 0444", "lets every user read"},
		{"defaultMode: 0440", "defaultMode: 0400", "cannot read it"},
		{"mountPath: /run/secrets/lockctl", "mountPath: /etc/lockctl", "no volume is mounted"},
		{"secretName: lockctl-redis", "secretName: redis", "not among the guide's objects"},
		{"--password-file=/run/secrets/lockctl/password", "--password-file=/run/secrets/lockctl/pass", "has no key"},
		{"- name: LOCKCTL_URL\n", "- name: LOCKCTL_PASSWORD\n", "LOCKCTL_PASSWORD in the environment"},
		// The restricted Pod Security Standard, and the schedule's zone.
		{"allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation must be false"},
		{"drop: [ALL]", "drop: [NET_RAW]", "capabilities.drop must hold ALL"},
		{"runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot must be true"},
		{"runAsUser: 65532", "runAsUser: 0", "runAsUser 0"},
		{"type: RuntimeDefault", "type: Unconfined", "seccompProfile.type must be RuntimeDefault"},
		{"timeZone: Europe/Berlin", "timeZone: Mars/Olympus", "not a time zone name"},
		{"  timeZone: Europe/Berlin\n", "", "no timeZone"},
	} {
		if !strings.Contains(cron.text, tc.old) {
			t.Fatalf("the CronJob has no %q to break", tc.old)
		}
		errs := check(strings.Replace(cron.text, tc.old, tc.new, 1))
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%q -> %q: errors %q, want one about %q", tc.old, tc.new, errs, tc.want)
		}
	}
}

// TestDockerfileChecksRefuse: a final stage running as root or without a
// USER, an ENTRYPOINT that is not lockctl, a missing stage, and a job image
// that does not start from one of lockctl's are refused.
func TestDockerfileChecksRefuse(t *testing.T) {
	root, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(root)
	check := func(text string) []string {
		stages, err := parseDockerfile(text)
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		checkFinalStages(func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }, "Dockerfile", stages)
		return errs
	}
	if errs := check(text); len(errs) != 0 {
		t.Fatalf("the Dockerfile fails the checks: %q", errs)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"USER 65532:65532", "USER 0:0", "numeric non-root user"},
		{"USER 65532:65532", "USER root", "numeric non-root user"},
		{"USER 65532:65532\n", "", "numeric non-root user"},
		{`ENTRYPOINT ["/usr/local/bin/lockctl"]`, `ENTRYPOINT ["/bin/sh"]`, "is not lockctl"},
		{"AS shell", "AS busybox", "no final stage shell"},
	} {
		if !strings.Contains(text, tc.old) {
			t.Fatalf("the Dockerfile has no %q to break", tc.old)
		}
		errs := check(strings.Replace(text, tc.old, tc.new, 1))
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%q -> %q: errors %q, want one about %q", tc.old, tc.new, errs, tc.want)
		}
	}
	rootStages, _ := parseDockerfile(text)
	for _, job := range []string{
		"FROM busybox:1.37 AS shell\nCOPY report.sh /usr/local/bin/report.sh\n",
		"FROM lockctl:nonesuch AS shell\nCOPY report.sh /usr/local/bin/report.sh\n",
		"FROM lockctl:shell AS shell\nRUN apk add curl\n",
	} {
		stages, err := parseDockerfile(job)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := onLockctlImage(rootStages, stages); err == nil {
			t.Errorf("onLockctlImage accepted %q", job)
		}
	}
}

// TestCheckStaticELF: a dynamically linked program and a file that is no
// ELF file are refused.
func TestCheckStaticELF(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"/bin/sh", "dynamically linked"},
		{"README.md", "not an ELF file"},
	} {
		var errs []string
		checkStaticELF(func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }, tc.file, tc.file)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%s: errors %q, want one about %q", tc.file, errs, tc.want)
		}
	}
}

// TestParseDockerfileRefuses: an instruction the check does not read, and
// a shell-form ENTRYPOINT, are errors rather than skipped.
func TestParseDockerfileRefuses(t *testing.T) {
	for _, text := range []string{
		"FROM busybox AS shell\nADD https://example.com/x /x\n",
		"FROM busybox AS shell\nENTRYPOINT /usr/local/bin/lockctl\n",
		"COPY . .\n",
	} {
		if _, err := parseDockerfile(text); err == nil {
			t.Errorf("parseDockerfile accepted %q", text)
		}
	}
	stages, err := parseDockerfile("FROM golang:1.26 AS build\nWORKDIR /src\nCOPY . .\nRUN CGO_ENABLED=0 make build\nFROM scratch AS static\nCOPY --from=build /src/bin/lockctl /lockctl\nENTRYPOINT [\"/lockctl\"]\n")
	if err != nil || len(stages) != 2 || stages[1].hasShell() || !stages[1].copied("/lockctl") || stages[0].workdir != "/src" {
		t.Errorf("parseDockerfile: %v, %+v", err, stages)
	}
}
