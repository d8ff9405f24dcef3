// This file is how plugins are found and configured: the Registry of
// factories by name, and the decoding of a plugin's args from its entry in
// the profile's pluginConfig.

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// PluginFactory builds a plugin for one profile. args holds the plugin's
// entry from the profile's pluginConfig, or is nil when there is none; the
// factory decodes it with DecodeArgs into its own args type, applies
// defaults, validates, and returns a clear error naming the bad field.
type PluginFactory func(ctx context.Context, args *runtime.RawExtension, h Handle) (Plugin, error)

// Registry maps plugin names to factories. The in-tree registry is one
// visible block in package plugins; out-of-tree plugins are merged in.
type Registry map[string]PluginFactory

// Register adds a factory; a name may be registered only once.
func (r Registry) Register(name string, factory PluginFactory) error {
	if _, ok := r[name]; ok {
		return fmt.Errorf("a plugin named %q is already registered", name)
	}
	r[name] = factory
	return nil
}

// Merge adds every factory of other; a name present in both is an error.
func (r Registry) Merge(other Registry) error {
	for name, f := range other {
		if err := r.Register(name, f); err != nil {
			return err
		}
	}
	return nil
}

// Names lists the registered plugin names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DecodeArgs decodes a plugin's args into into (a pointer to the plugin's
// args struct, already holding defaults). JSON or YAML-turned-JSON is decoded
// strictly: an unknown or duplicate field is an error. A typed object in
// args.Object must be of into's type. apiVersion and kind may be present, as
// in kube-scheduler's configuration files.
func DecodeArgs(args *runtime.RawExtension, into interface{}) error {
	if args == nil {
		return nil
	}
	if args.Object != nil {
		if reflect.TypeOf(args.Object) != reflect.TypeOf(into) {
			return fmt.Errorf("want args of type %T, got %T", into, args.Object)
		}
		reflect.ValueOf(into).Elem().Set(reflect.ValueOf(args.Object).Elem())
		return nil
	}
	raw := bytes.TrimSpace(args.Raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, into, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("%v", joinErrors(strictErrs))
	}
	return nil
}

// DecodePluginArgs is the whole of a plugin's args decoder, for args of
// type T:
//  1. a new T is decoded from raw with DecodeArgs (nil means none); a decode
//     error is returned as "decoding <T's name>: …";
//  2. setDefaults, unless nil, fills in a deep copy, since a typed args
//     object in raw is shared with the configuration, which must not change;
//  3. validate, unless nil, checks the result, and its error is returned as
//     it is, naming the bad field.
func DecodePluginArgs[T any, PT interface {
	*T
	runtime.Object
}](raw *runtime.RawExtension, setDefaults func(PT), validate func(PT) error) (PT, error) {
	args := PT(new(T))
	// 1. Decode.
	if err := DecodeArgs(raw, args); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", reflect.TypeFor[T]().Name(), err)
	}
	// 2. Default a copy.
	if setDefaults != nil {
		args = args.DeepCopyObject().(PT)
		setDefaults(args)
	}
	// 3. Validate.
	if validate != nil {
		if err := validate(args); err != nil {
			return nil, err
		}
	}
	return args, nil
}

func joinErrors(errs []error) string {
	var b bytes.Buffer
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// EncodeArgs is the inverse of DecodeArgs, for tests that build
// configurations in code.
func EncodeArgs(obj interface{}) (*runtime.RawExtension, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: b}, nil
}
