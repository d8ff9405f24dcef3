// Command extender runs the example scheduler extender of package server
// on --listen, with a node cache fed by an informer (so it can serve
// schedulers configured with nodeCacheCapable: true) and a client that
// binds pods. Point a scheduler at it with
//
//	extenders:
//	- urlPrefix: http://127.0.0.1:8888
//	  filterVerb: filter
//	  prioritizeVerb: prioritize
//	  weight: 1
//	  bindVerb: bind
//	  preemptVerb: preempt
//	  nodeCacheCapable: true
//
// and run it with `go run ./examples/extender --kubeconfig FILE`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/minisched/minisched/examples/extender/server"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster whose pods the extender binds (required)")
	listen := flag.String("listen", "127.0.0.1:8888", "address to serve the extender verbs on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "extender:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, listen string) error {
	if kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes().Lister()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	srv := &http.Server{Addr: listen, Handler: server.New(client, nodes), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	klog.InfoS("Serving the example extender", "address", listen)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
