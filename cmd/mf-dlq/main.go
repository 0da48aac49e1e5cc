// Command mf-dlq is the DLQ runbook (docs/runbooks/dlq.md) as one tool:
// contain, inspect, classify, redrive, verify, gen and sandbox. `mf-dlq
// --help` (the usage constant) prints their synopses, how to name a queue
// and the exit codes; each command's --help, its flags
// (docs/runbooks/dlq.md#the-tool).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
)

// Exit codes (documented in usage and the runbook).
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitEmpty       = 3
	exitNotVerified = 4
	exitRefused     = 5
	exitPermission  = 6
	exitInterrupted = 7
	exitPoison      = 10
	exitTransient   = 11
	exitData        = 12
	exitMixed       = 13
	exitExpired     = 14
)

// verdictExit maps a classification to its exit code.
var verdictExit = map[classify.Verdict]int{
	classify.Poison: exitPoison, classify.Transient: exitTransient, classify.Data: exitData, classify.Mixed: exitMixed, classify.Empty: exitEmpty,
	classify.Expired: exitExpired,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once (still safe: send comes before delete)
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mf-dlq: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	code, err := cmd(ctx, args[1:], stdout, stderr)
	var help helpRequested
	if errors.As(err, &help) {
		printHelp(stdout, help.fs)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mf-dlq %s: %v\n", args[0], err)
		return exitCode(err)
	}
	return code
}

func exitCode(err error) int {
	switch {
	case errors.Is(err, dlq.ErrUsage):
		return exitUsage
	case errors.Is(err, dlq.ErrEmpty):
		return exitEmpty
	case errors.Is(err, dlq.ErrNotVerified):
		return exitNotVerified
	case errors.Is(err, dlq.ErrInterrupted), errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, dlq.ErrPermission):
		return exitPermission
	case errors.Is(err, dlq.ErrNotConfirmed), errors.Is(err, dlq.ErrMoveTaskRunning), errors.Is(err, dlq.ErrNotDLQ),
		errors.Is(err, dlq.ErrNotDeadLetterQueue), errors.Is(err, dlq.ErrWouldSpendReceives), errors.Is(err, dlq.ErrExpired),
		errors.Is(err, dlq.ErrRefused):
		return exitRefused
	}
	return exitError
}

const usage = `mf-dlq: the DLQ runbook as a command (docs/runbooks/dlq.md)

  mf-dlq contain  QUEUE [--window 30s] [--samples 4] [--disable-consumer | --enable-consumer]
  mf-dlq inspect  QUEUE [-n 10] [--save FILE]
  mf-dlq classify QUEUE | --from-file FILE  [--max 1000] [--accept-versions 1] [--required-keys k1,k2]
  mf-dlq redrive  QUEUE --confirm-fixed [--only transient|data|poison|expired] [--reason TEXT]
                  [--version N] [--rate 10] [--max N] [--dry-run] [--to QUEUE] [--mode auto|task|loop]
                  [--readmit-expired]  (also the messages older than their consumer's
                  replay window, marked re-admitted: only after checking, for each,
                  that its side effect did not happen)
  mf-dlq verify   QUEUE [--expect N --since 2026-11-30T08:00:00Z | --since 45m] [--window 30s]
  mf-dlq gen      --scenario transient-burst|data-drip|deploy-v2|malformed|mixture|expired [--seed N] [--end TIME]
  mf-dlq sandbox  [--scenario deploy-v2] [--seed N] [-e dev] [--listen 127.0.0.1:0]
                  (serves SQS, the consumers' Lambda event source mappings and their
                  CloudWatch metrics in memory, with the data set played in and a
                  consumer that processes what it can; point the other commands at
                  it with --endpoint-url to rehearse)

Every command takes --json (the result as JSON on stdout) and --help (its flags).
redrive refuses to move poison or data messages unless --only names them.

QUEUE: a queue URL or name, or with -e dev|staging|prod a logical name (Pedidos,
Correo, AvisoERP, StockMovements, Inicio); a source queue stands for its DLQ.
AWS: --profile, --region, --endpoint-url (repeated in every suggested command).
Flags may follow QUEUE.

Exit codes: 0 done, 1 error, 2 usage, 3 empty DLQ, 4 not verified, 5 refused
(also: expired messages left in the DLQ, poison or data not named), 6 missing
permission, 7 interrupted; classify: 10 poison, 11 transient, 12 data, 13 mixed,
14 expired.
`
