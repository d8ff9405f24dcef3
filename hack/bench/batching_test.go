package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/minisched/minisched/plugins/podtopologyspread"
	"github.com/minisched/minisched/scheduler"
)

// TestSchedulerConfig decodes the configuration each workload gives both
// schedulers with minisched's own loader (strict, defaulted, validated as
// kube-scheduler does): the batching workloads get upstream's profile,
// PodTopologySpread with defaultingType List and no default constraints;
// the others the default profile.
func TestSchedulerConfig(t *testing.T) {
	byName := map[string]Workload{}
	for _, w := range workloads(false) {
		byName[w.Name] = w
	}
	tests := []struct {
		workload string
		// noTopology: the profile's PodTopologySpread args are List and
		// empty; otherwise there is no pluginConfig for it (System).
		noTopology bool
	}{
		{"SchedulingBasic-500", false},
		{"TopologySpreading", false},
		{"SchedulingWithResourceClaimTemplate-500", false},
		{"HostPortConflict", true},
		{"ResourceSaturation", true},
	}
	for _, tt := range tests {
		t.Run(tt.workload, func(t *testing.T) {
			w, ok := byName[tt.workload]
			if !ok {
				t.Fatalf("no workload %s", tt.workload)
			}
			cfg, err := scheduler.DecodeConfig([]byte(schedulerConfig("/tmp/kubeconfig", w)))
			if err != nil {
				t.Fatal(err)
			}
			cc := cfg.ClientConnection
			if cc.Kubeconfig != "/tmp/kubeconfig" || cc.QPS != clientQPS || cc.Burst != clientBurst {
				t.Errorf("clientConnection = %+v, want the kubeconfig, qps %d, burst %d", cc, clientQPS, clientBurst)
			}
			if cfg.LeaderElection.LeaderElect == nil || *cfg.LeaderElection.LeaderElect {
				t.Error("leader election is on")
			}
			if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName == nil || *cfg.Profiles[0].SchedulerName != "default-scheduler" {
				t.Fatalf("profiles = %+v, want default-scheduler alone", cfg.Profiles)
			}
			var raw []configv1.PluginConfig
			for _, pc := range cfg.Profiles[0].PluginConfig {
				if pc.Name == "PodTopologySpread" {
					raw = append(raw, pc)
				}
			}
			if !tt.noTopology {
				// Defaulting may add the plugin's args; they must be System's.
				for _, pc := range raw {
					args, err := podtopologyspread.DecodeArgs(&pc.Args)
					if err != nil {
						t.Fatal(err)
					}
					if args.DefaultingType != configv1.SystemDefaulting {
						t.Errorf("PodTopologySpread defaulting %q, want System", args.DefaultingType)
					}
				}
				return
			}
			if len(raw) != 1 {
				t.Fatalf("%d PodTopologySpread pluginConfigs, want 1", len(raw))
			}
			args, err := podtopologyspread.DecodeArgs(&raw[0].Args)
			if err != nil {
				t.Fatal(err)
			}
			if args.DefaultingType != configv1.ListDefaulting || len(args.DefaultConstraints) != 0 {
				t.Errorf("PodTopologySpread args %+v, want List with no default constraints", args)
			}
		})
	}
}

func TestPodName(t *testing.T) {
	tests := []struct {
		prefix string
		i      int
		want   string
	}{
		{"pod", 0, "pod-0"},
		{"pod", 42, "pod-42"},
		{"init", 4999, "init-4999"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := podName(tt.prefix, tt.i)
			if got != tt.want {
				t.Errorf("podName(%q, %d) = %q, want %q", tt.prefix, tt.i, got, tt.want)
			}
			if i := podIndex(got); i != tt.i {
				t.Errorf("podIndex(%q) = %d, want %d", got, i, tt.i)
			}
		})
	}
	for _, bad := range []string{"pod", "pod-", "pod-x", "pod--1"} {
		if i := podIndex(bad); i != -1 {
			t.Errorf("podIndex(%q) = %d, want -1", bad, i)
		}
	}
}

func TestSignature(t *testing.T) {
	tests := []struct {
		i, batch int
		want     string
	}{
		{0, 100, "signature-label-0"},
		{99, 100, "signature-label-0"},
		{100, 100, "signature-label-1"},
		{7499, 100, "signature-label-74"},
		{7499, 7500, "signature-label-0"},
	}
	for _, tt := range tests {
		if got := signature(tt.i, tt.batch); got != tt.want {
			t.Errorf("signature(%d, %d) = %q, want %q", tt.i, tt.batch, got, tt.want)
		}
	}
}

// TestBatchingWorkloads checks the pod and node shapes against upstream's
// templates (pod-hostport-80.yaml, pod-saturation.yaml, node-default.yaml)
// and the signature label, one for all pods (signatureBatchSize = pods).
func TestBatchingWorkloads(t *testing.T) {
	tests := []struct {
		name     string
		cpu, mem string
		hostPort int32
	}{
		{"HostPortConflict", "100m", "100Mi", 80},
		{"ResourceSaturation", "3", "1Gi", 0},
	}
	for _, smoke := range []bool{true, false} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/smoke=%v", tt.name, smoke), func(t *testing.T) {
				i := slices.IndexFunc(workloads(smoke), func(w Workload) bool { return w.Name == tt.name })
				if i < 0 {
					t.Fatalf("no workload %s", tt.name)
				}
				w := workloads(smoke)[i]
				if w.Pods != w.Nodes || w.InitPods != 0 || !w.NoTopologyDefaults {
					t.Errorf("%d nodes, %d pods, %d init pods, no-topology profile %v; want pods = nodes, no init pods, the profile",
						w.Nodes, w.Pods, w.InitPods, w.NoTopologyDefaults)
				}
				if smoke && w.Pods > 20 {
					t.Errorf("%d pods at smoke size", w.Pods)
				}
				n := makeNode(w, 3)
				for r, want := range map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "32Gi", v1.ResourcePods: "110"} {
					if q := n.Status.Allocatable[r]; q.String() != want {
						t.Errorf("node allocatable %s = %s, want %s", r, q.String(), want)
					}
				}
				// One signature for every pod (upstream's batch size = pods).
				for _, c := range []struct {
					name, signature string
				}{
					{podName("pod", 0), "signature-label-0"},
					{podName("pod", w.Pods/2), "signature-label-0"},
					{podName("pod", w.Pods-1), "signature-label-0"},
				} {
					p := w.Pod(c.name)
					if got := p.Labels["signature"]; got != c.signature {
						t.Errorf("%s's signature label = %q, want %q", c.name, got, c.signature)
					}
					if p.Labels[roleLabel] != roleMeasured || p.Namespace != namespace {
						t.Errorf("%s: labels %v in %q, want role %s in %s", c.name, p.Labels, p.Namespace, roleMeasured, namespace)
					}
					if len(p.Spec.Containers) != 1 {
						t.Fatalf("%d containers, want 1", len(p.Spec.Containers))
					}
					ctr := p.Spec.Containers[0]
					if cpu, mem := ctr.Resources.Requests[v1.ResourceCPU], ctr.Resources.Requests[v1.ResourceMemory]; cpu.String() != tt.cpu || mem.String() != tt.mem {
						t.Errorf("requests %s CPU, %s memory; want %s, %s", cpu.String(), mem.String(), tt.cpu, tt.mem)
					}
					var ports []int32
					for _, port := range ctr.Ports {
						ports = append(ports, port.HostPort)
					}
					want := []int32(nil)
					if tt.hostPort != 0 {
						want = []int32{tt.hostPort}
					}
					if diff := cmp.Diff(want, ports); diff != "" {
						t.Errorf("host ports (-want +got)\n%s", diff)
					}
				}
			})
		}
	}
	if !strings.Contains(","+smokeDefault+",", ",HostPortConflict,") || !strings.Contains(","+smokeDefault+",", ",ResourceSaturation,") {
		t.Error("the smoke run does not play the batching workloads")
	}
}
