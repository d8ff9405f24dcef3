// Tests of deploy/'s manifests on their own, without an apiserver: they
// decode strictly, their roles grant nothing by wildcard, README.md's table
// lists exactly the rules they grant and names code that exists, and the
// Deployment, the configuration and the roles agree on names and ports.

package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/scheduler"
)

// manifest is one object of one of deploy/'s YAML files.
type manifest struct {
	file string
	obj  runtime.Object
}

// loadManifests decodes every document of deploy/*.yaml, in the order
// `kubectl apply -f deploy/` applies them (by file name), rejecting unknown
// fields as the apiserver's strict field validation would.
func loadManifests() ([]manifest, error) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []manifest
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
			}
			out = append(out, manifest{file: file, obj: obj})
		}
	}
	return out, nil
}

// stripComments drops whole-line YAML comments, to tell an empty document
// (a file's opening comment before ---) from a real one.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func mustLoadManifests(t *testing.T) []manifest {
	t.Helper()
	ms, err := loadManifests()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// find returns the manifest object of type T with the given name.
func find[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, ms []manifest, name string) T {
	t.Helper()
	for _, m := range ms {
		if o, ok := m.obj.(T); ok && o.GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("deploy/ has no %T named %q", zero, name)
	return zero
}

// grant is one permission a rule gives: a verb on a resource (with its
// subresource) of an API group, maybe only on some names, maybe only in one
// namespace (a Role's).
type grant struct {
	role      string
	namespace string
	group     string
	resource  string
	verb      string
	names     string
}

func (g grant) String() string {
	s := fmt.Sprintf("%s: %s %s", g.role, g.verb, g.resource)
	if g.group != "" {
		s += "." + g.group
	}
	if g.names != "" {
		s += " named " + g.names
	}
	if g.namespace != "" {
		s += " in " + g.namespace
	}
	return s
}

// grants expands rules into one grant per group, resource and verb.
func grants(role, namespace string, rules []rbacv1.PolicyRule) []grant {
	var out []grant
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					out = append(out, grant{role: role, namespace: namespace, group: group, resource: res,
						verb: verb, names: strings.Join(r.ResourceNames, ",")})
				}
			}
		}
	}
	return out
}

// roleGrants is every grant of deploy/'s ClusterRoles and Roles.
func roleGrants(ms []manifest) []grant {
	var out []grant
	for _, m := range ms {
		switch r := m.obj.(type) {
		case *rbacv1.ClusterRole:
			out = append(out, grants(r.Name, "", r.Rules)...)
		case *rbacv1.Role:
			out = append(out, grants(r.Name, r.Namespace, r.Rules)...)
		}
	}
	return out
}

// TestRolesGrantNoWildcards: every permission is spelled out. A "*" in a
// verb, group, resource or name, a nonResourceURL, or a verb that hands out
// more power (escalate, bind, impersonate) has no place in a scheduler's
// role.
func TestRolesGrantNoWildcards(t *testing.T) {
	ms := mustLoadManifests(t)
	var roles int
	for _, m := range ms {
		var name string
		var rules []rbacv1.PolicyRule
		switch r := m.obj.(type) {
		case *rbacv1.ClusterRole:
			name, rules = "ClusterRole "+r.Name, r.Rules
			if r.AggregationRule != nil {
				t.Errorf("%s: %s aggregates other roles", m.file, name)
			}
		case *rbacv1.Role:
			name, rules = "Role "+r.Namespace+"/"+r.Name, r.Rules
		default:
			continue
		}
		roles++
		t.Run(name, func(t *testing.T) {
			if len(rules) == 0 {
				t.Errorf("%s: %s has no rules", m.file, name)
			}
			for i, r := range rules {
				fields := map[string][]string{"verbs": r.Verbs, "apiGroups": r.APIGroups, "resources": r.Resources,
					"resourceNames": r.ResourceNames}
				for field, values := range fields {
					for _, v := range values {
						if strings.Contains(v, "*") {
							t.Errorf("%s: %s rules[%d].%s has the wildcard %q", m.file, name, i, field, v)
						}
					}
				}
				if len(r.NonResourceURLs) > 0 {
					t.Errorf("%s: %s rules[%d] grants nonResourceURLs %v", m.file, name, i, r.NonResourceURLs)
				}
				for _, v := range r.Verbs {
					if v == "escalate" || v == "bind" || v == "impersonate" {
						t.Errorf("%s: %s rules[%d] grants %q", m.file, name, i, v)
					}
				}
				if len(r.Verbs) == 0 || len(r.APIGroups) == 0 || len(r.Resources) == 0 {
					t.Errorf("%s: %s rules[%d] leaves verbs, apiGroups or resources empty", m.file, name, i)
				}
			}
		})
	}
	if roles == 0 {
		t.Fatal("deploy/ has no ClusterRole or Role")
	}
}

// readmeRow matches a row of README.md's permission table:
// | role | API group | resource | verbs | resource names | used by |, the
// core group written `""`.
var readmeRow = regexp.MustCompile("^\\| *`([a-z-]+)` *\\| *`([a-z0-9.]+|\"\")` *\\| *`([a-z/]+)` *" +
	"\\| *([a-z, ]+?) *\\| *([a-z-]*) *\\| *(.+?) *\\|$")

// codeRef matches a `file.go: Function` (or `file.go: Type.Method`) in the
// table's last column.
var codeRef = regexp.MustCompile("`([^` ]+\\.go): ([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?`")

// TestREADMEExplainsEveryGrant: deploy/README.md's table lists exactly the
// permissions the roles grant, each with the code that needs it, and every
// function it names exists in the file it names.
func TestREADMEExplainsEveryGrant(t *testing.T) {
	ms := mustLoadManifests(t)
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	refs := 0
	for _, line := range strings.Split(string(data), "\n") {
		m := readmeRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		role, group, resource, verbs, names, usedBy := m[1], strings.Trim(m[2], `"`), m[3], m[4], m[5], m[6]
		for _, verb := range strings.Split(verbs, ",") {
			g := grant{role: role, group: group, resource: resource, verb: strings.TrimSpace(verb), names: names}
			documented = append(documented, g.String())
		}
		found := codeRef.FindAllStringSubmatch(usedBy, -1)
		if len(found) == 0 {
			t.Errorf("README.md: the row for %s %s names no code (`file.go: Function`)", role, resource)
		}
		for _, ref := range found {
			refs++
			if err := codeExists(ref[1], ref[2], ref[3]); err != nil {
				t.Errorf("README.md: %s", err)
			}
		}
	}
	var granted []string
	for _, g := range roleGrants(ms) {
		g.namespace = "" // the table names roles, not namespaces
		granted = append(granted, g.String())
	}
	sort.Strings(documented)
	sort.Strings(granted)
	if diff := cmp.Diff(granted, documented); diff != "" {
		t.Errorf("README.md's table and the roles disagree (-granted +documented):\n%s", diff)
	}
	if refs == 0 {
		t.Error("README.md names no code")
	}
}

// codeExists checks that the repository's file (a path from its root)
// declares the function, or the method of the type.
func codeExists(file, name, method string) error {
	src, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		return fmt.Errorf("names %s, which cannot be read: %w", file, err)
	}
	decl := `(?m)^func ` + regexp.QuoteMeta(name) + `[\[(]`
	what := name
	if method != "" {
		decl = `(?m)^func \(\w+ \*?` + regexp.QuoteMeta(name) + `(\[[^\]]*\])?\) ` + regexp.QuoteMeta(method) + `\(`
		what = name + "." + method
	}
	if !regexp.MustCompile(decl).Match(src) {
		return fmt.Errorf("names %s in %s, which does not declare it", what, file)
	}
	return nil
}

// TestManifestsAgree: the names and ports one manifest relies on are the
// ones the others define, and the Deployment runs `minisched run` with a
// configuration that minisched accepts.
func TestManifestsAgree(t *testing.T) {
	ms := mustLoadManifests(t)
	dep := find[*appsv1.Deployment](t, ms, "minisched")
	sa := find[*v1.ServiceAccount](t, ms, "minisched")
	cm := find[*v1.ConfigMap](t, ms, "minisched-config")
	binding := find[*rbacv1.ClusterRoleBinding](t, ms, "minisched")
	leRole := find[*rbacv1.Role](t, ms, "minisched-leader-election")
	leBinding := find[*rbacv1.RoleBinding](t, ms, "minisched-leader-election")
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	args := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(k, "--") {
			t.Fatalf("container arg %q: want --flag=value", a)
		}
		args[k] = v
	}

	t.Run("the container runs the run subcommand", func(t *testing.T) {
		if len(c.Args) == 0 || c.Args[0] != "run" {
			t.Errorf("args = %v, want run first", c.Args)
		}
		if _, ok := args["--kubeconfig"]; ok {
			t.Error("--kubeconfig is set: in a pod, minisched must use its ServiceAccount (in-cluster config)")
		}
	})

	t.Run("the pod runs as the ServiceAccount the roles are bound to", func(t *testing.T) {
		if pod.ServiceAccountName != sa.Name || dep.Namespace != sa.Namespace {
			t.Errorf("pod runs as %s/%s, want %s/%s", dep.Namespace, pod.ServiceAccountName, sa.Namespace, sa.Name)
		}
		for _, b := range []struct {
			what     string
			subjects []rbacv1.Subject
		}{{"ClusterRoleBinding " + binding.Name, binding.Subjects}, {"RoleBinding " + leBinding.Name, leBinding.Subjects}} {
			want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
			if diff := cmp.Diff(want, b.subjects); diff != "" {
				t.Errorf("%s subjects (-want +got):\n%s", b.what, diff)
			}
		}
	})

	t.Run("--config names the key of the mounted ConfigMap", func(t *testing.T) {
		path := args["--config"]
		var mount *v1.VolumeMount
		for i := range c.VolumeMounts {
			if strings.HasPrefix(path, c.VolumeMounts[i].MountPath+"/") {
				mount = &c.VolumeMounts[i]
			}
		}
		if mount == nil {
			t.Fatalf("--config=%s is under no volume mount", path)
		}
		var cmName string
		for _, v := range pod.Volumes {
			if v.Name == mount.Name && v.ConfigMap != nil {
				cmName = v.ConfigMap.Name
			}
		}
		key := strings.TrimPrefix(path, mount.MountPath+"/")
		if cmName != cm.Name || cm.Data[key] == "" {
			t.Errorf("--config=%s: volume %s holds ConfigMap %q, want %s with key %s", path, mount.Name, cmName,
				cm.Name, key)
		}
	})

	t.Run("the probes reach /livez and /readyz on the metrics address, on every interface", func(t *testing.T) {
		host, port, err := net.SplitHostPort(args["--metrics-bind-address"])
		if err != nil {
			t.Fatalf("--metrics-bind-address: %v", err)
		}
		if host != "0.0.0.0" {
			t.Errorf("--metrics-bind-address host %q, want 0.0.0.0: the kubelet probes the pod's IP", host)
		}
		if len(c.Ports) != 1 || fmt.Sprint(c.Ports[0].ContainerPort) != port {
			t.Fatalf("container ports %v, want one, %s", c.Ports, port)
		}
		for _, p := range []struct {
			probe *v1.Probe
			path  string
		}{{c.LivenessProbe, "/livez"}, {c.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("no HTTP probe for %s", p.path)
				continue
			}
			if g := p.probe.HTTPGet; g.Path != p.path || g.Port.String() != c.Ports[0].Name {
				t.Errorf("probe %s on port %s, want %s on %s", g.Path, g.Port.String(), p.path, c.Ports[0].Name)
			}
		}
	})

	t.Run("the pod cannot run as root or gain privileges", func(t *testing.T) {
		psc, sc := pod.SecurityContext, c.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
			!slices.Equal(sc.Capabilities.Drop, []v1.Capability{"ALL"}) {
			t.Errorf("container securityContext %+v: want no privilege escalation, a read-only root, no capabilities", sc)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("container requests %v: want cpu and memory", c.Resources.Requests)
		}
	})

	t.Run("the configuration elects a leader on the Lease the Role allows", func(t *testing.T) {
		cfg := deployedConfig(t, cm)
		le := cfg.LeaderElection
		if !*le.LeaderElect {
			t.Error("leaderElection.leaderElect is not true: two replicas would both schedule")
		}
		if le.ResourceNamespace != leRole.Namespace {
			t.Errorf("leaderElection.resourceNamespace = %q, want the Role's namespace %q", le.ResourceNamespace,
				leRole.Namespace)
		}
		var names []string
		for _, r := range leRole.Rules {
			names = append(names, r.ResourceNames...)
		}
		if !slices.Equal(names, []string{le.ResourceName}) {
			t.Errorf("the Role names leases %v, want only leaderElection.resourceName %q", names, le.ResourceName)
		}
		if len(cfg.Profiles) != 1 || *cfg.Profiles[0].SchedulerName != "minisched" {
			t.Errorf("profiles: want one, minisched")
		}
		if *cfg.EnableProfiling {
			t.Error("enableProfiling: the pod's port would serve /debug/pprof to anyone who reaches it")
		}
	})
}

// deployedConfig decodes, defaults and validates the ConfigMap's
// configuration as `minisched run --config` does.
func deployedConfig(t *testing.T, cm *v1.ConfigMap) *configv1.KubeSchedulerConfiguration {
	t.Helper()
	return deployedConfigFor(t, cm, features.Gates{})
}

// deployedConfigFor is deployedConfig as `minisched run --feature-gates`
// decodes it: the default plugins depend on the gates.
func deployedConfigFor(t *testing.T, cm *v1.ConfigMap, gates features.Gates) *configv1.KubeSchedulerConfiguration {
	t.Helper()
	cfg, err := scheduler.DecodeConfigFor([]byte(cm.Data["config.yaml"]), gates)
	if err != nil {
		t.Fatalf("ConfigMap %s, config.yaml: %v", cm.Name, err)
	}
	return cfg
}
