package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/minisched/minisched/cache"
	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
	"github.com/minisched/minisched/plugins"
	"github.com/minisched/minisched/plugins/plugintesting"
)

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func TestDecodeConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{
			name:    "unknown top-level field",
			yaml:    header + "paralelism: 3\n",
			wantErr: `unknown field "paralelism"`,
		},
		{
			name:    "unknown profile field",
			yaml:    header + "profiles:\n- schedulerName: a\n  plugin: {}\n",
			wantErr: `unknown field "profiles[0].plugin"`,
		},
		{
			name:    "wrong apiVersion",
			yaml:    "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
			wantErr: "apiVersion",
		},
		{
			name:    "wrong kind",
			yaml:    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Scheduler\n",
			wantErr: "kind",
		},
		{
			name:    "parallelism zero",
			yaml:    header + "parallelism: 0\n",
			wantErr: "parallelism: Invalid value: 0",
		},
		{
			name:    "percentage over 100",
			yaml:    header + "percentageOfNodesToScore: 101\n",
			wantErr: "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
		},
		{
			name:    "profile percentage negative",
			yaml:    header + "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: -1\n",
			wantErr: "profiles[0].percentageOfNodesToScore",
		},
		{
			name:    "max backoff below initial",
			yaml:    header + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
			wantErr: "podMaxBackoffSeconds",
		},
		{
			name:    "duplicate profile",
			yaml:    header + "profiles:\n- schedulerName: a\n- schedulerName: a\n",
			wantErr: "profiles[1].schedulerName: Duplicate value",
		},
		{
			name:    "empty profile name",
			yaml:    header + "profiles:\n- schedulerName: \"\"\n",
			wantErr: "profiles[0].schedulerName: Required value",
		},
		{
			// Only a lone profile may omit its name, as in kube-scheduler.
			name:    "unnamed profile beside a named one",
			yaml:    header + "profiles:\n- {}\n- schedulerName: other\n",
			wantErr: "profiles[0].schedulerName: Required value",
		},
		{
			name: "negative weight",
			yaml: header +
				"profiles:\n" +
				"- schedulerName: a\n" +
				"  plugins:\n" +
				"    score:\n" +
				"      enabled:\n" +
				"      - name: NodeNumber\n" +
				"        weight: -1\n",
			wantErr: "profiles[0].plugins.score.enabled[0].weight",
		},
		{
			name:    "lease not longer than the renew deadline",
			yaml:    header + "leaderElection:\n  leaseDuration: 10s\n",
			wantErr: "leaderElection.leaseDuration: Invalid value: \"10s\": must be greater than `RenewDeadline`",
		},
		{
			name:    "negative lease duration",
			yaml:    header + "leaderElection:\n  leaseDuration: -1s\n",
			wantErr: "leaderElection.leaseDuration: Invalid value: \"-1s\": must be greater than zero",
		},
		{
			name:    "negative renew deadline",
			yaml:    header + "leaderElection:\n  renewDeadline: -5s\n",
			wantErr: "leaderElection.renewDeadline: Invalid value: \"-5s\": must be greater than zero",
		},
		{
			name:    "negative retry period",
			yaml:    header + "leaderElection:\n  retryPeriod: -2s\n",
			wantErr: "leaderElection.retryPeriod: Invalid value: \"-2s\": must be greater than zero",
		},
		{
			// client-go's elector refuses it at start; we refuse it at load.
			name:    "renew deadline within one jittered retry period",
			yaml:    header + "leaderElection:\n  renewDeadline: 2s\n  retryPeriod: 2s\n",
			wantErr: "leaderElection.renewDeadline: Invalid value: \"2s\": must be greater than retryPeriod × 1.2 (2.4s)",
		},
		{
			name:    "a lock other than a Lease",
			yaml:    header + "leaderElection:\n  resourceLock: endpointsleases\n",
			wantErr: `leaderElection.resourceLock: Invalid value: "endpointsleases": resourceLock value must be "leases"`,
		},
		{
			name:    "a prioritizing extender without weight",
			yaml:    header + "extenders:\n- urlPrefix: http://e\n  prioritizeVerb: prio\n",
			wantErr: "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
		},
		{
			name:    "two binding extenders",
			yaml:    header + "extenders:\n- urlPrefix: http://a\n  bindVerb: bind\n- urlPrefix: http://b\n  bindVerb: bind\n",
			wantErr: `extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind`,
		},
		{
			name:    "a managed resource that is not an extended resource",
			yaml:    header + "extenders:\n- urlPrefix: http://a\n  managedResources:\n  - name: cpu\n",
			wantErr: `extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name`,
		},
		{
			name: "a resource managed twice",
			yaml: header + "extenders:\n- urlPrefix: http://a\n  managedResources:\n  - name: example.com/gpu\n" +
				"- urlPrefix: http://b\n  managedResources:\n  - name: example.com/gpu\n",
			wantErr: `extenders[1].managedResources[0].name: Invalid value: "example.com/gpu": duplicate extender managed resource name`,
		},
		{
			name:    "an unknown extender field",
			yaml:    header + "extenders:\n- urlPrefix: http://a\n  filterverb: filter\n",
			wantErr: `unknown field "extenders[0].filterverb"`,
		},
		{
			name: "duplicate pluginConfig",
			yaml: header +
				"profiles:\n" +
				"- schedulerName: a\n" +
				"  pluginConfig:\n" +
				"  - name: NodeNumber\n" +
				"  - name: NodeNumber\n",
			wantErr: "profiles[0].pluginConfig[1].name: Duplicate value",
		},
		{
			name:    "duplicate key",
			yaml:    header + "parallelism: 2\nparallelism: 3\n",
			wantErr: "parallelism",
		},
		{
			name:    "negative qps",
			yaml:    header + "clientConnection:\n  qps: -1\n",
			wantErr: "clientConnection.qps",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeConfig([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodeConfig() error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := DecodeConfig([]byte(header))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *cfg.Parallelism, int32(16); got != want {
		t.Errorf("parallelism = %d, want %d", got, want)
	}
	if *cfg.PodInitialBackoffSeconds != 1 || *cfg.PodMaxBackoffSeconds != 10 {
		t.Errorf("backoff = %d/%d, want 1/10", *cfg.PodInitialBackoffSeconds, *cfg.PodMaxBackoffSeconds)
	}
	if cfg.ClientConnection.QPS != 50 || cfg.ClientConnection.Burst != 100 {
		t.Errorf("qps/burst = %v/%v, want 50/100", cfg.ClientConnection.QPS, cfg.ClientConnection.Burst)
	}
	if !*cfg.EnableProfiling || !*cfg.EnableContentionProfiling {
		t.Errorf("enableProfiling/enableContentionProfiling = %v/%v, want true/true",
			*cfg.EnableProfiling, *cfg.EnableContentionProfiling)
	}
	// kube-scheduler's leader election defaults: on, on its own Lease.
	wantLE := configv1.KubeSchedulerConfiguration{}.LeaderElection
	wantLE.LeaderElect = ptr.To(true)
	wantLE.LeaseDuration = metav1.Duration{Duration: 15 * time.Second}
	wantLE.RenewDeadline = metav1.Duration{Duration: 10 * time.Second}
	wantLE.RetryPeriod = metav1.Duration{Duration: 2 * time.Second}
	wantLE.ResourceLock = "leases"
	wantLE.ResourceNamespace = "kube-system"
	wantLE.ResourceName = "kube-scheduler"
	if diff := cmp.Diff(wantLE, cfg.LeaderElection); diff != "" {
		t.Errorf("leaderElection (-want +got):\n%s", diff)
	}
	if len(cfg.Profiles) != 1 || *cfg.Profiles[0].SchedulerName != DefaultSchedulerName {
		t.Fatalf("profiles = %+v, want one %q", cfg.Profiles, DefaultSchedulerName)
	}
	if diff := cmp.Diff(DefaultPlugins(), cfg.Profiles[0].Plugins); diff != "" {
		t.Errorf("default plugins (-want +got):\n%s", diff)
	}
}

// TestLeaderElectionConfig: what leaderElection accepts, and what the
// defaults fill in around what is given.
func TestLeaderElectionConfig(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want func(*configv1.KubeSchedulerConfiguration)
	}{
		{
			name: "short durations, as the tests use",
			yaml: "leaderElection:\n  leaseDuration: 2s\n  renewDeadline: 1500ms\n  retryPeriod: 300ms\n",
			want: func(cfg *configv1.KubeSchedulerConfiguration) {
				le := &cfg.LeaderElection
				le.LeaseDuration.Duration, le.RenewDeadline.Duration = 2*time.Second, 1500*time.Millisecond
				le.RetryPeriod.Duration = 300 * time.Millisecond
			},
		},
		{
			name: "a lease of one's own keeps the other defaults",
			yaml: "leaderElection:\n  resourceName: my-scheduler\n  resourceNamespace: scheduling\n",
			want: func(cfg *configv1.KubeSchedulerConfiguration) {
				cfg.LeaderElection.ResourceName, cfg.LeaderElection.ResourceNamespace = "my-scheduler", "scheduling"
			},
		},
		{
			// As upstream: nothing else is checked when election is off.
			name: "off, with durations that would not do",
			yaml: "leaderElection:\n  leaderElect: false\n  leaseDuration: 1s\n  resourceLock: configmaps\n",
			want: func(cfg *configv1.KubeSchedulerConfiguration) {
				cfg.LeaderElection.LeaderElect = ptr.To(false)
				cfg.LeaderElection.LeaseDuration.Duration = time.Second
				cfg.LeaderElection.ResourceLock = "configmaps"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := DecodeConfig([]byte(header + tt.yaml))
			if err != nil {
				t.Fatalf("DecodeConfig: %v", err)
			}
			want := DefaultConfig()
			tt.want(want)
			if diff := cmp.Diff(want.LeaderElection, cfg.LeaderElection); diff != "" {
				t.Errorf("leaderElection (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProfilePlugins builds each profile's framework and checks what runs
// where, in order, with which weight: kube-scheduler's merge and multiPoint
// rules.
func TestProfilePlugins(t *testing.T) {
	tests := []struct {
		name        string
		plugins     string
		want        map[string][]string
		wantWeights map[string]int64
		wantErr     string
	}{
		{
			// kube-scheduler v1.37's default profile, per extension point and in
			// its order (as its startup log prints it).
			name: "defaults",
			want: map[string][]string{
				"PreEnqueue": {"SchedulingGates", "DynamicResources", "DefaultPreemption"},
				"QueueSort":  {"PrioritySort"},
				"PreFilter": {
					"TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
					"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
					"InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
				},
				"Filter": {
					"NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
					"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
					"PodTopologySpread", "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
				},
				"PostFilter": {"DynamicResources", "DefaultPreemption"},
				// Listed whatever the gate, as kube-scheduler's profile log
				// does; only runs with GenericWorkload.
				"PreScore": {
					"TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
					"InterPodAffinity", "NodeResourcesBalancedAllocation",
				},
				"Score": {
					"TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
					"InterPodAffinity", "DynamicResources", "NodeResourcesBalancedAllocation", "ImageLocality",
				},
				"Reserve": {"VolumeBinding", "DynamicResources"},
				"PreBind": {"VolumeBinding", "DynamicResources"},
				"Bind":    {"DefaultBinder"},
				// Fit and DynamicResources implement these whatever the
				// gates, so multiPoint expands them there, as upstream; only
				// a pod-group cycle calls them.
				"PlacementScore":     {"NodeResourcesFit"},
				"PodGroupPostFilter": {"DynamicResources", "DefaultPreemption"},
			},
			wantWeights: map[string]int64{
				"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
				"PodTopologySpread": 2, "InterPodAffinity": 2, "DynamicResources": 2, "NodeResourcesBalancedAllocation": 1,
				"ImageLocality": 1,
			},
		},
		{
			name: "multiPoint plugin added after the others",
			plugins: "multiPoint:\n" +
				"  enabled:\n" +
				"  - name: PrioritySort\n" +
				"  - name: NodeUnschedulable\n" +
				"  - name: NodeName\n" +
				"  - name: NodeResourcesFit\n" +
				"  - name: DefaultBinder\n" +
				"  - name: NodeNumber\n" +
				"    weight: 3\n" +
				"  disabled:\n" +
				"  - name: \"*\"\n",
			want: map[string][]string{
				"QueueSort": {"PrioritySort"}, "PreFilter": {"NodeResourcesFit"},
				"Filter":   {"NodeUnschedulable", "NodeName", "NodeResourcesFit"},
				"PreScore": {"NodeResourcesFit", "NodeNumber"}, "Score": {"NodeResourcesFit", "NodeNumber"},
				"Permit": {"NodeNumber"}, "Bind": {"DefaultBinder"}, "PlacementScore": {"NodeResourcesFit"},
			},
			wantWeights: map[string]int64{"NodeNumber": 3, "NodeResourcesFit": 1},
		},
		{
			name: "disable one plugin at one extension point",
			plugins: "multiPoint:\n" +
				"  enabled:\n" +
				"  - name: PrioritySort\n" +
				"  - name: NodeUnschedulable\n" +
				"  - name: NodeName\n" +
				"  - name: NodeResourcesFit\n" +
				"  - name: DefaultBinder\n" +
				"  disabled:\n" +
				"  - name: \"*\"\n" +
				"filter:\n" +
				"  disabled:\n" +
				"  - name: NodeName\n",
			want: map[string][]string{
				"QueueSort": {"PrioritySort"}, "PreFilter": {"NodeResourcesFit"},
				"Filter":   {"NodeUnschedulable", "NodeResourcesFit"},
				"PreScore": {"NodeResourcesFit"}, "Score": {"NodeResourcesFit"}, "Bind": {"DefaultBinder"},
				"PlacementScore": {"NodeResourcesFit"},
			},
		},
		{
			name: "star disables every default; specific Score weight wins over multiPoint",
			plugins: "multiPoint:\n" +
				"  enabled:\n" +
				"  - name: PrioritySort\n" +
				"  - name: NodeNumber\n" +
				"    weight: 2\n" +
				"  - name: DefaultBinder\n" +
				"  disabled:\n" +
				"  - name: \"*\"\n" +
				"score:\n" +
				"  enabled:\n" +
				"  - name: NodeNumber\n" +
				"    weight: 7\n" +
				"permit:\n" +
				"  disabled:\n" +
				"  - name: NodeNumber\n",
			want: map[string][]string{
				"QueueSort": {"PrioritySort"}, "PreScore": {"NodeNumber"}, "Score": {"NodeNumber"}, "Bind": {"DefaultBinder"},
			},
			wantWeights: map[string]int64{"NodeNumber": 7},
		},
		{
			name: "specific extension point overrides multiPoint and comes first",
			plugins: "multiPoint:\n" +
				"  enabled:\n" +
				"  - name: PrioritySort\n" +
				"  - name: NodeUnschedulable\n" +
				"  - name: NodeName\n" +
				"  - name: NodeResourcesFit\n" +
				"  - name: DefaultBinder\n" +
				"  disabled:\n" +
				"  - name: \"*\"\n" +
				"filter:\n" +
				"  enabled:\n" +
				"  - name: NodeResourcesFit\n",
			want: map[string][]string{
				"QueueSort": {"PrioritySort"}, "PreFilter": {"NodeResourcesFit"},
				"Filter":   {"NodeResourcesFit", "NodeUnschedulable", "NodeName"},
				"PreScore": {"NodeResourcesFit"}, "Score": {"NodeResourcesFit"}, "Bind": {"DefaultBinder"},
				"PlacementScore": {"NodeResourcesFit"},
			},
		},
		{
			name:        "re-enabling a default in multiPoint overrides its weight",
			plugins:     "multiPoint:\n  enabled:\n  - name: TaintToleration\n    weight: 9\n",
			wantWeights: map[string]int64{"TaintToleration": 9, "NodeAffinity": 2},
		},
		{
			name:        "disabling a default plugin removes it, with its weight",
			plugins:     "multiPoint:\n  disabled:\n  - name: DefaultPreemption\n  - name: VolumeBinding\n",
			wantWeights: map[string]int64{"TaintToleration": 3, "VolumeBinding": 0},
		},
		{
			name:    "unknown plugin lists the known ones",
			plugins: "filter:\n  enabled:\n  - name: Nope\n",
			wantErr: `unknown plugin "Nope" (known plugins: DefaultBinder, DefaultPreemption, Dynamic, DynamicResources, GangScheduling, ImageLocality,`,
		},
		{
			name:    "plugin at a point it does not implement",
			plugins: "filter:\n  enabled:\n  - name: PrioritySort\n",
			wantErr: `plugin "PrioritySort" is enabled at Filter but does not implement the Filter extension point`,
		},
		{
			name:    "two queue sorts",
			plugins: "queueSort:\n  enabled:\n  - name: PrioritySort\n  - name: PrioritySort\n",
			wantErr: "enabled twice at QueueSort",
		},
		{
			name:    "no bind plugin",
			plugins: "bind:\n  disabled:\n  - name: DefaultBinder\n",
			wantErr: "at least one Bind plugin is required",
		},
		{
			name:    "no queue sort",
			plugins: "queueSort:\n  disabled:\n  - name: \"*\"\n",
			wantErr: "exactly one QueueSort plugin is required, got 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := header + "profiles:\n- schedulerName: p\n"
			if tt.plugins != "" {
				doc += "  plugins:\n" + indent(tt.plugins, "    ")
			}
			cfg, err := DecodeConfig([]byte(doc))
			if err != nil {
				t.Fatalf("DecodeConfig: %v", err)
			}
			schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), &cfg.Profiles[0],
				handleOptions(t)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewFramework() error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewFramework: %v", err)
			}
			if diff := cmp.Diff(tt.want, schedFramework.ListPlugins()); tt.want != nil && diff != "" {
				t.Errorf("plugins (-want +got):\n%s", diff)
			}
			for name, w := range tt.wantWeights {
				if got := schedFramework.ScoreWeight(name); got != w {
					t.Errorf("weight of %s = %d, want %d", name, got, w)
				}
			}
		})
	}
}

// handleOptions gives a framework what every in-tree plugin needs from its
// Handle: a snapshot and an informer factory.
func handleOptions(t *testing.T) []framework.Option {
	return append(plugintesting.InformerOptions(t), framework.WithSnapshotSharedLister(cache.NewEmptySnapshot()))
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			b.WriteString(prefix + line)
		}
	}
	return b.String()
}

func TestPluginArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{
			name: "valid args",
			args: "reverse: true\n",
		},
		{
			name: "apiVersion and kind are accepted",
			args: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: NodeNumberArgs\nreverse: false\n",
		},
		{
			name:    "unknown field rejected",
			args:    "revers: true\n",
			wantErr: `plugin "NodeNumber"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := header +
				"profiles:\n" +
				"- schedulerName: p\n" +
				"  plugins:\n" +
				"    multiPoint:\n" +
				"      enabled:\n" +
				"      - name: NodeNumber\n" +
				"  pluginConfig:\n" +
				"  - name: NodeNumber\n" +
				"    args:\n" +
				indent(tt.args, "      ")
			cfg, err := DecodeConfig([]byte(doc))
			if err != nil {
				t.Fatalf("DecodeConfig: %v", err)
			}
			_, err = framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(), &cfg.Profiles[0],
				handleOptions(t)...)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("NewFramework: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("NewFramework() error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadConfigFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte(header+"bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfigFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("LoadConfigFile() error = %v, want the file name and the field", err)
	}
}

func TestMergePluginSet(t *testing.T) {
	p := func(name string, w int32) configv1.Plugin { return configv1.Plugin{Name: name, Weight: ptr.To(w)} }
	tests := []struct {
		name             string
		defaults, custom configv1.PluginSet
		want             []configv1.Plugin
	}{
		{
			name:     "re-enabling a default overrides its weight in place",
			defaults: configv1.PluginSet{Enabled: []configv1.Plugin{p("A", 1), p("B", 1)}},
			custom:   configv1.PluginSet{Enabled: []configv1.Plugin{p("C", 1), p("A", 5)}},
			want:     []configv1.Plugin{p("A", 5), p("B", 1), p("C", 1)},
		},
		{
			name:     "star drops all defaults",
			defaults: configv1.PluginSet{Enabled: []configv1.Plugin{p("A", 1)}},
			custom:   configv1.PluginSet{Enabled: []configv1.Plugin{p("C", 1)}, Disabled: []configv1.Plugin{{Name: "*"}}},
			want:     []configv1.Plugin{p("C", 1)},
		},
		{
			name:     "disable by name",
			defaults: configv1.PluginSet{Enabled: []configv1.Plugin{p("A", 1), p("B", 1)}},
			custom:   configv1.PluginSet{Disabled: []configv1.Plugin{{Name: "A"}}},
			want:     []configv1.Plugin{p("B", 1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mergePluginSet(tt.defaults, tt.custom)
			if diff := cmp.Diff(tt.want, got.Enabled); diff != "" {
				t.Errorf("enabled (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPluginErrorsInStableOrder: errors about several extension points come
// in framework.PluginSets' order, the same on every run (they used to follow
// a map's random order).
func TestPluginErrorsInStableOrder(t *testing.T) {
	doc := header + `profiles:
- schedulerName: a
  plugins:
    multiPoint:
      enabled:
      - name: ImageLocality
        weight: -1
    filter:
      enabled:
      - name: ""
    score:
      enabled:
      - name: NodeNumber
        weight: -2
    permit:
      enabled:
      - name: ""
`
	want := []string{
		"profiles[0].plugins.multiPoint.enabled[17].weight", // ImageLocality replaced in place
		"profiles[0].plugins.filter.enabled[0].name",
		"profiles[0].plugins.score.enabled[0].weight",
		"profiles[0].plugins.permit.enabled[0].name",
	}
	for run := range 20 {
		_, err := DecodeConfig([]byte(doc))
		if err == nil {
			t.Fatal("DecodeConfig accepted negative weights and unnamed plugins")
		}
		msg, last := err.Error(), -1
		for _, field := range want {
			i := strings.Index(msg, field)
			if i < 0 {
				t.Fatalf("run %d: error %q does not name %s", run, msg, field)
			}
			if i < last {
				t.Fatalf("run %d: %s is out of order in %q", run, field, msg)
			}
			last = i
		}
	}
}

// TestDefaultPluginsUnderGates: with GenericWorkload the default profile
// ends with GangScheduling, which is then PreEnqueue and Permit plugin;
// without it the profile has none of it, as kube-scheduler's defaulting.
func TestDefaultPluginsUnderGates(t *testing.T) {
	tests := []struct {
		name  string
		gates features.Gates
		want  bool
	}{
		{name: "default gates"},
		{name: "GenericWorkload", gates: features.Gates{GenericWorkload: true}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := DecodeConfigFor([]byte(header+"profiles:\n- schedulerName: p\n"), tt.gates)
			if err != nil {
				t.Fatal(err)
			}
			multiPoint := cfg.Profiles[0].Plugins.MultiPoint.Enabled
			last := multiPoint[len(multiPoint)-1].Name
			if got := last == "GangScheduling"; got != tt.want {
				t.Fatalf("multiPoint ends with %s; GangScheduling last: %t, want %t", last, got, tt.want)
			}
			schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(),
				&cfg.Profiles[0], append(handleOptions(t), framework.WithFeatureGates(tt.gates))...)
			if err != nil {
				t.Fatal(err)
			}
			listed := schedFramework.ListPlugins()
			for _, point := range []string{"PreEnqueue", "Permit"} {
				if got := slices.Contains(listed[point], "GangScheduling"); got != tt.want {
					t.Errorf("GangScheduling at %s: %t, want %t (%v)", point, got, tt.want, listed[point])
				}
			}
		})
	}
}

// TestPodGroupPluginSections: the pod-group sections of a profile's
// plugins (placementGenerate, placementScore, podGroupPostFilter) are
// decoded strictly, defaulted under the gates and merged with a user's
// entries by kube-scheduler's rules, and validated as the other sections.
func TestPodGroupPluginSections(t *testing.T) {
	tas := features.Gates{GenericWorkload: true, TopologyAwareWorkloadScheduling: true}
	tests := []struct {
		name    string
		gates   features.Gates
		plugins string
		// want are the pod-group extension points' plugins (nil: none).
		want map[string][]string
		// wantWeights are PlacementScore weights.
		wantWeights map[string]int64
		// wantDecodeErr is DecodeConfig's error; wantErr NewFramework's.
		wantDecodeErr, wantErr string
		// wantTail ends the defaulted multiPoint, if set.
		wantTail []string
	}{
		{
			name: "the default profile under TopologyAwareWorkloadScheduling", gates: tas,
			// kube-scheduler's defaulting appends them in this order.
			wantTail: []string{"NodeDeclaredFeatures", "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"},
			want: map[string][]string{"PlacementGenerate": {"TopologyPlacementGenerator"},
				"PlacementScore": {"NodeResourcesFit", "PodGroupPodsCount"}, "PodGroupPostFilter": {"DynamicResources", "DefaultPreemption"}},
			wantWeights: map[string]int64{"NodeResourcesFit": 1, "PodGroupPodsCount": 1},
		},
		{
			name: "GenericWorkload alone: no placement generator", gates: features.Gates{GenericWorkload: true},
			want: map[string][]string{"PlacementScore": {"NodeResourcesFit"},
				"PodGroupPostFilter": {"DynamicResources", "DefaultPreemption"}},
			wantWeights: map[string]int64{"NodeResourcesFit": 1, "PodGroupPodsCount": 0},
		},
		{
			name: "a placementScore entry sets the weight and comes first", gates: tas,
			plugins: "placementScore:\n  enabled:\n  - name: PodGroupPodsCount\n    weight: 5\n",
			want: map[string][]string{"PlacementGenerate": {"TopologyPlacementGenerator"},
				"PlacementScore": {"PodGroupPodsCount", "NodeResourcesFit"}, "PodGroupPostFilter": {"DynamicResources", "DefaultPreemption"}},
			wantWeights: map[string]int64{"NodeResourcesFit": 1, "PodGroupPodsCount": 5},
		},
		{
			name: "each section disabled its own way", gates: tas,
			plugins: "placementGenerate:\n  disabled:\n  - name: \"*\"\n" +
				"placementScore:\n  disabled:\n  - name: NodeResourcesFit\n" +
				"podGroupPostFilter:\n  disabled:\n  - name: DynamicResources\n",
			// DefaultPreemption, the other PodGroupPostFilter plugin of the
			// default profile, stays: only DynamicResources was disabled there.
			want: map[string][]string{
				"PlacementScore":     {"PodGroupPodsCount"},
				"PodGroupPostFilter": {"DefaultPreemption"},
			},
			wantWeights: map[string]int64{"PodGroupPodsCount": 1},
		},
		{
			name: "a plugin enabled where it does not implement the extension point", gates: tas,
			plugins: "placementGenerate:\n  enabled:\n  - name: PodGroupPodsCount\n",
			wantErr: `plugin "PodGroupPodsCount" is enabled at PlacementGenerate but does not implement the PlacementGenerate extension point`,
		},
		{
			name: "a PodGroupPostFilter plugin that is not one", gates: tas,
			plugins: "podGroupPostFilter:\n  enabled:\n  - name: NodeResourcesFit\n",
			wantErr: `plugin "NodeResourcesFit" is enabled at PodGroupPostFilter but does not implement the PodGroupPostFilter extension point`,
		},
		{
			name: "an unknown plugin", gates: tas,
			plugins: "placementScore:\n  enabled:\n  - name: Nope\n",
			wantErr: `unknown plugin "Nope" (known plugins: `,
		},
		{
			name: "the generator enabled twice", gates: tas,
			plugins: "placementGenerate:\n  enabled:\n  - name: TopologyPlacementGenerator\n  - name: TopologyPlacementGenerator\n",
			wantErr: `plugin "TopologyPlacementGenerator" is enabled twice at PlacementGenerate`,
		},
		{
			name: "a negative placement weight", gates: tas,
			plugins:       "placementScore:\n  enabled:\n  - name: PodGroupPodsCount\n    weight: -1\n",
			wantDecodeErr: "profiles[0].plugins.placementScore.enabled[0].weight: Invalid value: -1: must be non-negative",
		},
		{
			name: "an unnamed PodGroupPostFilter plugin", gates: tas,
			plugins:       "podGroupPostFilter:\n  enabled:\n  - weight: 1\n",
			wantDecodeErr: "profiles[0].plugins.podGroupPostFilter.enabled[0].name: Required value",
		},
		{
			name: "an unknown field", gates: tas,
			plugins:       "placementGenerate:\n  enable:\n  - name: TopologyPlacementGenerator\n",
			wantDecodeErr: `unknown field "profiles[0].plugins.placementGenerate.enable"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := header + "profiles:\n- schedulerName: p\n"
			if tt.plugins != "" {
				doc += "  plugins:\n" + indent(tt.plugins, "    ")
			}
			cfg, err := DecodeConfigFor([]byte(doc), tt.gates)
			if tt.wantDecodeErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantDecodeErr) {
					t.Fatalf("DecodeConfigFor() error = %v, want it to contain %q", err, tt.wantDecodeErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeConfigFor: %v", err)
			}
			if multiPoint := cfg.Profiles[0].Plugins.MultiPoint.Enabled; tt.wantTail != nil {
				var tail []string
				for _, p := range multiPoint[len(multiPoint)-len(tt.wantTail):] {
					tail = append(tail, p.Name)
				}
				if diff := cmp.Diff(tt.wantTail, tail); diff != "" {
					t.Errorf("the end of multiPoint (-want +got):\n%s", diff)
				}
			}
			schedFramework, err := framework.NewFramework(context.Background(), plugins.NewInTreeRegistry(),
				&cfg.Profiles[0], append(handleOptions(t), framework.WithFeatureGates(tt.gates))...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewFramework() error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewFramework: %v", err)
			}
			got := map[string][]string{}
			for point, names := range schedFramework.ListPlugins() {
				if point == "PlacementGenerate" || point == "PlacementScore" || point == "PodGroupPostFilter" {
					got[point] = names
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pod-group plugins (-want +got):\n%s", diff)
			}
			for name, w := range tt.wantWeights {
				if got := schedFramework.PlacementScoreWeight(name); got != w {
					t.Errorf("placement weight of %s = %d, want %d", name, got, w)
				}
			}
		})
	}
}
