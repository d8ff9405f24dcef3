// This file reads a KubeSchedulerConfiguration: strict decoding, defaults as
// kube-scheduler's v1 defaulting, and validation whose errors name the field.

package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/minisched/minisched/minisched/features"
	"github.com/minisched/minisched/minisched/framework"
)

// DefaultSchedulerName is the profile name used when none is given.
const DefaultSchedulerName = "default-scheduler"

// Client defaults, as in kube-scheduler (never client-go's 5/10).
const (
	DefaultQPS                = 50
	DefaultBurst              = 100
	DefaultContentType        = "application/vnd.kubernetes.protobuf"
	DefaultAcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
)

// LoadConfigFile reads a KubeSchedulerConfiguration (YAML or JSON,
// kubescheduler.config.k8s.io/v1), rejecting unknown and duplicate fields,
// then applies defaults and validates it. Every error names the file and the
// field. The defaults are those of kube-scheduler's default gates.
func LoadConfigFile(path string) (*configv1.KubeSchedulerConfiguration, error) {
	return LoadConfigFileFor(path, features.Gates{})
}

// LoadConfigFileFor is LoadConfigFile with the defaults of gates.
func LoadConfigFileFor(path string, gates features.Gates) (*configv1.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler configuration: %w", err)
	}
	cfg, err := DecodeConfigFor(data, gates)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// DecodeConfig decodes, defaults and validates a configuration document,
// with the defaults of kube-scheduler's default gates.
func DecodeConfig(data []byte) (*configv1.KubeSchedulerConfiguration, error) {
	return DecodeConfigFor(data, features.Gates{})
}

// DecodeConfigFor is DecodeConfig with the defaults of gates: as in
// kube-scheduler, the default plugins depend on the feature gates.
func DecodeConfigFor(data []byte, gates features.Gates) (*configv1.KubeSchedulerConfiguration, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if len(bytes.TrimSpace(js)) == 0 || bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, errors.New("empty configuration")
	}
	cfg := &configv1.KubeSchedulerConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("strict decoding error: %v", errors.Join(strictErrs...))
	}
	if want := configv1.SchemeGroupVersion.String(); cfg.APIVersion != want {
		return nil, fmt.Errorf("apiVersion: want %q, got %q", want, cfg.APIVersion)
	}
	if cfg.Kind != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("kind: want %q, got %q", "KubeSchedulerConfiguration", cfg.Kind)
	}
	SetDefaultsFor(cfg, gates)
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// DefaultConfig returns the configuration used without --config: one
// profile, default-scheduler, with the default plugins.
func DefaultConfig() *configv1.KubeSchedulerConfiguration { return DefaultConfigFor(features.Gates{}) }

// DefaultConfigFor is DefaultConfig with the defaults of gates.
func DefaultConfigFor(gates features.Gates) *configv1.KubeSchedulerConfiguration {
	cfg := &configv1.KubeSchedulerConfiguration{}
	cfg.APIVersion = configv1.SchemeGroupVersion.String()
	cfg.Kind = "KubeSchedulerConfiguration"
	SetDefaultsFor(cfg, gates)
	return cfg
}

// Leader election defaults, as kube-scheduler's v1 defaulting and
// component-base's RecommendedDefaultLeaderElectionConfiguration set them.
// The lease they name is kube-scheduler's own: a scheduler running beside
// kube-scheduler must name another (leaderElection.resourceName).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultResourceLock is the only lock kube-scheduler accepts.
	DefaultResourceLock      = "leases"
	DefaultResourceNamespace = configv1.SchedulerDefaultLockObjectNamespace // kube-system
	DefaultResourceName      = configv1.SchedulerDefaultLockObjectName      // kube-scheduler
)

// SetDefaults fills in what the configuration leaves out, as kube-scheduler's
// v1 defaulting does, and merges each profile's plugins with the defaults.
// Leader election is on by default, on the Lease kube-system/kube-scheduler,
// as in kube-scheduler. The default plugins are those of kube-scheduler's
// default gates.
func SetDefaults(cfg *configv1.KubeSchedulerConfiguration) { SetDefaultsFor(cfg, features.Gates{}) }

// SetDefaultsFor is SetDefaults with the default plugins of gates
// (DefaultPluginsFor).
func SetDefaultsFor(cfg *configv1.KubeSchedulerConfiguration, gates features.Gates) {
	if cfg.Parallelism == nil {
		cfg.Parallelism = ptr.To[int32](16)
	}
	if cfg.PercentageOfNodesToScore == nil {
		cfg.PercentageOfNodesToScore = ptr.To[int32](0)
	}
	if cfg.PodInitialBackoffSeconds == nil {
		cfg.PodInitialBackoffSeconds = ptr.To[int64](1)
	}
	if cfg.PodMaxBackoffSeconds == nil {
		cfg.PodMaxBackoffSeconds = ptr.To[int64](10)
	}
	setLeaderElectionDefaults(cfg)
	if cfg.EnableProfiling == nil {
		cfg.EnableProfiling = ptr.To(true)
	}
	if *cfg.EnableProfiling && cfg.EnableContentionProfiling == nil {
		cfg.EnableContentionProfiling = ptr.To(true)
	}
	cc := &cfg.ClientConnection
	if cc.QPS == 0 {
		cc.QPS = DefaultQPS
	}
	if cc.Burst == 0 {
		cc.Burst = DefaultBurst
	}
	if cc.ContentType == "" {
		cc.ContentType = DefaultContentType
	}
	if cc.AcceptContentTypes == "" {
		cc.AcceptContentTypes = DefaultAcceptContentTypes
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = []configv1.KubeSchedulerProfile{{}}
	}
	// Only a lone profile may leave its name out; with several, each must
	// say which pods it schedules (Validate rejects the unnamed ones).
	if len(cfg.Profiles) == 1 && cfg.Profiles[0].SchedulerName == nil {
		cfg.Profiles[0].SchedulerName = ptr.To(DefaultSchedulerName)
	}
	for i := range cfg.Profiles {
		p := &cfg.Profiles[i]
		p.Plugins = mergePlugins(DefaultPluginsFor(gates), p.Plugins)
	}
}

// Validate checks the defaulted configuration. Errors name the field, as
// kube-scheduler's do: "profiles[1].schedulerName: Duplicate value: ...".
func Validate(cfg *configv1.KubeSchedulerConfiguration) error {
	var errs field.ErrorList
	if p := *cfg.Parallelism; p <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("parallelism"), p, "should be an integer value greater than zero"))
	}
	if p := cfg.PercentageOfNodesToScore; p != nil && (*p < 0 || *p > 100) {
		errs = append(errs, field.Invalid(field.NewPath("percentageOfNodesToScore"), *p, "not in valid range [0-100]"))
	}
	if b := *cfg.PodInitialBackoffSeconds; b <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("podInitialBackoffSeconds"), b, "must be greater than 0"))
	}
	if b := *cfg.PodMaxBackoffSeconds; b < *cfg.PodInitialBackoffSeconds {
		errs = append(errs, field.Invalid(field.NewPath("podMaxBackoffSeconds"), b,
			"must be greater than or equal to PodInitialBackoffSeconds"))
	}
	if cfg.ClientConnection.QPS < 0 {
		errs = append(errs, field.Invalid(field.NewPath("clientConnection", "qps"), cfg.ClientConnection.QPS,
			"must be non-negative"))
	}
	if cfg.ClientConnection.Burst < 0 {
		errs = append(errs, field.Invalid(field.NewPath("clientConnection", "burst"), cfg.ClientConnection.Burst,
			"must be non-negative"))
	}
	errs = append(errs, validateLeaderElection(field.NewPath("leaderElection"), cfg)...)
	errs = append(errs, validateExtenders(field.NewPath("extenders"), cfg.Extenders)...)

	names := sets.New[string]()
	for i := range cfg.Profiles {
		p := &cfg.Profiles[i]
		path := field.NewPath("profiles").Index(i)
		name := ptr.Deref(p.SchedulerName, "")
		switch {
		case name == "":
			errs = append(errs, field.Required(path.Child("schedulerName"), ""))
		case names.Has(name):
			errs = append(errs, field.Duplicate(path.Child("schedulerName"), name))
		}
		names.Insert(name)
		if pct := p.PercentageOfNodesToScore; pct != nil && (*pct < 0 || *pct > 100) {
			errs = append(errs, field.Invalid(path.Child("percentageOfNodesToScore"), *pct, "not in valid range [0-100]"))
		}
		errs = append(errs, validatePlugins(path.Child("plugins"), p.Plugins)...)
		seen := sets.New[string]()
		for j, pc := range p.PluginConfig {
			if seen.Has(pc.Name) {
				errs = append(errs, field.Duplicate(path.Child("pluginConfig").Index(j).Child("name"), pc.Name))
			}
			seen.Insert(pc.Name)
		}
	}
	return errs.ToAggregate()
}

// setLeaderElectionDefaults fills in leaderElection as kube-scheduler does:
// its own lock (kind, namespace, name) first, then component-base's
// recommended durations and leaderElect true. A zero duration means unset.
func setLeaderElectionDefaults(cfg *configv1.KubeSchedulerConfiguration) {
	le := &cfg.LeaderElection
	if le.ResourceLock == "" {
		le.ResourceLock = DefaultResourceLock
	}
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = DefaultResourceNamespace
	}
	if le.ResourceName == "" {
		le.ResourceName = DefaultResourceName
	}
	if le.LeaseDuration.Duration == 0 {
		le.LeaseDuration = metav1.Duration{Duration: DefaultLeaseDuration}
	}
	if le.RenewDeadline.Duration == 0 {
		le.RenewDeadline = metav1.Duration{Duration: DefaultRenewDeadline}
	}
	if le.RetryPeriod.Duration == 0 {
		le.RetryPeriod = metav1.Duration{Duration: DefaultRetryPeriod}
	}
	if le.LeaderElect == nil {
		le.LeaderElect = ptr.To(true)
	}
}

// validateLeaderElection checks leaderElection when it is on, with
// component-base's ValidateLeaderElectionConfiguration rules and messages
// plus kube-scheduler's own (the lock must be a Lease). Two differences: the
// leaseDuration error shows leaseDuration's value (upstream shows
// renewDeadline's), and renewDeadline must exceed retryPeriod × 1.2, which
// upstream leaves to client-go's NewLeaderElector to refuse at start.
func validateLeaderElection(path *field.Path, cfg *configv1.KubeSchedulerConfiguration) field.ErrorList {
	le := &cfg.LeaderElection
	if !ptr.Deref(le.LeaderElect, false) {
		return nil
	}
	var errs field.ErrorList
	if le.LeaseDuration.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("leaseDuration"), le.LeaseDuration, "must be greater than zero"))
	}
	if le.RenewDeadline.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("renewDeadline"), le.RenewDeadline, "must be greater than zero"))
	}
	if le.RetryPeriod.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("retryPeriod"), le.RetryPeriod, "must be greater than zero"))
	}
	if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
		errs = append(errs, field.Invalid(path.Child("leaseDuration"), le.LeaseDuration,
			"must be greater than `RenewDeadline`"))
	}
	// Candidates retry every retryPeriod with up to 20% jitter, and a leader
	// gives up renewing after renewDeadline: client-go refuses a deadline
	// that a single jittered retry period can overrun.
	jittered := time.Duration(leaderelection.JitterFactor * float64(le.RetryPeriod.Duration))
	if le.RetryPeriod.Duration > 0 && le.RenewDeadline.Duration > 0 && le.RenewDeadline.Duration <= jittered {
		errs = append(errs, field.Invalid(path.Child("renewDeadline"), le.RenewDeadline,
			fmt.Sprintf("must be greater than retryPeriod × %v (%v)", leaderelection.JitterFactor, jittered)))
	}
	switch le.ResourceLock {
	case "":
		errs = append(errs, field.Required(path.Child("resourceLock"), ""))
	case DefaultResourceLock:
	default:
		errs = append(errs, field.Invalid(path.Child("resourceLock"), le.ResourceLock,
			`resourceLock value must be "leases"`))
	}
	if le.ResourceNamespace == "" {
		errs = append(errs, field.Required(path.Child("resourceNamespace"), ""))
	}
	if le.ResourceName == "" {
		errs = append(errs, field.Required(path.Child("resourceName"), ""))
	}
	return errs
}

// validatePlugins rejects an enabled plugin without a name and a negative
// weight, at every extension point. Errors come in the order of
// framework.PluginSets (multiPoint first, then as a pod meets the extension
// points), so the same configuration always gives the same message.
func validatePlugins(path *field.Path, p *configv1.Plugins) field.ErrorList {
	var errs field.ErrorList
	for _, ps := range framework.PluginSets(p) {
		for j, pl := range ps.Set.Enabled {
			entry := path.Child(ps.Field, "enabled").Index(j)
			if pl.Name == "" {
				errs = append(errs, field.Required(entry.Child("name"), ""))
			}
			if pl.Weight != nil && *pl.Weight < 0 {
				errs = append(errs, field.Invalid(entry.Child("weight"), *pl.Weight, "must be non-negative"))
			}
		}
	}
	return errs
}
