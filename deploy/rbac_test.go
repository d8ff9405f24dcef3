// Integration tests of deploy/'s RBAC against a real apiserver (envtest,
// which authorizes with RBAC): the manifests are applied, then the scheduler
// and the annotator run as their ServiceAccounts, with a token from the
// TokenRequest API as a pod would have. Every request they send is
// recorded; the tests fail on any request denied (403), and on any rule of
// their roles that no request used. kube-controller-manager's storage and
// DRA controllers and the example provisioner run beside the scheduler (as
// administrators), so that its volume bindings complete and its pods'
// claim templates become claims.

package deploy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/annotator"
	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/provisioner"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/plugins/dynamic"
	"github.com/minisched/minisched/scenario"
	"github.com/minisched/minisched/scheduler"
	"github.com/minisched/minisched/testenv"
)

// testEnv is one apiserver with deploy/'s manifests applied, shared by the
// tests.
var testEnv *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithEnvironment(m.Run, &testEnv, func(env *testenv.Environment) error {
		if err := applyManifests(context.Background(), env.Config); err != nil {
			return fmt.Errorf("applying deploy/'s manifests: %w", err)
		}
		return nil
	}))
}

// applyManifests creates every object of deploy/*.yaml as an administrator,
// in kubectl's order. The apiserver validates each (the Deployment too,
// although no controller runs to start it).
func applyManifests(ctx context.Context, admin *rest.Config) error {
	ms, err := loadManifests()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	create := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *v1.Namespace:
			_, err = client.CoreV1().Namespaces().Create(ctx, o, create)
		case *v1.ServiceAccount:
			_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, create)
		case *v1.ConfigMap:
			_, err = client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, create)
		case *rbacv1.ClusterRole:
			_, err = client.RbacV1().ClusterRoles().Create(ctx, o, create)
		case *rbacv1.ClusterRoleBinding:
			_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, o, create)
		case *rbacv1.Role:
			_, err = client.RbacV1().Roles(o.Namespace).Create(ctx, o, create)
		case *rbacv1.RoleBinding:
			_, err = client.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, create)
		case *appsv1.Deployment:
			_, err = client.AppsV1().Deployments(o.Namespace).Create(ctx, o, create)
		default:
			err = fmt.Errorf("applyManifests does not know how to create a %T", m.obj)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m.file, err)
		}
	}
	return nil
}

// runs numbers the namespaces and nodes the tests create, so that each run
// (go test -count=N shares one apiserver) starts on objects of its own:
// without a namespace controller, a namespace is never really deleted.
var runs atomic.Int64

// uniqueName returns prefix with a number no other call got.
func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, runs.Add(1)) }

// request is one API request a client sent, as RBAC sees it, with the
// status of the answer.
type request struct {
	method, url string
	status      int
	// verb, group, resource (with "/subresource"), namespace and name, as
	// the apiserver's authorizer sees them; resource is empty for a
	// non-resource URL (/version).
	verb, group, resource, namespace, name string
}

func (r request) String() string { return fmt.Sprintf("%s %s → %d", r.method, r.url, r.status) }

// requestLog records every request sent through a rest.Config it wraps.
type requestLog struct {
	mu   sync.Mutex
	reqs []request
	// conflicts are the paths whose next PUT is answered 409 Conflict
	// here, as if another client had changed the object first; the
	// request goes no further and is not recorded.
	conflicts map[string]bool
}

// conflictOnce makes the next PUT of path meet a conflict.
func (l *requestLog) conflictOnce(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conflicts == nil {
		l.conflicts = map[string]bool{}
	}
	l.conflicts[path] = true
}

// takeConflict reports whether r is to meet a conflict, and forgets it.
func (l *requestLog) takeConflict(r *http.Request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Method != http.MethodPut || !l.conflicts[r.URL.Path] {
		return false
	}
	delete(l.conflicts, r.URL.Path)
	return true
}

// conflict is the apiserver's answer to an update of a stale object.
func conflict(r *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,` +
		`"message":"the object has been modified; please apply your changes to the latest version and try again"}`
	return &http.Response{StatusCode: http.StatusConflict, Status: "409 Conflict", Request: r,
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap is a rest.Config's WrapTransport: it records each answered request.
func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if l.takeConflict(r) {
			return conflict(r), nil
		}
		resp, err := rt.RoundTrip(r)
		if err == nil {
			req := describe(r.Method, r.URL)
			req.status = resp.StatusCode
			l.mu.Lock()
			l.reqs = append(l.reqs, req)
			l.mu.Unlock()
		}
		return resp, err
	})
}

// all returns a copy of the requests recorded so far.
func (l *requestLog) all() []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// forbidden returns the requests answered 403 Forbidden.
func (l *requestLog) forbidden() []request {
	var out []request
	for _, r := range l.all() {
		if r.status == http.StatusForbidden {
			out = append(out, r)
		}
	}
	return out
}

// describe turns a request into what RBAC authorizes, as the apiserver's
// RequestInfoFactory does for the paths client-go sends:
// /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]] and the same under
// /apis/GROUP/VERSION.
func describe(method string, u *url.URL) request {
	r := request{method: method, url: u.RequestURI()}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.group, parts = parts[1], parts[3:]
	default:
		return r // a non-resource URL
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.namespace, parts = parts[1], parts[2:]
	}
	r.resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	if len(parts) > 2 {
		r.resource += "/" + parts[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case r.name != "":
			r.verb = "get"
		case u.Query().Get("watch") == "true" || u.Query().Get("watch") == "1":
			r.verb = "watch"
		default:
			r.verb = "list"
		}
	case http.MethodPost:
		r.verb = "create"
	case http.MethodPut:
		r.verb = "update"
	case http.MethodPatch:
		r.verb = "patch"
	case http.MethodDelete:
		r.verb = "delete"
		if r.name == "" {
			r.verb = "deletecollection"
		}
	}
	return r
}

// unusedGrants returns the grants no successful request in reqs used.
func unusedGrants(gs []grant, reqs []request) []string {
	var out []string
	for _, g := range gs {
		used := slices.ContainsFunc(reqs, func(r request) bool {
			return r.status < 400 && r.verb == g.verb && r.group == g.group && r.resource == g.resource &&
				(g.names == "" || slices.Contains(strings.Split(g.names, ","), r.name)) &&
				(g.namespace == "" || g.namespace == r.namespace)
		})
		if !used {
			out = append(out, g.String())
		}
	}
	return out
}

// grantsOf returns the grants of the named roles (ClusterRoles or Roles).
func grantsOf(ms []manifest, roles ...string) []grant {
	var out []grant
	for _, g := range roleGrants(ms) {
		if slices.Contains(roles, g.role) {
			out = append(out, g)
		}
	}
	return out
}

// serviceAccountConfig returns a rest.Config that authenticates as the
// ServiceAccount with a token from the TokenRequest API, as the kubelet
// mounts one into a pod, and records every request in log. It checks that
// the apiserver sees the ServiceAccount's user.
func serviceAccountConfig(ctx context.Context, t *testing.T, namespace, name string, log *requestLog) *rest.Config {
	t.Helper()
	admin, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	tr, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "requesting a token for ServiceAccount %s/%s", namespace, name)
	rc := &rest.Config{
		Host:            testEnv.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: testEnv.Config.CAData},
		BearerToken:     tr.Status.Token,
	}
	whoami, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	review, err := whoami.AuthenticationV1().SelfSubjectReviews().Create(ctx,
		&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	if got, want := review.Status.UserInfo.Username, "system:serviceaccount:"+namespace+":"+name; got != want {
		t.Fatalf("the token authenticates as %q, want %q", got, want)
	}
	rc.WrapTransport = log.wrap
	return rc
}

// TestTheRequestLogSeesDenials proves the log the other tests trust: what
// the scheduler's roles do not allow is answered 403, and the log records
// it. Each denial is also a limit of the roles worth keeping.
func TestTheRequestLogSeesDenials(t *testing.T) {
	ctx := context.Background()
	log := &requestLog{}
	client, err := kubernetes.NewForConfig(serviceAccountConfig(ctx, t, "minisched", "minisched", log))
	require.NoError(t, err)
	tests := []struct {
		name string
		call func() error
		want string // the request the log must hold, answered 403
	}{
		{
			name: "secrets cannot be read",
			call: func() error {
				_, err := client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
				return err
			},
			want: "GET /api/v1/secrets",
		},
		{
			name: "pods cannot be created",
			call: func() error {
				_, err := client.CoreV1().Pods("default").Create(ctx, scenario.MakePod("p").Obj(), metav1.CreateOptions{})
				return err
			},
			want: "POST /api/v1/namespaces/default/pods",
		},
		{
			name: "nodes cannot be patched: only the annotator writes annotations",
			call: func() error {
				_, err := client.CoreV1().Nodes().Patch(ctx, "n", "application/merge-patch+json", []byte(`{}`),
					metav1.PatchOptions{})
				return err
			},
			want: "PATCH /api/v1/nodes/n",
		},
		{
			name: "volumes are updated, never deleted",
			call: func() error {
				return client.CoreV1().PersistentVolumes().Delete(ctx, "pv", metav1.DeleteOptions{})
			},
			want: "DELETE /api/v1/persistentvolumes/pv",
		},
		{
			name: "only the Lease the configuration names can be read",
			call: func() error {
				_, err := client.CoordinationV1().Leases("minisched").Get(ctx, "kube-scheduler", metav1.GetOptions{})
				return err
			},
			want: "GET /apis/coordination.k8s.io/v1/namespaces/minisched/leases/kube-scheduler",
		},
		{
			name: "leases elsewhere cannot be created",
			call: func() error {
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "minisched"}}
				_, err := client.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{})
				return err
			},
			want: "POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(log.forbidden())
			if err := tt.call(); !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden", err)
			}
			denied := log.forbidden()[before:]
			if len(denied) != 1 || !strings.HasPrefix(denied[0].String(), tt.want) {
				t.Errorf("the log holds %v, want one 403 for %s", denied, tt.want)
			}
		})
	}
}

// listModes are the two ways an informer fills its cache: a streaming list
// (a watch with sendInitialEvents, client-go's default, which RBAC
// authorizes as watch) and a plain LIST, client-go's fallback against an
// apiserver that does not stream lists. The roles grant list for the
// second; the tests run both.
var listModes = []struct {
	name      string
	watchList bool
}{
	{name: "streaming lists", watchList: true},
	{name: "plain lists", watchList: false},
}

// schedulerRuns are TestSchedulerAsServiceAccount's runs: one per list
// mode, the streaming one with kube-scheduler's default gates, as
// deployed, the plain one with GenericWorkload on, so that the PodGroup
// informer's two verbs are seen and a gang is scheduled.
var schedulerRuns = []struct {
	name      string
	watchList bool
	gates     features.Gates
}{
	{name: "streaming lists", watchList: true},
	{name: "plain lists, GenericWorkload", watchList: false, gates: features.Gates{GenericWorkload: true}},
}

// TestSchedulerAsServiceAccount runs the scheduler with the ConfigMap's
// configuration as the ServiceAccount minisched, once per schedulerRuns,
// and takes it through everything it writes: a binding and its Scheduled
// event, the volumes of two pods (a static volume's claimRef, a claim's
// selected node for the provisioner), a pod that does not fit
// (PodScheduled=False, FailedScheduling, repeated as an event series), a
// preemption (the victim's condition and deletion, the preemptor's
// nomination), the claims of DynamicResources (runDRAStories), with
// GenericWorkload a gang and its PodGroup's condition, and leader election
// on its Lease. No request may be denied, and every rule of its roles must
// have been used by the runs.
func TestSchedulerAsServiceAccount(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ms := mustLoadManifests(t)
	admin, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	// The PV binder completes what VolumeBinding's PreBind starts; the
	// resourceclaim controller makes the claims of pods' templates; the
	// provisioner makes the volumes of its class, on any node.
	kcm, err := testEnv.StartControllerManager(slices.Concat(testenv.StorageControllers, testenv.DRAControllers)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := kcm.Stop(); err != nil {
			t.Errorf("kube-controller-manager: %v", err)
		}
	})
	provisionerCtx, stopProvisioner := context.WithCancel(ctx)
	provisioned := make(chan error, 1)
	go func() {
		provisioned <- provisioner.New(admin, provisioner.Options{DefaultCapacity: resource.MustParse("10Gi")}).
			Run(provisionerCtx)
	}()
	t.Cleanup(func() {
		stopProvisioner()
		if err := <-provisioned; err != nil {
			t.Errorf("provisioner: %v", err)
		}
	})
	for name, value := range map[string]int32{"rbac-low": 10, "rbac-high": 1000} {
		_, err := admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			if err := admin.SchedulingV1().PriorityClasses().Delete(context.Background(), name,
				metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting PriorityClass %s: %v", name, err)
			}
		})
	}
	// As in a fresh cluster, the first run finds no Lease and creates it
	// (an earlier go test -count run left one behind, released).
	le := deployedConfig(t, find[*v1.ConfigMap](t, ms, "minisched-config")).LeaderElection
	err = admin.CoordinationV1().Leases(le.ResourceNamespace).Delete(ctx, le.ResourceName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	var all []request
	for _, run := range schedulerRuns {
		t.Run(run.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, run.watchList)
			log := &requestLog{}
			runScheduler(ctx, t, ms, admin, uniqueName("rbac"), run.gates, log)
			reqs := log.all()
			all = append(all, reqs...)
			t.Run("every informer filled its cache", func(t *testing.T) {
				resources := []string{"pods", "nodes", "namespaces", "services", "replicationcontrollers",
					"replicasets", "statefulsets", "poddisruptionbudgets", "persistentvolumes",
					"persistentvolumeclaims", "storageclasses", "csinodes", "csidrivers", "csistoragecapacities",
					"volumeattachments", "deviceclasses", "resourceslices", "devicetaintrules", "resourceclaims"}
				if run.gates.GenericWorkload {
					resources = append(resources, "podgroups")
				}
				for _, res := range resources {
					verbs := []string{"list", "watch"}
					if run.watchList {
						verbs = []string{"watch"}
					}
					for _, verb := range verbs {
						if !slices.ContainsFunc(reqs, func(r request) bool {
							return r.resource == res && r.verb == verb && r.status == http.StatusOK &&
								(!run.watchList || strings.Contains(r.url, "sendInitialEvents=true"))
						}) {
							t.Errorf("no successful %s of %s", verb, res)
						}
					}
				}
			})
		})
	}
	t.Run("every rule of the roles was used", func(t *testing.T) {
		all := append(all, bindingGrantsOf(all)...)
		for _, g := range unusedGrants(grantsOf(ms, "minisched", "minisched-leader-election"), all) {
			t.Errorf("granted but not used: %s", g)
		}
	})
}

// runScheduler runs the scheduler with gates as the ServiceAccount
// minisched on a node and a namespace named ns of its own, recording its
// requests in log, and removes the pods and the node when done, so that the
// next run starts clean.
func runScheduler(ctx context.Context, t *testing.T, ms []manifest, admin kubernetes.Interface, ns string,
	gates features.Gates, log *requestLog) {
	cfg := deployedConfigFor(t, find[*v1.ConfigMap](t, ms, "minisched-config"), gates)
	dep := find[*appsv1.Deployment](t, ms, "minisched")
	rc := serviceAccountConfig(ctx, t, "minisched", "minisched", log)
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	env := &scenario.Env{Client: admin, Namespace: ns, SchedulerName: *cfg.Profiles[0].SchedulerName,
		Attempts: scenario.NewAttemptLog()}
	node := ns + "-node"
	require.NoError(t, env.CreateNodes(ctx, scenario.MakeNode(node).Capacity(
		map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()))
	t.Cleanup(func() {
		ctx := context.Background()
		if err := admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
			metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the pods of %s: %v", ns, err)
		}
		if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting node %s: %v", node, err)
		}
	})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	svc, err := scheduler.New(runCtx, cfg, rc, scheduler.WithObserver(env.Attempts.Record),
		scheduler.WithFeatureGates(gates))
	require.NoError(t, err)
	addr, err := svc.Serve(runCtx, "127.0.0.1:0")
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- svc.Run(runCtx) }()
	stopped := false
	shutdown := func() {
		if stopped {
			return
		}
		stopped = true
		stop()
		select {
		case err := <-runErr:
			if err != nil {
				t.Errorf("Run returned %v, want nil on a clean stop", err)
			}
		case <-time.After(time.Minute):
			t.Error("Run did not return within a minute of being stopped")
		}
	}
	defer shutdown()

	t.Run("the Deployment's probes answer once the informers have synced", func(t *testing.T) {
		c := dep.Spec.Template.Spec.Containers[0]
		for _, path := range []string{c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path} {
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, scenario.DefaultWait, true,
				func(ctx context.Context) (bool, error) {
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr.String()+path, nil)
					if err != nil {
						return false, err
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return false, err
					}
					_ = resp.Body.Close()
					return resp.StatusCode == http.StatusOK, nil
				})
			require.NoError(t, err, "GET %s", path)
		}
	})

	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }

	t.Run("a pod is bound and its Scheduled event written", func(t *testing.T) {
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("fits").Req(cpu("100m")).Obj()))
		p, err := env.WaitForPodBound(ctx, "fits", scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, node, p.Spec.NodeName)
		_, err = env.WaitForEvent(ctx, "fits", "Scheduled", scenario.DefaultWait)
		require.NoError(t, err)
	})

	if gates.GenericWorkload {
		runGangStory(ctx, t, env, admin)
	}

	// The volumes' names carry ns: PVs and classes are cluster-wide, and
	// each run has a namespace of its own.
	t.Run("a pod's WaitForFirstConsumer claim is bound to the volume on its node", func(t *testing.T) {
		class := builders.MakeStorageClass().Name(ns + "-static").WaitForFirstConsumer().Obj()
		pv := builders.MakePV().Name(ns+"-pv").Class(class.Name).Capacity("1Gi").
			NodeAffinityIn(v1.LabelHostname, node).Obj()
		pvc := builders.MakePVC().Namespace(ns).Name("static-data").Class(class.Name).Req("1Gi").Obj()
		require.NoError(t, env.CreateObjects(ctx, class, pv, pvc))
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("static").PVC(pvc.Name).Obj()))
		p, err := env.WaitForPodBound(ctx, "static", scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, node, p.Spec.NodeName)
		require.Equal(t, pv.Name, waitForClaimBound(ctx, t, admin, ns, pvc.Name))
	})

	t.Run("a pod's claim is provisioned on its node", func(t *testing.T) {
		class := provisioner.StorageClass(ns + "-local")
		pvc := builders.MakePVC().Namespace(ns).Name("provisioned-data").Class(class.Name).Req("1Gi").Obj()
		require.NoError(t, env.CreateObjects(ctx, class, pvc))
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("provisioned").PVC(pvc.Name).Obj()))
		p, err := env.WaitForPodBound(ctx, "provisioned", scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, node, p.Spec.NodeName)
		claim, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, node, claim.Annotations["volume.kubernetes.io/selected-node"],
			"the claim's selected node, which the scheduler writes")
		pvName := waitForClaimBound(ctx, t, admin, ns, pvc.Name)
		pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, node, pv.Annotations[provisioner.NodeAnnotation], "the node of the provisioned volume")
	})

	runDRAStories(ctx, t, env, admin, node, log)

	t.Run("a pod that fits nowhere gets PodScheduled=False and a FailedScheduling series", func(t *testing.T) {
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("too-big").Req(cpu("2")).Obj()))
		_, err := env.WaitForPodUnschedulable(ctx, "too-big", scenario.DefaultWait)
		require.NoError(t, err)
		_, err = env.WaitForEvent(ctx, "too-big", "FailedScheduling", scenario.DefaultWait)
		require.NoError(t, err)
		// A pod deleted from the node sends too-big back to the queue. The
		// broadcaster patches an event into a series when it repeats about
		// the same version of the pod: the first failure's condition
		// changed the pod, so the second failure's event is a new one, and
		// the third (the condition unchanged) repeats the second.
		for attempts := 2; attempts <= 3; attempts++ {
			require.NoError(t, env.CreatePods(ctx, scenario.MakePod("poke").NodeName(node).Obj()))
			require.NoError(t, env.DeletePod(ctx, "poke"))
			_, err := env.WaitForAttempts(ctx, "too-big", attempts, scenario.DefaultWait)
			require.NoError(t, err)
		}
		sel := fields.Set{"regarding.name": "too-big", "reason": "FailedScheduling"}.AsSelector().String()
		var seen []string
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				list, err := admin.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
				if err != nil {
					return false, err
				}
				seen = nil
				for _, e := range list.Items {
					seen = append(seen, fmt.Sprintf("%s (series %+v)", e.Name, e.Series))
				}
				return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
					return e.Series != nil && e.Series.Count >= 2
				}), nil
			})
		require.NoError(t, err, "waiting for the FailedScheduling event of too-big to become a series; events: %v", seen)
	})

	t.Run("a high-priority pod preempts a low-priority one", func(t *testing.T) {
		low := scenario.MakePod("low").PriorityClassName("rbac-low").Req(cpu("800m")).Obj()
		require.NoError(t, env.CreatePods(ctx, low))
		_, err := env.WaitForPodBound(ctx, "low", scenario.DefaultWait)
		require.NoError(t, err)
		high := scenario.MakePod("high").PriorityClassName("rbac-high").Req(cpu("500m")).Obj()
		require.NoError(t, env.CreatePods(ctx, high))
		p, err := env.WaitForPodBound(ctx, "high", scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, node, p.Spec.NodeName)
		_, err = admin.CoreV1().Pods(ns).Get(ctx, "low", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "the victim low: err = %v, want NotFound", err)
		_, err = env.WaitForEvent(ctx, "low", "Preempted", scenario.DefaultWait)
		require.NoError(t, err)
	})

	// A new leader renews at once (the Lease's update), then every
	// retryPeriod.
	t.Run("it leads on the Lease the configuration names, and renews it", func(t *testing.T) {
		if !svc.IsLeader() {
			t.Error("the only replica scheduled without leading")
		}
		le := cfg.LeaderElection
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				l, err := admin.CoordinationV1().Leases(le.ResourceNamespace).Get(ctx, le.ResourceName,
					metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				s := l.Spec
				return ptr.Deref(s.HolderIdentity, "") == svc.Identity() && s.AcquireTime != nil &&
					s.RenewTime != nil && s.RenewTime.After(s.AcquireTime.Time), nil
			})
		require.NoError(t, err, "waiting for a renewal of Lease %s/%s by %s", le.ResourceNamespace,
			le.ResourceName, svc.Identity())
	})

	shutdown()
	t.Run("no request was denied", func(t *testing.T) {
		for _, r := range log.forbidden() {
			t.Errorf("denied: %v", r)
		}
	})
}

// runGangStory schedules a gang of two in env's namespace, which the
// PodGroup informer must have seen, and waits for the pod-group cycle to
// write the PodGroup's condition.
func runGangStory(ctx context.Context, t *testing.T, env *scenario.Env, admin kubernetes.Interface) {
	t.Run("a gang is bound whole and its PodGroup says it was scheduled", func(t *testing.T) {
		ns := env.Namespace
		pg := builders.MakePodGroup().Name("gang").Namespace(ns).Gang(2).Obj()
		_, err := admin.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
		require.NoError(t, err)
		members := []string{"gang-a", "gang-b"}
		for _, name := range members {
			require.NoError(t, env.CreatePods(ctx, scenario.MakePod(name).PodGroup(pg.Name).Obj()))
		}
		_, err = env.WaitForPodsBound(ctx, members)
		require.NoError(t, err)
		var cond *metav1.Condition
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
			func(ctx context.Context) (bool, error) {
				got, err := admin.SchedulingV1beta1().PodGroups(ns).Get(ctx, pg.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				cond = apimeta.FindStatusCondition(got.Status.Conditions, "PodGroupInitiallyScheduled")
				return cond != nil && cond.Status == metav1.ConditionTrue, nil
			})
		require.NoError(t, err, "waiting for PodGroupInitiallyScheduled=True; it is %+v", cond)
	})
}

// waitForClaimBound waits until the PV binder bound the claim ns/name and
// returns its volume's name.
func waitForClaimBound(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	var last *v1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = pvc
			return pvc.Status.Phase == v1.ClaimBound, nil
		})
	require.NoError(t, err, "waiting for claim %s/%s to be bound; it is %+v", ns, name, last)
	return last.Spec.VolumeName
}

// TestAnnotatorAsServiceAccount runs `minisched annotate`'s controller as
// the ServiceAccount minisched-annotator, once per list mode, with a fixed
// metric in place of Prometheus: it must annotate a node with the metric
// and with the hot value of a Scheduled event, with no request denied and
// every rule of its role used.
func TestAnnotatorAsServiceAccount(t *testing.T) {
	ms := mustLoadManifests(t)
	var all []request
	for _, mode := range listModes {
		t.Run(mode.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, mode.watchList)
			log := &requestLog{}
			runAnnotator(t, uniqueName("annotated-node"), log)
			all = append(all, log.all()...)
			for _, r := range log.forbidden() {
				t.Errorf("denied: %v", r)
			}
		})
	}
	for _, g := range unusedGrants(grantsOf(ms, "minisched-annotator"), all) {
		t.Errorf("granted but not used: %s", g)
	}
}

// runAnnotator runs the annotator as the ServiceAccount minisched-annotator
// until it has annotated node (created here, with one Scheduled event),
// recording its requests in log.
func runAnnotator(t *testing.T, node string, log *requestLog) {
	_, ctx := ktesting.NewTestContext(t)
	rc := serviceAccountConfig(ctx, t, "minisched", "minisched-annotator", log)
	admin, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	_, err = admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting node %s: %v", node, err)
		}
	})
	pod := "pod-on-" + node
	_, err = admin.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: pod + ".scheduled", Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NowMicro(),
		ReportingController: "minisched", ReportingInstance: "minisched-test",
		Action: "Binding", Reason: "Scheduled", Type: v1.EventTypeNormal,
		Regarding: v1.ObjectReference{Kind: "Pod", Namespace: metav1.NamespaceDefault, Name: pod},
		Note:      "Successfully assigned default/" + pod + " to " + node,
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	policy, err := dynamic.ParsePolicy([]byte(`apiVersion: scheduler.policy.crane.io/v1alpha1
kind: DynamicSchedulerPolicy
spec:
  syncPolicy:
  - {name: cpu_usage_avg_5m, period: 1m}
  hotValue:
  - {timeRange: 5m, count: 1}
`))
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := annotator.NewController(runCtx, client, factory, fixedMetric("0.25"), policy, annotator.Options{})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()

	want := map[string]float64{"cpu_usage_avg_5m": 0.25, dynamic.HotValueKey: 1}
	var last map[string]string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = n.Annotations
			for key, w := range want {
				v, _, err := dynamic.ParseAnnotation(n.Annotations[key], dynamic.TimestampLocation())
				if err != nil || v != w {
					return false, nil
				}
			}
			return true, nil
		})
	stop()
	require.NoError(t, <-done)
	factory.Shutdown()
	require.NoError(t, err, "waiting for annotations %v; the node has %v", want, last)
}

// fixedMetric is a MetricSource that reports one value for every node.
type fixedMetric string

func (m fixedMetric) NodeMetric(context.Context, string, *v1.Node) (string, error) {
	return string(m), nil
}
