// The DRA part of the ServiceAccount's run: every request DynamicResources
// sends to resource.k8s.io, each in a story of its own, and the proof that
// the apiserver asks one more permission (resourceclaims/binding) of the
// same requests.

package deploy_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minisched/minisched/builders"
	"github.com/minisched/minisched/examples/dradriver"
	"github.com/minisched/minisched/scenario"
)

// bindingGrantsOf returns the requests that used resourceclaims/binding
// without naming it: the apiserver asks for it, with the request's verb,
// of every write to a claim's status that changes status.allocation or
// status.reservedFor (DRAResourceClaimGranularStatusAuthorization, on by
// default), and each of the scheduler's status writes does (PreBind writes
// both, PostFilter clears both, Unreserve removes the pod from
// reservedFor). TestClaimBindingIsAuthorizedApart shows the check.
func bindingGrantsOf(reqs []request) []request {
	var out []request
	for _, r := range reqs {
		if r.group == resourceapi.GroupName && r.resource == "resourceclaims/status" && r.status < 400 {
			out = append(out, request{method: r.method, url: "(authorized with) " + r.url, status: r.status,
				verb: r.verb, group: r.group, resource: "resourceclaims/binding"})
		}
	}
	return out
}

// runDRAStories takes the scheduler, running as the ServiceAccount in ns
// with its requests in log, through every write of DynamicResources, on
// devices of node: a claim made from a template allocated and reserved (the
// finalizer's update, the status's); a claim whose status write meets a
// conflict, which PreBind reads again (get); and a device whose attachment
// fails: PreBind gives up, Unreserve takes the pod out of reservedFor (a
// status patch), the next attempt's PostFilter frees the claim (a status
// update), and the attempt after it binds the pod once the device is
// attached; and the same failure of a claim the scheduler makes for an
// extended resource (create), which Unreserve deletes (delete) before the
// next attempt makes another (and names it in the pod's status). The resourceclaim controller runs beside it (as an
// administrator) to make the template's claim.
func runDRAStories(ctx context.Context, t *testing.T, env *scenario.Env, admin kubernetes.Interface, node string,
	log *requestLog) {
	ns := env.Namespace
	// Classes and slices are cluster-wide: their names carry ns.
	gpus, attachable := ns+".gpu.example.com", ns+".attach.example.com"
	// The extended resource an attachable device serves, through a claim
	// the scheduler makes.
	extended := v1.ResourceName("example.com/" + ns + "-gpu")
	require.NoError(t, env.CreateObjects(ctx,
		dradriver.DeviceClass(gpus, gpus), dradriver.DeviceClass(attachable, attachable),
		builders.MakeResourceSlice().Name(ns+"-gpus").Driver(gpus).Pool(node).Node(node).
			Device(builders.MakeDevice("gpu-0")).Device(builders.MakeDevice("gpu-1")).Obj(),
		dradriver.ExtendedResourceClass(ns+"-extended", attachable, string(extended)),
		builders.MakeResourceSlice().Name(ns+"-attachable").Driver(attachable).Pool(node).Node(node).
			Device(builders.MakeDevice("gpu-0").BindingConditions([]string{"attached"}, []string{"attach-failed"})).
			Device(builders.MakeDevice("gpu-1").BindingConditions([]string{"attached"}, []string{"attach-failed"})).Obj()))
	claimOf := func(class string) *builders.ResourceClaimWrapper {
		return builders.MakeResourceClaim().Namespace(ns).Request(builders.MakeDeviceRequest("gpu", class))
	}
	// reservedFor reports whether the claim is allocated and reserved for
	// the pod.
	reservedFor := func(pod *v1.Pod) func(*resourceapi.ResourceClaim) bool {
		return func(c *resourceapi.ResourceClaim) bool {
			return c.Status.Allocation != nil && slices.ContainsFunc(c.Status.ReservedFor,
				func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == pod.UID })
		}
	}
	expectBoundWithClaim := func(t *testing.T, pod, claim string) {
		t.Helper()
		p, err := env.WaitForPodBound(ctx, pod, scenario.DefaultWait)
		require.NoError(t, err)
		require.Equal(t, node, p.Spec.NodeName)
		waitForClaim(ctx, t, admin, ns, claim, "reserved for "+pod, reservedFor(p))
	}

	t.Run("a pod's claim made from its template is allocated a device on its node and reserved", func(t *testing.T) {
		tmpl := builders.MakeResourceClaimTemplate().Namespace(ns).Name("gpu").
			Claim(builders.MakeResourceClaim().Request(builders.MakeDeviceRequest("gpu", gpus))).Obj()
		require.NoError(t, env.CreateObjects(ctx, tmpl))
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("templated").ResourceClaimTemplate("gpu", "gpu").Obj()))
		claim, err := env.WaitForPodClaim(ctx, "templated", "gpu", scenario.DefaultWait)
		require.NoError(t, err)
		expectBoundWithClaim(t, "templated", claim)
	})

	t.Run("a claim whose status write meets a conflict is read again", func(t *testing.T) {
		require.NoError(t, env.CreateObjects(ctx, claimOf(gpus).Name("contended").Obj()))
		path := "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/contended"
		log.conflictOnce(path + "/status")
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("contended").ResourceClaim("gpu", "contended").Obj()))
		expectBoundWithClaim(t, "contended", "contended")
		if !slices.ContainsFunc(log.all(), func(r request) bool {
			return r.verb == "get" && r.url == path && r.status == http.StatusOK
		}) {
			t.Errorf("no GET %s after the conflict", path)
		}
	})

	t.Run("a device that fails to attach is freed, and the pod bound once one attaches", func(t *testing.T) {
		require.NoError(t, env.CreateObjects(ctx, claimOf(attachable).Name("attach").Obj()))
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("attach").ResourceClaim("gpu", "attach").Obj()))
		pod, err := admin.CoreV1().Pods(ns).Get(ctx, "attach", metav1.GetOptions{})
		require.NoError(t, err)
		// PreBind wrote the claim and waits for "attached".
		waitForClaim(ctx, t, admin, ns, "attach", "PreBind's reservation", reservedFor(pod))
		setCondition(ctx, t, admin, attachable, ns, "attach", "attach-failed")
		// The first PreBind fails (Unreserve patches the reservation away);
		// the next attempt's PostFilter deallocates the claim, and the one
		// after it allocates it afresh: no device status yet.
		waitForClaim(ctx, t, admin, ns, "attach", "a second reservation after the failure",
			func(c *resourceapi.ResourceClaim) bool { return reservedFor(pod)(c) && len(c.Status.Devices) == 0 })
		setCondition(ctx, t, admin, attachable, ns, "attach", "attached")
		expectBoundWithClaim(t, "attach", "attach")
		_, err = env.WaitForScheduledAttempt(ctx, "attach", scenario.DefaultWait)
		require.NoError(t, err)
		var got []string
		for _, a := range env.PodAttempts("attach") {
			got = append(got, string(a.Result))
		}
		if len(got) < 3 || got[0] != "SchedulerError" || !slices.Contains(got, "Unschedulable") {
			t.Errorf("attempts %v, want SchedulerError (PreBind), Unschedulable (PostFilter's deallocation), ..., Scheduled", got)
		}
	})

	t.Run("an extended resource backed by a class gets a claim the scheduler makes, deletes and makes again", func(t *testing.T) {
		require.NoError(t, env.CreatePods(ctx, scenario.MakePod("extended").Req(map[v1.ResourceName]string{extended: "1"}).Obj()))
		pod, err := admin.CoreV1().Pods(ns).Get(ctx, "extended", metav1.GetOptions{})
		require.NoError(t, err)
		// PreBind created the claim, wrote it and waits for "attached";
		// the attachment fails, Unreserve deletes the claim, and the next
		// attempt makes another.
		first := waitForExtendedClaim(ctx, t, admin, pod, "")
		setCondition(ctx, t, admin, attachable, ns, first, "attach-failed")
		second := waitForExtendedClaim(ctx, t, admin, pod, first)
		_, err = admin.ResourceV1().ResourceClaims(ns).Get(ctx, first, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "the first claim %s: err = %v, want NotFound", first, err)
		setCondition(ctx, t, admin, attachable, ns, second, "attached")
		expectBoundWithClaim(t, "extended", second)
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "extended", metav1.GetOptions{})
		require.NoError(t, err)
		if s := p.Status.ExtendedResourceClaimStatus; s == nil || s.ResourceClaimName != second {
			t.Errorf("the pod's extendedResourceClaimStatus is %+v, want it to name %s", s, second)
		}
	})
}

// setCondition sets the condition cond of driver's devices in the claim
// ns/name true, as the driver would.
func setCondition(ctx context.Context, t *testing.T, admin kubernetes.Interface, driver, ns, name, cond string) {
	t.Helper()
	require.NoError(t, dradriver.SetDeviceCondition(ctx, admin, driver, ns, name, metav1.Condition{
		Type: cond, Status: metav1.ConditionTrue, Reason: "Test", Message: "set by the test"}))
}

// waitForExtendedClaim polls until the scheduler has made a claim for the
// pod's extended resources (other than the claim named not) and reserved
// it for the pod, and returns its name.
func waitForExtendedClaim(ctx context.Context, t *testing.T, admin kubernetes.Interface, pod *v1.Pod, not string) string {
	t.Helper()
	var name string
	var seen []string
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			list, err := admin.ResourceV1().ResourceClaims(pod.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			seen = nil
			for i := range list.Items {
				c := &list.Items[i]
				seen = append(seen, scenario.DescribeClaim(c))
				owner := metav1.GetControllerOf(c)
				if c.Name == not || c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" ||
					owner == nil || owner.UID != pod.UID || c.Status.Allocation == nil {
					continue
				}
				if slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool {
					return r.UID == pod.UID
				}) {
					name = c.Name
					return true, nil
				}
			}
			return false, nil
		})
	require.NoError(t, err, "waiting for an extended-resource claim of %s other than %q; claims: %v", pod.Name, not, seen)
	return name
}

// waitForClaim polls until the claim ns/name is as ok wants, and returns it.
func waitForClaim(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, name, what string,
	ok func(*resourceapi.ResourceClaim) bool) *resourceapi.ResourceClaim {
	t.Helper()
	var last *resourceapi.ResourceClaim
	err := wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			c, err := admin.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = c
			return ok(c), nil
		})
	desc := "not found"
	if last != nil {
		desc = scenario.DescribeClaim(last)
	}
	require.NoError(t, err, "waiting for %s of claim %s/%s; %s", what, ns, name, desc)
	return last
}

// TestClaimBindingIsAuthorizedApart shows the check bindingGrantsOf counts
// on: a user allowed to update resourceclaims/status, but not
// resourceclaims/binding, may not reserve a claim; the apiserver refuses
// with a validation error (422) that names the missing permission, and
// grants the same update once the binding permission is added.
func TestClaimBindingIsAuthorizedApart(t *testing.T) {
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(testEnv.Config)
	require.NoError(t, err)
	name := uniqueName("claim-status-only")
	const ns = "minisched"
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	role, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{resourceapi.GroupName},
			Resources: []string{"resourceclaims/status"}, Verbs: []string{"update"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, err := range []error{
			admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}),
			admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}),
			admin.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{}),
			admin.ResourceV1().ResourceClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}),
		} {
			if err != nil {
				t.Error(err)
			}
		}
	})
	claim, err := admin.ResourceV1().ResourceClaims(ns).Create(ctx, builders.MakeResourceClaim().Namespace(ns).Name(name).
		Request(builders.MakeDeviceRequest("gpu", "gpu.example.com")).Obj(), metav1.CreateOptions{})
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(serviceAccountConfig(ctx, t, ns, name, &requestLog{}))
	require.NoError(t, err)
	// An allocation as PreBind writes it (no device needs to exist).
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com",
			Pool: "node", Device: "gpu-0"}}}}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "uid-p"}}

	_, err = client.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `requires resource="resourceclaims/binding", verb="update"`) {
		t.Fatalf("status update without resourceclaims/binding: err = %v, want Invalid naming the permission", err)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{resourceapi.GroupName},
		Resources: []string{"resourceclaims/binding"}, Verbs: []string{"update"}})
	_, err = admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	// The authorizer's cache of roles follows the update within moments.
	err = wait.PollUntilContextTimeout(ctx, scenario.PollInterval, scenario.DefaultWait, true,
		func(ctx context.Context) (bool, error) {
			_, err := client.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
			return err == nil, nil
		})
	require.NoError(t, err, "the status update with resourceclaims/binding granted")
}
