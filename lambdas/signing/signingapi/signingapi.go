// Package signingapi is the contract of the charge signature
// (lambdas/signing) with the templates: the variable that names the
// signing key's secret and the shortest key the code accepts. Standard
// library only, so the constructs import it without linking Lambda code.
package signingapi

// EnvSecretARN names the signing key's Secrets Manager secret in the
// outbox publisher, the order starter and cobro.
const EnvSecretARN = "SIGNING_SECRET_ARN"

// MinKeyBytes is the shortest key the signer and the verifiers use (256
// bits, the HMAC-SHA256 output size).
const MinKeyBytes = 32
