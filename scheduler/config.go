// This file reads a KubeSchedulerConfiguration: strict decoding, defaults as
// kube-scheduler's v1 defaulting, and validation whose errors name the field.

package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

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
// field.
func LoadConfigFile(path string) (*configv1.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler configuration: %w", err)
	}
	cfg, err := DecodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// DecodeConfig decodes, defaults and validates a configuration document.
func DecodeConfig(data []byte) (*configv1.KubeSchedulerConfiguration, error) {
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
	SetDefaults(cfg)
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// DefaultConfig returns the configuration used without --config: one
// profile, default-scheduler, with the default plugins.
func DefaultConfig() *configv1.KubeSchedulerConfiguration {
	cfg := &configv1.KubeSchedulerConfiguration{}
	cfg.APIVersion = configv1.SchemeGroupVersion.String()
	cfg.Kind = "KubeSchedulerConfiguration"
	SetDefaults(cfg)
	return cfg
}

// SetDefaults fills in what the configuration leaves out, as kube-scheduler's
// v1 defaulting does, and merges each profile's plugins with the defaults.
// Leader election defaults to off here (kube-scheduler defaults it on):
// minisched does not elect leaders yet.
func SetDefaults(cfg *configv1.KubeSchedulerConfiguration) {
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
	if cfg.LeaderElection.LeaderElect == nil {
		cfg.LeaderElection.LeaderElect = ptr.To(false)
	}
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
		p.Plugins = mergePlugins(DefaultPlugins(), p.Plugins)
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
	if *cfg.LeaderElection.LeaderElect {
		errs = append(errs, field.NotSupported(field.NewPath("leaderElection", "leaderElect"), true, []string{"false"}))
	}
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
		errs = append(errs, validateSupported(path.Child("plugins"), p.Plugins)...)
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
