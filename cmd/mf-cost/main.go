// Command mf-cost prints the monthly cost of one environment from its
// synthesized templates, the usage model and the dated price table
// (package cost), without AWS credentials:
//
//	go run ./cmd/mf-cost -e prod            (or: make cost ENV=prod)
//	go run ./cmd/mf-cost -e prod -before test/testdata/snapshots
//
// With -before it prints the monthly delta from the templates in that
// directory (the committed snapshots, say) to those of -dir.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mercadofresco/integration/cmd/mf-cost/cost"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mf-cost:", err)
		os.Exit(2)
	}
}

func run() error {
	env := flag.String("e", "prod", "environment (dev, staging, prod)")
	dir := flag.String("dir", "cdk.out", "directory of the synthesized templates (a cloud assembly or the snapshots)")
	before := flag.String("before", "", "directory of the templates to compare with: prints the monthly delta")
	usagePath := flag.String("usage", "", "usage model (default: the committed cmd/mf-cost/cost/usage.json)")
	pricesPath := flag.String("prices", "", "price table (default: the committed cmd/mf-cost/cost/prices-eu-west-1.json)")
	flag.Parse()

	usage, err := cost.DefaultUsage()
	if *usagePath != "" {
		usage, err = cost.LoadUsage(*usagePath)
	}
	if err != nil {
		return err
	}
	prices, err := cost.DefaultPrices()
	if *pricesPath != "" {
		prices, err = cost.LoadPrices(*pricesPath)
	}
	if err != nil {
		return err
	}
	after, err := cost.Load(*dir, *env)
	if err != nil {
		return fmt.Errorf("%w (run `make synth` or `cdk synth -c env=%s` first)", err, *env)
	}
	if *before != "" {
		old, err := cost.Load(*before, *env)
		if err != nil {
			return err
		}
		d, err := cost.CompareTemplates(old, after, usage, prices)
		if err != nil {
			return err
		}
		return d.Write(os.Stdout)
	}
	e, err := cost.Compute(after, usage, prices)
	if err != nil {
		return err
	}
	return e.Write(os.Stdout)
}
