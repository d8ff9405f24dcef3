// Tests for the command line's own logic: flags, options and usage errors.
// The subcommands themselves run in the scenario and example tests.
package app

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minisched/minisched/minisched/framework"
)

func TestStringList(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want string
	}{
		{name: "repeated", sets: []string{"a", "b"}, want: "a,b"},
		{name: "comma separated", sets: []string{"a,b", " c "}, want: "a,b,c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s stringList
			for _, v := range tt.sets {
				if err := s.Set(v); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

type namedPlugin string

func (p namedPlugin) Name() string { return string(p) }

func factoryFor(name string) framework.PluginFactory {
	return func(context.Context, *runtime.RawExtension, framework.Handle) (framework.Plugin, error) {
		return namedPlugin(name), nil
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		args    []string
		wantErr string
		usage   bool
	}{
		{name: "no subcommand", args: nil, usage: true},
		{name: "unknown subcommand", args: []string{"schedule"}, usage: true},
		{name: "help", args: []string{"help"}},
		{name: "plugin added twice", opts: []Option{WithPlugin("Mine", factoryFor("Mine")), WithPlugin("Mine", factoryFor("Mine"))},
			args: []string{"help"}, wantErr: `WithPlugin("Mine")`},
		{name: "plugin named like an in-tree one", opts: []Option{WithPlugin("NodeName", factoryFor("NodeName"))},
			args: []string{"help"}, wantErr: `WithPlugin("NodeName"): an in-tree plugin has that name`},
		{name: "apiserver without its flag", args: []string{"apiserver"}, wantErr: "--kubeconfig-out is required"},
		{name: "run -h", args: []string{"run", "-h"}, wantErr: flag.ErrHelp.Error()},
		{name: "a kubeconfig that does not exist", args: []string{"run", "--kubeconfig", "/nonexistent/kubeconfig",
			"--metrics-bind-address", "0"}, wantErr: `loading kubeconfig "/nonexistent/kubeconfig"`},
		{name: "a config file that does not exist", args: []string{"run", "--config", "/nonexistent/config.yaml"},
			wantErr: "/nonexistent/config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewCommand(tt.opts...).Run(context.Background(), tt.args)
			switch {
			case tt.usage:
				if !errors.Is(err, errUsage) {
					t.Errorf("error %v, want a usage error", err)
				}
			case tt.wantErr == "":
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
