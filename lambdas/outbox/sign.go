package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// SignatureKey is the detail member a Signer's signature travels in
// (eventsapi.PedidoCreado.Firma). With a Signer, the publisher always sets
// it itself: a payload member of that name is dropped, never published.
const SignatureKey = "firma"

// ErrUnsignable marks an event a Signer can never sign (its payload lacks
// what the signature covers): the row is parked. Any other Signer error
// (the key could not be read) releases the row without counting the
// attempt, like an unreachable bus.
var ErrUnsignable = errors.New("outbox: event cannot be signed")

// Signer signs the events of the types it knows: Sign returns the value of
// the SignatureKey member for the event, or "" to publish it unsigned.
type Signer interface {
	Sign(ctx context.Context, eventType, eventID, payload string) (string, error)
}

// ChargeKeys is the signing key's source; *signing.SecretSource implements it.
type ChargeKeys interface {
	Sign(ctx context.Context, c signing.Charge) (string, error)
}

// ChargeSigner signs every PedidoCreado over its charge (lambdas/signing:
// id_evento, pedido_id, total_centimos, moneda, token_tarjeta) and leaves
// other events unsigned. It decodes those members of the payload only.
type ChargeSigner struct{ Keys ChargeKeys }

// Sign implements Signer.
func (s ChargeSigner) Sign(ctx context.Context, eventType, eventID, payload string) (string, error) {
	if eventType != eventsapi.TypePedidoCreado {
		return "", nil
	}
	var p struct {
		PedidoID      string `json:"pedido_id"`
		TotalCentimos int64  `json:"total_centimos"`
		Moneda        string `json:"moneda"`
		TokenTarjeta  string `json:"token_tarjeta"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil || p.PedidoID == "" || p.TotalCentimos <= 0 || p.Moneda == "" || p.TokenTarjeta == "" {
		return "", fmt.Errorf("%w: %s %s lacks pedido_id, a positive total_centimos, moneda or token_tarjeta (%v)", ErrUnsignable, eventType, eventID, err)
	}
	return s.Keys.Sign(ctx, signing.Charge{EventID: eventID, OrderID: p.PedidoID, AmountCents: p.TotalCentimos, Currency: p.Moneda, CardToken: p.TokenTarjeta})
}
