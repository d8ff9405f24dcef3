// Helpers a story runs in the background (the example provisioner, the
// example DRA driver), their log lines kept out of the story's narration.

package scenario

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
)

// quieter returns ctx carrying a logger one verbosity level quieter than
// the default, for a scheduler or helper running beside a story: its log
// lines stay out of the story's narration, and -v 1 brings them back.
func quieter(ctx context.Context) context.Context {
	return klog.NewContext(ctx, klog.Background().V(1))
}

// runQuietly runs run in the background, with a quieter context (see
// quieter), until stop is called. stop cancels that context, waits for run
// to return, and returns its error prefixed by what ("the example
// provisioner").
func runQuietly(ctx context.Context, what string, run func(context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(quieter(ctx))
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}
