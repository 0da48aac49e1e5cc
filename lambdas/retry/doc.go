// Package retry is the project's one retry policy for outbound calls:
// exponential backoff with full jitter at every attempt, a cap, a maximum
// number of attempts, classification of failures, a per-dependency retry
// budget, and waits that never run past the caller's deadline. Every
// outbound HTTP call of the project goes through a [Retrier]; code that only
// needs a backoff delay uses [FullJitter].
//
// # Waits
//
// The wait before retry n (n = 1 for the first retry) is
// FullJitter(Base, Cap, n-1, rnd) = uniform(0, min(Cap, Base·2^(n-1))), at
// every attempt, including those past the cap (the AWS SDK's legacy retryer
// waits exactly its maximum from the fifth attempt on, which re-synchronises
// the callers that jitter was meant to spread). Throttling (HTTP 429, or an
// error marked with [Throttled]) waits longer: the server's Retry-After
// (delta-seconds or an HTTP-date, see [ParseRetryAfter]) plus
// FullJitter(ThrottleBase, Cap, n-1), so callers told "come back in 2 s" do
// not all come back in the same millisecond; a Retry-After longer than
// MaxRetryAfter gives up instead of waiting.
//
// # Classification ([Classify])
//
//   - HTTP 5xx (except 501), and errors marked [Retryable]: retried.
//   - HTTP 429 and errors marked [Throttled]: retried, with the longer wait.
//   - Connection refused and other dial failures: retried (the request never
//     left this process, so the server applied nothing).
//   - Timeouts, connection resets, EOF while reading the answer, and any
//     unrecognised error: the effect is unknown, so retried only when the
//     caller declares the operation [Idempotent] (for the payment gateway:
//     because it sends an Idempotency-Key).
//   - Other 4xx, errors marked [Permanent], and the caller's own context
//     ending: never retried.
//
// # Retry budget
//
// A [Budget] is shared by every caller of one dependency in one process
// (create one per dependency in main and pass it to each Retrier). It
// counts calls and retries over a sliding window (default 10 s in 1 s
// buckets) and allows a retry only while retries stay at most Ratio (default
// 10 %) of all calls in the window, with a floor of MinRetries per window so
// that a quiet Lambda instance can still retry a single blip. Under a total
// outage the first calls fail, the ratio reaches 10 % and every caller stops
// retrying until the ratio drops: the dependency sees at most ~1.1 times its
// normal traffic instead of MaxAttempts times. [Budget.State] exposes the
// ratio and the denials for metrics.
//
// # Time
//
// The Retrier takes its clock and random source as options ([WithClock],
// [WithRand]), so tests and the retry-storm simulation (cmd/retry-storm)
// run the same code on a virtual clock with a seed. [Retrier.Do] runs the
// loop; [Retrier.Start] and [Retrier.Next] are the same decisions for
// callers that schedule attempts themselves (the simulation). A wait that
// would end after ctx's deadline is not started: Do returns the last error
// at once, so the caller keeps the remaining time for itself.
//
// # Why not an existing module
//
// Evaluated against the bars above (versions in the module proxy, 2026-11):
//
//   - github.com/cenkalti/backoff/v5 v5.0.3: its ExponentialBackOff draws
//     uniformly in Interval·[1-f, 1+f], not uniform(0, ·) (not full
//     jitter), and its MaxInterval caps the interval before randomisation;
//     the timer and the clock (time.Since) are not injectable (withTimer is
//     unexported), so it cannot run on a virtual clock; the random source is
//     the global one; RetryAfterError takes whole seconds and replaces the
//     wait without jitter; no classification, no idempotency distinction,
//     no budget; when ctx ends during a wait it returns ctx's cause instead
//     of the last error, and it starts waits that cannot finish before the
//     deadline. A custom BackOff could supply full jitter, but the
//     remaining gaps are the loop itself.
//   - github.com/hashicorp/go-retryablehttp v0.7.8: DefaultBackoff is
//     exponential without jitter, LinearJitterBackoff is linear and seeds
//     from time.Now; Retry-After (seconds and HTTP-date) is honoured but used
//     as the whole wait, without jitter; DefaultRetryPolicy retries every
//     transport error, timeouts and resets included, whether or not the
//     request is idempotent (the lesson's double charge); sleeps use
//     time.NewTimer (no virtual clock); no budget.
//   - github.com/aws/aws-sdk-go-v2/aws/retry v1.48.0: built for SDK
//     operations (smithy middleware), not plain net/http calls; the legacy
//     ExponentialJitterBackoff returns exactly the maximum, without jitter,
//     once the attempt number passes log2(max); it reads only
//     x-amz-retry-after (milliseconds, clamped to 5 s over the backoff), not
//     the standard Retry-After; its random source is crypto/rand behind an
//     unexported field and its clock is the internal sdk.NowTime/Sleep; its
//     retry quota is a token bucket (500 tokens, 5 per retry), not a ratio
//     over a window.
//
// None meets the bars, so the policy is written here (about 400 lines).
// AWS SDK clients keep the SDK's own retryer with AWS_MAX_ATTEMPTS (see
// lambdas/lambdaenv); this package is for the project's HTTP
// dependencies (payment gateway, warehouse, ERP, e-mail).
//
// The numbers (10 %, 10 s, the defaults of [Policy]) are discussed in
// docs/retry-storm.md.
package retry
